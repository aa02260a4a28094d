/**
 * The batch console's credential: the session cookie (see services/console-sessions.ts), and the
 * CSRF guard every state-changing console request passes. The cookie is SameSite=Strict, so no
 * other site's page can make the browser send it; the header token and the Origin check are the
 * second and third locks (SameSite does not cover a sibling subdomain, nor old browsers).
 */
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../env';
import { AppError } from '../errors';
import { systemClock } from '../lib/time';
import { CONSOLE_SESSION_TTL_SECONDS, readConsoleSession, type ConsoleSession } from '../services/console-sessions';

export type ConsoleEnv = AppEnv & { Variables: { consoleSession: ConsoleSession } };

export const CONSOLE_COOKIE = 'binbatch_console';
export const CSRF_HEADER = 'X-CSRF-Token';

/** Plain http is accepted for local development only (wrangler dev on localhost or 127.0.0.1). */
function isLocalHttp(url: URL): boolean {
  return url.protocol === 'http:' && (url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]');
}

export function setSessionCookie(c: Context<AppEnv>, sessionId: string): void {
  setCookie(c, CONSOLE_COOKIE, sessionId, {
    path: '/',
    httpOnly: true,
    sameSite: 'Strict',
    secure: !isLocalHttp(new URL(c.req.url)),
    maxAge: CONSOLE_SESSION_TTL_SECONDS,
  });
}

export function clearSessionCookie(c: Context<AppEnv>): void {
  deleteCookie(c, CONSOLE_COOKIE, { path: '/', httpOnly: true, sameSite: 'Strict', secure: !isLocalHttp(new URL(c.req.url)) });
}

/** The session behind the request's cookie: undefined without a cookie, null when it no longer works. */
export async function sessionFromCookie<E extends AppEnv>(c: Context<E>): Promise<ConsoleSession | null | undefined> {
  const sessionId = getCookie(c, CONSOLE_COOKIE);
  if (sessionId === undefined) return undefined;
  return readConsoleSession(c.env, sessionId, systemClock);
}

/** A request from another origin is refused; a request without Origin (same-origin GET) is not. */
export function assertSameOrigin<E extends AppEnv>(c: Context<E>): void {
  const origin = c.req.header('Origin');
  if (origin !== undefined && origin !== new URL(c.req.url).origin) {
    throw new AppError('forbidden', `the console accepts requests from its own origin only, not from ${origin.slice(0, 100)}`);
  }
}

export const requireConsoleSession = createMiddleware<ConsoleEnv>(async (c, next) => {
  const session = await sessionFromCookie(c);
  if (!session) throw new AppError('unauthorized', 'not signed in to the console, or the session ended: sign in with your secret API key');
  c.set('caller', session.caller);
  c.set('consoleSession', session);
  await next();
});

/** For POST, PUT, PATCH and DELETE: same origin, and the session's CSRF token in X-CSRF-Token. */
export const requireConsoleCsrf = createMiddleware<ConsoleEnv>(async (c, next) => {
  if (c.req.method === 'GET' || c.req.method === 'HEAD') return next();
  assertSameOrigin(c);
  if (!(await c.get('consoleSession').csrfMatches(c.req.header(CSRF_HEADER)))) {
    throw new AppError('forbidden', `missing or wrong ${CSRF_HEADER} header: send the csrf_token the console session answered`);
  }
  await next();
});
