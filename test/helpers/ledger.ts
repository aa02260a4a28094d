/**
 * Reading the ledger as tests need it: the records and claims of a shard (the objects' own SQLite,
 * read inside the object with runInDurableObject), the names of a merchant's shards, every table of
 * an object as text (for leak scans), and faults injected into a shard's SQLite with triggers.
 */
import { env } from 'cloudflare:workers';
import { runInDurableObject } from 'cloudflare:test';
import { vi } from 'vitest';
import { ledgerShardName, utcDay } from '../../src/services/transactions/ledger';
import { gunzipText } from '../../src/lib/gzip';
import { createChargeTable } from '../../src/storage/sandbox-calls';
import { createShardTables, unpackRecord, type PackedRecord, type StoredTransaction } from '../../src/storage/ledger-shard';
import { decodeStored } from '../../src/storage/ledger-shard/record-codec';
import type { OperationRequest, OperationResult } from '../../src/storage/ledger-shard';
import { locateTransaction } from '../../src/services/transactions/engine';
import { sha256Hex } from '../../src/lib/crypto';

export function batchShardName(merchantId: string, batchId: string): string {
  return ledgerShardName({ kind: 'batch', merchantId, batchId });
}

export function apiShardName(merchantId: string, day: string = utcDay(new Date())): string {
  return ledgerShardName({ kind: 'api', merchantId, day });
}

function shard(name: string) {
  return env.LEDGER_SHARD.getByName(name);
}

function tableExists(sql: SqlStorage, table: string): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", table).toArray().length > 0;
}

/** Every completed record and open claim of a shard (claims have status `processing`), by idempotency key. */
export async function shardEntries(name: string): Promise<Map<string, StoredTransaction>> {
  const entries = new Map<string, StoredTransaction>();
  for (const stored of await shardEntryList(name)) entries.set(String(stored.record.idempotency_key), stored);
  return entries;
}

/** The same, as stored: a key recorded twice would appear twice. */
export async function shardEntryList(name: string): Promise<StoredTransaction[]> {
  const merchantId = name.split('/')[0] ?? '';
  const stored = await runInDurableObject(shard(name), (_instance, state) => {
    const sql = state.storage.sql;
    if (!tableExists(sql, 'pages')) return { pages: [], claims: [] };
    return {
      pages: sql.exec<{ format: string; records: string | ArrayBuffer }>('SELECT format, records FROM pages ORDER BY page, seq').toArray(),
      claims: sql.exec<{ entries: string }>('SELECT entries FROM claims ORDER BY id').toArray(),
    };
  });
  const texts = await Promise.all(stored.pages.map((p) => (p.format === 'gzip' ? gunzipText(p.records as ArrayBuffer) : String(p.records))));
  const packed = [...texts, ...stored.claims.map((c) => c.entries)].flatMap((json) => JSON.parse(json) as PackedRecord[]);
  return packed.map((record) => unpackRecord(merchantId, record));
}

/** How many rows each table of a shard holds (pages, claims, meta). */
export async function shardRowCounts(name: string): Promise<Record<string, number>> {
  return runInDurableObject(shard(name), (_instance, state) => {
    const counts: Record<string, number> = {};
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
      .toArray();
    for (const { name: table } of tables) counts[table] = state.storage.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM "${table}"`).one().n;
    return counts;
  });
}

/** Every row of every table of a Durable Object's SQLite, as JSON text, with where it came from. */
/** A value as text to scan: a BLOB written by the ledger shard's codec (record-codec.ts) decoded, anything else as it is. */
export function storedText(value: unknown): unknown {
  if (!(value instanceof ArrayBuffer) || new Uint8Array(value)[0] !== 1) return value;
  try {
    return decodeStored(value);
  } catch {
    return value;
  }
}

export async function objectRowsAsText(stub: DurableObjectStub): Promise<{ where: string; text: string }[]> {
  return runInDurableObject(stub, (_instance, state) => {
    const rows: { where: string; text: string }[] = [];
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'")
      .toArray();
    for (const { name: table } of tables) {
      state.storage.sql
        .exec(`SELECT * FROM "${table}"`)
        .toArray()
        // A compressed value (a state's record, an operation's answer) read as the JSON it holds.
        .forEach((row, i) => rows.push({ where: `${table} row ${i}`, text: JSON.stringify(Object.fromEntries(Object.entries(row).map(([column, value]) => [column, storedText(value)]))) }));
    }
    return rows;
  });
}

let triggerSeq = 0;
/**
 * Makes a Durable Object's SQLite refuse a write, as a storage failure would, until the returned
 * function is called: `BEFORE event ON table WHEN condition` aborts the statement (SQLite's RAISE).
 * `create` makes the tables first when the object is new (the object's own statements).
 * `condition` is SQL written by the test itself.
 */
async function failObjectWrites(
  stub: DurableObjectStub,
  event: 'INSERT' | 'UPDATE' | 'DELETE',
  table: string,
  create: (sql: SqlStorage) => void,
  condition: string,
): Promise<() => Promise<void>> {
  const trigger = `test_fault_${++triggerSeq}`;
  await runInDurableObject(stub, (_instance, state) => {
    const sql = state.storage.sql;
    if (!tableExists(sql, table)) create(sql);
    sql.exec(`CREATE TRIGGER ${trigger} BEFORE ${event} ON ${table} WHEN ${condition} BEGIN SELECT RAISE(ABORT, 'injected storage fault'); END`);
  });
  return async () => {
    await runInDurableObject(stub, (_instance, state) => {
      state.storage.sql.exec(`DROP TRIGGER IF EXISTS ${trigger}`);
    });
  };
}

/** A fault in a ledger shard's `pages` or `claims` table (see failObjectWrites). */
export function failShardWrites(name: string, event: 'INSERT' | 'UPDATE' | 'DELETE', table: 'pages' | 'claims', condition = '1'): Promise<() => Promise<void>> {
  return failObjectWrites(
    shard(name),
    event,
    table,
    createShardTables,
    condition,
  );
}

/**
 * A fault in a sandbox acquirer's `charges` table: its charges under `key` are refused (a key with
 * no trailing digits is a block of its own: its rows are found by the block).
 */
export function failSandboxCharges(stub: DurableObjectStub, key: string): Promise<() => Promise<void>> {
  if (/[0-9]$/.test(key)) throw new Error('failSandboxCharges takes a key without trailing digits');
  return failObjectWrites(stub, 'INSERT', 'charges', createChargeTable, `NEW.kind = 'charge' AND NEW.block = '${key}'`);
}

/**
 * Makes the next call of a ledger shard method (from any stub) reject, as a failed RPC would; the
 * calls after it go through. Answers the spy on `getByName` (restore it) and whether the fault fired.
 */
export function failLedgerCallOnce(method: 'find' | 'claim' | 'complete' | 'release'): { spy: { mockRestore: () => void }; fired: () => boolean } {
  const namespace = env.LEDGER_SHARD;
  const getByName = namespace.getByName.bind(namespace);
  let fired = false;
  const spy = vi.spyOn(namespace, 'getByName').mockImplementation((name: string) => {
    const stub = getByName(name);
    return new Proxy(stub, {
      get(target, property) {
        if (property === method && !fired) {
          return async () => {
            fired = true;
            throw new Error('ledger shard: storage caused object to be reset');
          };
        }
        // An RPC stub answers every property as a remote method: call through it, never `bind` it.
        if (typeof property === 'string' && ['find', 'claim', 'complete', 'release', 'openClaims', 'runRetention'].includes(property)) {
          return (...args: unknown[]) => (target as unknown as Record<string, (...a: unknown[]) => unknown>)[property]?.(...args);
        }
        return Reflect.get(target, property);
      },
    });
  });
  return { spy, fired: () => fired };
}

/**
 * Every transaction of a merchant a test made today: its API day shards (today's and yesterday's)
 * and the shards of each of its batches (listed in D1).
 */
export async function merchantEntries(merchantId: string): Promise<StoredTransaction[]> {
  const { results } = await env.DB.prepare('SELECT id FROM batches WHERE merchant_id = ?1').bind(merchantId).all<{ id: string }>();
  const names = [
    apiShardName(merchantId, utcDay(new Date(Date.now() - 86_400_000))),
    apiShardName(merchantId),
    ...results.map((row) => batchShardName(merchantId, row.id)),
  ];
  return (await Promise.all(names.map(shardEntryList))).flat();
}

/** A processor's approval of a capture of 10.00, as a test answers a claimed operation with. */
export const APPROVED_OPERATION: OperationResult = {
  response: 'approved',
  responseCode: 100,
  amountAuthorized: 1000,
  authCode: 'A1',
  processorResponseCode: '00',
  processorResponseText: 'Approved',
  avsResponseCode: null,
  cvvResponseCode: null,
};

/**
 * A capture of `transactionId` claimed in its ledger shard under `{id}:capture:{clientKey}` (the
 * whole amount), as a batch chunk's claim call makes it; the shard, the request and its time, for
 * the test to answer it.
 */
export async function claimedCapture(merchantId: string, transactionId: string, clientKey: string) {
  const now = new Date();
  const located = await locateTransaction(env, merchantId, transactionId, now);
  if (!located.ok) throw new Error(`transaction ${transactionId} not found`);
  const iso = now.toISOString();
  const request: OperationRequest = {
    transactionId,
    query: located.query,
    kind: 'capture',
    key: `${transactionId}:capture:${clientKey}`,
    requestHash: await sha256Hex(JSON.stringify({ amount: null })),
    amount: null,
    now: iso,
    expiredBefore: '2000-01-01T00:00:00.000Z',
    staleBefore: '2000-01-01T00:00:00.000Z',
  };
  const begun = await located.shard.stub.beginOperations(located.shard.identity, [request]);
  if (!Array.isArray(begun) || begun[0]?.outcome !== 'claimed') throw new Error(`the capture was not claimed: ${JSON.stringify(begun)}`);
  return { stub: located.shard.stub, identity: located.shard.identity, request, iso };
}
