/**
 * Temp tokens: the output of the hosted card-tokenization component. A token stands for one card
 * (number, expiration, optional CVC) for 15 minutes, for the merchant whose key created it.
 * Reading a token does not consume it: a BIN lookup before the sale must leave it usable.
 */
import type { Env } from '../env';
import { open, seal } from '../lib/card-crypto';
import { randomSecret } from '../lib/crypto';
import { formatExpiry, parseExpiry } from '../lib/expiry';
import { isoTimestamp } from '../lib/time';
import { TEMP_TOKEN_PATTERN } from '../schemas/tokenizer';
import type { TempToken } from '../schemas/tokenizer-response';
import { getTempToken, putTempToken } from '../storage/temp-tokens';

export const TEMP_TOKEN_TTL_SECONDS = 15 * 60;

export interface TokenCard {
  number: string;
  expiration: string;
  cvc?: string;
}

/** What is sealed into the KV value; expires_at is authenticated with the card. */
interface SealedToken {
  card: TokenCard;
  expires_at: string;
}

export async function createTempToken(
  env: Env,
  merchantId: string,
  card: TokenCard,
  now: Date,
): Promise<TempToken> {
  const token = 'tok_' + randomSecret(24);
  const expiry = parseExpiry(card.expiration);
  const expiresAt = isoTimestamp(new Date(now.getTime() + TEMP_TOKEN_TTL_SECONDS * 1000));
  const payload: SealedToken = {
    card: { ...card, expiration: expiry ? formatExpiry(expiry) : card.expiration },
    expires_at: expiresAt,
  };
  // Associated data = merchant id: another merchant's read fails to decrypt, like an unknown token.
  const sealed = await seal(env.CARD_DATA_KEY, JSON.stringify(payload), merchantId);
  await putTempToken(env.TOKENS, token, sealed, TEMP_TOKEN_TTL_SECONDS);
  return { temp_token: token, expires_at: expiresAt };
}

export async function readTempToken(
  env: Env,
  merchantId: string,
  token: string,
  now: Date,
): Promise<{ ok: true; card: TokenCard } | { ok: false; reason: 'unknown_or_expired' }> {
  const unknown = { ok: false, reason: 'unknown_or_expired' } as const;
  if (!TEMP_TOKEN_PATTERN.test(token)) return unknown;
  const sealed = await getTempToken(env.TOKENS, token);
  if (sealed === null) return unknown;
  const plaintext = await open(env.CARD_DATA_KEY, sealed, merchantId);
  if (plaintext === null) return unknown;
  const payload = JSON.parse(plaintext) as SealedToken;
  // KV expiry is lazy and eventually consistent; the sealed expires_at is the authority.
  if (Date.parse(payload.expires_at) <= now.getTime()) return unknown;
  return { ok: true, card: payload.card };
}
