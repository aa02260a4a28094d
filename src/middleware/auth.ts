/** Authentication: merchant API keys for /api/*, the operators' token for /admin/*. */
import { createMiddleware } from 'hono/factory';
import type { AppEnv, KeyType } from '../env';
import { AppError } from '../errors';
import { secretsEqual } from '../lib/crypto';
import { authenticateKey } from '../services/merchants';

/** The longest credential that is looked up: a longer one is sent, but cannot be a key. */
export const MAX_CREDENTIAL_LENGTH = 256;

/**
 * The credential in Authorization (the key on its own, or after "Bearer "), or null when none was
 * sent. An oversized one is returned too: it was sent, so it is refused as invalid, not missing.
 */
export function credentialFrom(header: string | undefined): string | null {
  if (!header) return null;
  const value = header.trim().replace(/^Bearer\s+/i, '');
  return value.length > 0 ? value : null;
}

/** Whether a credential can be a key at all (oversized ones are never looked up). */
export function isLookupable(credential: string): boolean {
  return credential.length <= MAX_CREDENTIAL_LENGTH;
}

/**
 * Requires an API key of one of `types`. Missing, unknown and revoked keys are all 401;
 * a valid key of the wrong type is 401 too (the contract: "the public key must not be used").
 */
export function requireKey(...types: KeyType[]) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const rawKey = credentialFrom(c.req.header('Authorization'));
    if (rawKey === null) throw new AppError('unauthorized', 'missing API key in the Authorization header');
    const caller = isLookupable(rawKey) ? await authenticateKey(c.env, rawKey) : null;
    if (caller === null) throw new AppError('unauthorized', 'invalid or revoked API key');
    if (!types.includes(caller.keyType)) {
      throw new AppError('unauthorized', `this operation requires a ${types.join(' or ')} API key`);
    }
    c.set('caller', caller);
    await next();
  });
}

export const requireSecretKey = requireKey('secret');
export const requireAnyKey = requireKey('secret', 'public');

/** Requires the ADMIN_TOKEN secret in Authorization, compared in constant time. */
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const token = credentialFrom(c.req.header('Authorization'));
  const expected = c.env.ADMIN_TOKEN;
  if (!expected) throw new AppError('unauthorized', 'admin API disabled: ADMIN_TOKEN is not set');
  if (token === null || !isLookupable(token) || !(await secretsEqual(token, expected))) {
    throw new AppError('unauthorized', 'missing or invalid admin token');
  }
  await next();
});
