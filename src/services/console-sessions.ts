/**
 * Sessions of the batch console (GET /console): a secret API key is exchanged once for a random
 * session id (the HttpOnly cookie) and a CSRF token (kept in the page's memory, sent in a header
 * on every state-changing request). The key itself is never stored: only its hash, so that a
 * revoked key ends its sessions at the next request.
 */
import type { Caller, Env } from '../env';
import { randomSecret, secretsEqual, sha256Hex } from '../lib/crypto';
import { isoTimestamp, type Clock } from '../lib/time';
import { deleteConsoleSession, getConsoleSession, putConsoleSession } from '../storage/console-sessions';
import { authenticateKeyHash } from './merchants';

/** A session lasts this long from sign-in (no sliding renewal: a forgotten tab ends by itself). */
export const CONSOLE_SESSION_TTL_SECONDS = 2 * 60 * 60;

export interface OpenedConsoleSession {
  sessionId: string;
  csrfToken: string;
  expiresAt: string;
  caller: Caller;
}

export interface ConsoleSession {
  caller: Caller;
  expiresAt: string;
  csrfToken: string;
  /** Constant-time check of the X-CSRF-Token header against this session's token. */
  csrfMatches(token: string | undefined): Promise<boolean>;
}

export type SignInOutcome = { ok: true; session: OpenedConsoleSession } | { ok: false; reason: 'invalid_key' | 'not_secret' };

export async function openConsoleSession(env: Env, rawKey: string, clock: Clock): Promise<SignInOutcome> {
  const keyHash = await sha256Hex(rawKey);
  const caller = await authenticateKeyHash(env, keyHash);
  if (caller === null) return { ok: false, reason: 'invalid_key' };
  // The console uploads and downloads card files: only what the secret key may do.
  if (caller.keyType !== 'secret') return { ok: false, reason: 'not_secret' };
  const sessionId = randomSecret(32);
  const csrfToken = randomSecret(32);
  const expiresAt = isoTimestamp(new Date(clock().getTime() + CONSOLE_SESSION_TTL_SECONDS * 1000));
  await putConsoleSession(
    env.TOKENS,
    await sha256Hex(sessionId),
    { keyHash, csrfToken, expiresAt },
    CONSOLE_SESSION_TTL_SECONDS,
  );
  return { ok: true, session: { sessionId, csrfToken, expiresAt, caller } };
}

/** The live session behind a cookie value, or null (unknown, expired, signed out, key revoked). */
export async function readConsoleSession(env: Env, sessionId: string, clock: Clock): Promise<ConsoleSession | null> {
  if (sessionId.length === 0 || sessionId.length > 128) return null;
  const stored = await getConsoleSession(env.TOKENS, await sha256Hex(sessionId));
  // KV's TTL is enforced lazily (up to a minute late): the stored expiry is the one that counts.
  if (stored === null || Date.parse(stored.expiresAt) <= clock().getTime()) return null;
  const caller = await authenticateKeyHash(env, stored.keyHash);
  if (caller === null || caller.keyType !== 'secret') return null;
  return {
    caller,
    expiresAt: stored.expiresAt,
    csrfToken: stored.csrfToken,
    csrfMatches: async (token) => token !== undefined && token.length <= 128 && secretsEqual(token, stored.csrfToken),
  };
}

export async function closeConsoleSession(env: Env, sessionId: string): Promise<void> {
  await deleteConsoleSession(env.TOKENS, await sha256Hex(sessionId));
}
