/**
 * Receipts as tests need them: a merchant with receipt settings, addresses of their own, the shard's
 * sender run at a chosen time, and what the tests' Email Service accepted (vitest.config.ts routes
 * RECEIPT_EMAIL to test/helpers/mail-recorder.worker.mjs).
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { vi } from 'vitest';
import { PACE_SHARDS } from '../../src/services/receipts/budget';
import { emailTransport } from '../../src/services/receipts/outbox';
import { admin, type TestMerchant } from './api';

export const SETTINGS = {
  city: 'Chicago',
  region: 'IL',
  country: 'US',
  website: 'https://corner.example',
  support_email: 'help@corner.example',
  support_phone: '+1 312 555 0100',
  refund_policy: 'Returns within 30 days with the receipt.',
};

/** A merchant with receipt settings (the admin API's receipt_settings). */
export async function receiptMerchant(name: string, settings: Record<string, unknown> = SETTINGS): Promise<TestMerchant> {
  const response = await admin('POST', '/admin/merchants', { name, receipt_settings: settings });
  if (response.status !== 201) throw new Error(`merchant creation failed: ${response.status} ${await response.text()}`);
  const { data } = await response.json<{ data: { id: string; name: string; secret_key: string; public_key: string } }>();
  return { id: data.id, name: data.name, secretKey: data.secret_key, publicKey: data.public_key };
}

/** An address no other test uses (the recorder is shared): filter its messages by it. */
export function address(tag: string): string {
  return `${tag}-${crypto.randomUUID().slice(0, 8)}@customer.example`;
}

/** Runs a shard's receipt sender as its alarm would, at `at` (a Date or ms): answers what it did. */
export function runReceipts(shardName: string, at: Date | number = Date.now()) {
  return env.LEDGER_SHARD.getByName(shardName).runReceipts(new Date(at).toISOString());
}

/**
 * Runs a shard's sender until nothing is queued, each run at the time the one before asked for (the
 * service-wide pace of RECEIPT_SENDS_PER_MINUTE may put the rest off to the next minute).
 */
export async function sendAllReceipts(shardName: string, from: number = Date.now()): Promise<void> {
  let at = from;
  for (let run = 0; run < 50; run++) {
    const { nextRunAt } = await runReceipts(shardName, at);
    if (nextRunAt === null) return;
    at = Math.max(at, Date.parse(nextRunAt));
  }
  throw new Error(`receipts of ${shardName} still queued after 50 runs`);
}

export function mailTo(to: string): Promise<RecordedMail[]> {
  return env.MAIL_RECORDER.messages(to);
}

/** The outbox rows of a shard: how many, and how many receipts each holds. */
export async function outboxRows(shardName: string): Promise<number[]> {
  return runInDurableObject(env.LEDGER_SHARD.getByName(shardName), (_instance, state) =>
    state.storage.sql
      .exec<{ entries: string }>('SELECT entries FROM receipt_outbox ORDER BY id')
      .toArray()
      .map((row) => (JSON.parse(row.entries) as unknown[]).length),
  );
}

/** Recipient → the error codes its next sends answer, in order; and how long each send takes. */
const failures = new Map<string, string[]>();
let delayMs = 0;

/** One spy on the Email Service call, installed once (again if another file restored every mock). */
function instrumentSends(): void {
  if (vi.isMockFunction(emailTransport.send)) return;
  const send = emailTransport.send;
  vi.spyOn(emailTransport, 'send').mockImplementation(async (binding, message) => {
    if (delayMs > 0) await scheduler.wait(delayMs);
    const next = failures.get(message.to)?.shift();
    if (next === undefined) return send(binding, message);
    throw Object.assign(new Error(`${next}: the test asked for this failure`), { code: next });
  });
}

/**
 * The next `times` sends to `to` fail as the Email Service's binding fails: an Error with `code`
 * (https://developers.cloudflare.com/email-service/api/send-emails/workers-api/#error-codes).
 */
export function failNextSends(to: string, code: string, times = 1): void {
  failures.set(to, [...(failures.get(to) ?? []), ...Array.from({ length: times }, () => code)]);
  instrumentSends();
}

/** Every send takes `ms` (so that runs overlap) until the answered function is called. */
export function slowSends(ms: number): () => void {
  delayMs = ms;
  instrumentSends();
  return () => {
    delayMs = 0;
  };
}

/** Spends the whole service's pace for the minute of `at`: every ReceiptPace shard grants its share and more. */
export async function spendPace(at: Date | number, perShard = 1_000_000): Promise<void> {
  const now = new Date(at).toISOString();
  for (let i = 0; i < PACE_SHARDS; i++) await env.RECEIPT_PACE.getByName(`pace/${i}`).take(now, perShard, perShard);
}

/** Sets the merchant's receipt budgets through the admin API (null: the default); answers them. */
export async function setReceiptLimits(merchantId: string, limits: Record<string, number | null>): Promise<Record<string, number>> {
  const response = await admin('PATCH', `/admin/merchants/${merchantId}`, { receipt_limits: limits });
  if (response.status !== 200) throw new Error(`receipt_limits not set: ${response.status} ${await response.text()}`);
  return (await response.json<{ data: { receipt_limits: Record<string, number> } }>()).data.receipt_limits;
}
