/**
 * The sandbox processor's memory (durable-objects/sandbox-acquirer.ts): what it was asked, the way a
 * gateway keeps its transactions by order id. It stands for an outside system, so it lives in an
 * object of its own per processor and UTC day, not in the merchant's ledger. One row per call, not
 * per charge: a chunk's charges arrive in one call (coalesced), so the memory costs a batch one row
 * written per chunk. A lookup by key reads only the calls made in the claim's window. No card data:
 * the answer is codes and texts.
 */

export interface SandboxChargeEntry {
  idempotencyKey: string;
  type: string;
  /** Minor units. */
  amount: number;
  paymentType: 'card' | 'ach';
  /** The answer, as JSON. */
  result: string;
}

/** A call the acquirer could not record (its storage failed): answered instead of a rejection. */
export interface SandboxFailure {
  failed: string;
}

/** One key as the sandbox saw it: its first charge, and how often it was sent and looked up. */
export interface SandboxLedgerRow extends SandboxChargeEntry {
  chargeCalls: number;
  lookupCalls: number;
  createdAt: string;
}

// Keyed by time, so that a lookup reads only the calls of its claim's window (a range of the
// primary key, no index to write); `id` tells apart calls made in the same millisecond.
const SCHEMA = `CREATE TABLE IF NOT EXISTS calls (
  at TEXT NOT NULL,
  id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('charge', 'lookup')),
  entries TEXT NOT NULL,
  PRIMARY KEY (at, id)
) WITHOUT ROWID`;

export function hasCalls(sql: SqlStorage): boolean {
  return sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'calls'").toArray().length > 0;
}

export function createCallsTable(sql: SqlStorage): void {
  sql.exec(SCHEMA);
}

export function insertChargeCall(sql: SqlStorage, at: string, entries: readonly SandboxChargeEntry[]): void {
  sql.exec("INSERT INTO calls (at, id, kind, entries) VALUES (?, ?, 'charge', ?)", at, crypto.randomUUID(), JSON.stringify(entries));
}

export function insertLookupCall(sql: SqlStorage, at: string, keys: readonly string[]): void {
  sql.exec("INSERT INTO calls (at, id, kind, entries) VALUES (?, ?, 'lookup', ?)", at, crypto.randomUUID(), JSON.stringify(keys));
}

/** The first answer for each of `keys` among the charges made between `from` and `to` (ISO times). */
export function chargedBetween(sql: SqlStorage, keys: ReadonlySet<string>, from: string, to: string): Map<string, string> {
  const found = new Map<string, string>();
  if (keys.size === 0 || !hasCalls(sql)) return found;
  const rows = sql
    .exec<{ entries: string }>("SELECT entries FROM calls WHERE at >= ? AND at <= ? AND kind = 'charge' ORDER BY at", from, to)
    .toArray();
  for (const row of rows) {
    for (const entry of JSON.parse(row.entries) as SandboxChargeEntry[]) {
      if (keys.has(entry.idempotencyKey) && !found.has(entry.idempotencyKey)) found.set(entry.idempotencyKey, entry.result);
    }
  }
  return found;
}

/** Every key the processor was asked for, in the order first charged (tests and operators). */
export function listCalls(sql: SqlStorage): SandboxLedgerRow[] {
  if (!hasCalls(sql)) return [];
  const byKey = new Map<string, SandboxLedgerRow>();
  const rows = sql.exec<{ at: string; kind: string; entries: string }>('SELECT at, kind, entries FROM calls ORDER BY at').toArray();
  for (const row of rows) {
    if (row.kind === 'charge') {
      for (const entry of JSON.parse(row.entries) as SandboxChargeEntry[]) {
        const seen = byKey.get(entry.idempotencyKey);
        if (seen) seen.chargeCalls++;
        else byKey.set(entry.idempotencyKey, { ...entry, chargeCalls: 1, lookupCalls: 0, createdAt: row.at });
      }
    } else {
      for (const key of JSON.parse(row.entries) as string[]) {
        const seen = byKey.get(key);
        if (seen) seen.lookupCalls++;
      }
    }
  }
  return [...byKey.values()];
}
