/**
 * Helpers for claim-before-charge tests: the sandbox processor's memory (what it was asked, how
 * often), chunk deliveries at a chosen time, and faults injected into the real D1 with triggers
 * (the ledger shards' own: test/helpers/ledger.ts).
 */
import { env } from 'cloudflare:workers';
import { createExecutionContext, createMessageBatch, getQueueResult, type QueueResult } from 'cloudflare:test';
import type { Clock } from '../../src/lib/time';
import { consumeChunks } from '../../src/queues/chunk-consumer';
import { utcDay } from '../../src/services/transactions/ledger';
import { defaultSandboxProcessorId } from '../../src/services/transactions/processors/registry';
import { sandboxAcquirerName } from '../../src/services/transactions/processors/sandbox';
import type { SandboxLedgerRow } from '../../src/storage/sandbox-calls';

/**
 * What the merchant's default sandbox processor recorded, keyed by idempotency key: its acquirer
 * objects of the days around today (tests move their clocks by hours, never by days beyond these).
 */
export async function ledger(merchantId: string, keyPrefix = '', around: Date = new Date()): Promise<Map<string, SandboxLedgerRow>> {
  const rows: SandboxLedgerRow[] = [];
  for (let offset = -2; offset <= 3; offset++) {
    rows.push(...(await ledgerOfDay(merchantId, utcDay(new Date(around.getTime() + offset * 86_400_000)))));
  }
  const found = new Map<string, SandboxLedgerRow>();
  for (const row of rows.filter((r) => r.idempotencyKey.startsWith(keyPrefix))) {
    const seen = found.get(row.idempotencyKey);
    // A key charged again on another day (after its 24-hour window) is another charge: counted together.
    found.set(row.idempotencyKey, seen ? { ...seen, chargeCalls: seen.chargeCalls + row.chargeCalls, lookupCalls: seen.lookupCalls + row.lookupCalls } : row);
  }
  return found;
}

/** The auth code the processor answered for a key (its ledger keeps the answer as JSON). */
export function ledgerAuthCode(row: SandboxLedgerRow | undefined): string | null {
  if (!row) throw new Error('no ledger row');
  return (JSON.parse(row.result) as { authCode: string | null }).authCode;
}

/** A clock fixed at `offsetMs` from the real time of the call. */
export function clockAt(offsetMs: number): Clock {
  const at = new Date(Date.now() + offsetMs);
  return () => at;
}

let messageSeq = 0;
/** Delivers chunk messages to the chunk consumer as the queue would, with the consumer's clock given. */
export async function deliverChunksAt(clock: Clock, bodies: unknown[], attempts = 1): Promise<QueueResult> {
  const batch = createMessageBatch(
    'binbatch-chunks',
    bodies.map((body) => ({ id: `claim-msg-${++messageSeq}`, timestamp: new Date(), attempts, body })),
  );
  const ctx = createExecutionContext();
  await consumeChunks(batch, env, clock);
  return getQueueResult(batch, ctx);
}

let triggerSeq = 0;
/**
 * Makes D1 refuse a write, as a storage failure would, until the returned function is called:
 * `BEFORE UPDATE|INSERT ON table WHEN condition` aborts the statement (SQLite's RAISE).
 * `condition` is SQL over OLD/NEW rows, written by the test itself (no input from elsewhere).
 */
export async function failWrites(event: 'UPDATE' | 'INSERT', table: string, condition: string): Promise<() => Promise<void>> {
  const name = `test_fault_${++triggerSeq}`;
  await env.DB.prepare(
    `CREATE TRIGGER ${name} BEFORE ${event} ON ${table} WHEN ${condition} BEGIN SELECT RAISE(ABORT, 'injected storage fault'); END`,
  ).run();
  return async () => {
    await env.DB.prepare(`DROP TRIGGER IF EXISTS ${name}`).run();
  };
}

/** What the merchant's default sandbox processor recorded for claims of one UTC day. */
export async function ledgerOfDay(merchantId: string, day: string): Promise<SandboxLedgerRow[]> {
  return env.SANDBOX_ACQUIRER.getByName(sandboxAcquirerName(defaultSandboxProcessorId(merchantId), day)).list();
}
