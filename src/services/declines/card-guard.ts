/**
 * The card networks' rules on trying a declined card again, enforced for every door (an API sale, a
 * batch row, a subscription's billing) before the processor is asked:
 *
 * - never again, at this merchant, after a decline the networks forbid retrying (Visa category 1,
 *   Mastercard's "do not try again": services/declines/network-rules.ts, isNeverRetry);
 * - Visa: at most 15 reattempts of a declined card in 30 days, 20 from 19 May 2025;
 * - Mastercard: at most 10 attempts in 24 hours and 35 in 30 days on a declined card.
 *
 * Counted per card at the merchant (stricter than Visa's card + amount + currency), from the card's
 * declined attempts of the last 30 days. Only the issuer's declines count (`countsAsCardDecline`):
 * the networks' rules are about asking an issuer again for a card it refused; a decline by the
 * gateway's own rules (FluidPay's 3xx: gateway rules, a duplicate) or a processor error (4xx) never
 * reached the issuer, and counting them would block a good card for a merchant's own resends. Cards are kept by a keyed hash (HMAC with a key derived from
 * CARD_DATA_KEY), never the number, in CARD_DECLINE_BUCKETS objects per merchant chosen by the hash
 * (durable-objects/card-declines.ts): one engine call asks each bucket its cards touch once, a 500-row
 * chunk at most 32 objects, under the chunk's subrequest budget.
 */
import type { Env } from '../../env';
import { detectBrand } from '../../lib/card-brand';
import { derivedHmacKey } from '../../lib/derived-keys';
import { toHex } from '../../lib/crypto';
import type { RowError, TransactionRecord } from '../../schemas/transaction-columns';
import { isNeverRetry } from './network-rules';

export const CARD_DECLINE_BUCKETS = 32;
const VISA_LIMIT_CHANGE = Date.UTC(2025, 4, 19);
const ATTEMPTS = new Set(['sale', 'authorize', 'verification']);

type Env4Guard = Pick<Env, 'CARD_DATA_KEY' | 'CARD_DECLINES'>;

async function cardHash(env: Env4Guard, number: string): Promise<string> {
  const key = await derivedHmacKey(env.CARD_DATA_KEY, 'card-declines');
  // 128 bits of the HMAC: no two cards of a merchant's 30 days meet by chance (about 3 × 10^7 cards,
  // a collision near 10^-24), at half the bytes a row and index entry of the full 256.
  return toHex(new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(number)))).slice(0, 32);
}

/**
 * Whether an answer counts toward the networks' limits: an issuer's decline, FluidPay's 2xx
 * response codes (docs/recurring.md, "Which declines count"). Not a gateway decline (300 gateway
 * rules, 301 duplicate, 310 rule engine), not an error (4xx), not an approval.
 */
export function countsAsCardDecline(record: Pick<TransactionRecord, 'response' | 'response_code'>): boolean {
  const code = Number(record.response_code);
  return record.response === 'declined' && code >= 200 && code < 300;
}

function bucketOf(hash: string): number {
  return parseInt(hash.slice(0, 2), 16) % CARD_DECLINE_BUCKETS;
}

function stub(env: Env4Guard, merchantId: string, bucket: number) {
  return env.CARD_DECLINES.getByName(`${merchantId}:${bucket}`);
}

/**
 * What the guard reads of a processor's charge (the engine's `Charge`, by shape: the guard sits
 * below the transaction core, which calls it).
 */
export interface GuardedCharge {
  type: string;
  payment: { kind: 'card'; number: string } | { kind: 'ach' | 'token' | string };
}

/** The attempts this applies to: card sales, authorizations and verifications. */
function cardOf(charge: GuardedCharge): string | null {
  return 'number' in charge.payment && charge.payment.kind === 'card' && ATTEMPTS.has(charge.type) ? charge.payment.number : null;
}

/** Groups items by bucket of their card's hash. */
async function byBucket<T>(env: Env4Guard, items: T[], card: (item: T) => string | null): Promise<Map<number, { item: T; hash: string }[]>> {
  const groups = new Map<number, { item: T; hash: string }[]>();
  for (const item of items) {
    const number = card(item);
    if (number === null) continue;
    const hash = await cardHash(env, number);
    const group = groups.get(bucketOf(hash)) ?? [];
    group.push({ item, hash });
    groups.set(bucketOf(hash), group);
  }
  return groups;
}

/** The rule an attempt on this card would break now, or null. */
export function brokenRule(brand: string | undefined, counts: { never: boolean; last24h: number; last30d: number }, now: number): string | null {
  if (counts.never) return 'refused before the processor: this card had a decline the networks forbid retrying (Visa category 1, Mastercard "do not try again") at this merchant in the last 30 days';
  if (brand === 'visa') {
    const limit = now >= VISA_LIMIT_CHANGE ? 20 : 15;
    // The first decline and `limit` declined reattempts: the next would be one reattempt too many.
    if (counts.last30d > limit) return `refused before the processor: Visa allows at most ${limit} reattempts of a declined card in 30 days`;
  }
  if (brand === 'mastercard') {
    if (counts.last24h >= 10) return 'refused before the processor: Mastercard allows at most 10 attempts on a declined card in 24 hours';
    if (counts.last30d >= 35) return 'refused before the processor: Mastercard allows at most 35 attempts on a declined card in 30 days';
  }
  return null;
}

/** For each charge an attempt may not be made on now, its error (by the charge's position). */
export async function cardRefusals(env: Env4Guard, merchantId: string, charges: GuardedCharge[], now: Date): Promise<Map<number, RowError[]>> {
  const refusals = new Map<number, RowError[]>();
  const indexed = charges.map((charge, index) => ({ charge, index }));
  const groups = await byBucket(env, indexed, ({ charge }) => cardOf(charge));
  await Promise.all(
    [...groups].map(async ([bucket, entries]) => {
      const counts = new Map((await stub(env, merchantId, bucket).counts([...new Set(entries.map((e) => e.hash))], now.getTime())).map((c) => [c.card, c]));
      for (const { item, hash } of entries) {
        const found = counts.get(hash);
        if (!found) continue;
        const rule = brokenRule(detectBrand(cardOf(item.charge) ?? ''), found, now.getTime());
        if (rule) refusals.set(item.index, [{ field: 'card', msg: rule }]);
      }
    }),
  );
  return refusals;
}

/** Remembers the issuer's declines among these answers (30 days). */
export async function recordCardDeclines(env: Env4Guard, merchantId: string, answered: { charge: GuardedCharge; record: TransactionRecord | undefined }[], now: Date): Promise<void> {
  const declined = answered.filter(({ charge, record }) => record !== undefined && countsAsCardDecline(record) && cardOf(charge) !== null);
  if (declined.length === 0) return;
  const groups = await byBucket(env, declined, ({ charge }) => cardOf(charge));
  await Promise.all(
    [...groups].map(([bucket, entries]) =>
      stub(env, merchantId, bucket).record(
        entries.map(({ item, hash }) => ({ card: hash, never: item.record ? isNeverRetry(item.record) : false })),
        now.getTime(),
      ),
    ),
  );
}
