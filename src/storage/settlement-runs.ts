/**
 * The index and the runs of a merchant's settlement object (storage/settlement.ts has its tables):
 *
 *   shards   the index: every ledger shard that may hold money awaiting settlement (registered
 *            before the money is written there; removed when a run leaves none in it), with the
 *            last handoff piece recorded from it, whether the current run is done with it, and its
 *            failures (a failing shard waits until `retry_at`)
 *   runs     settlement runs: the current one (its end, its day, the batches it made or added to)
 *            and those finished in the last RUN_RETENTION_DAYS
 */
import type { ShardIdentity } from './ledger-shard';
import { hasSettlementTables } from './settlement';

/** Finished runs are kept this long (settle now answers its run's batches from them). */
const RUN_RETENTION_DAYS = 7;

/**
 * Indexes a shard under the shard's registration generation (a shard registers once per stretch of
 * unsettled money, not per write: durable-objects/ledger-shard/settlement.ts). A later generation replaces an
 * earlier one, so a removal meant for the earlier one (`removeShard`) leaves it alone.
 */
export function addShard(sql: SqlStorage, shard: ShardIdentity, generation: number, at: string): void {
  sql.exec(
    `INSERT INTO shards (name, identity, generation, registered_at) VALUES (?, ?, ?, ?)
     ON CONFLICT (name) DO UPDATE SET generation = MAX(generation, excluded.generation), registered_at = excluded.registered_at`,
    shard.name,
    JSON.stringify(shard),
    generation,
    at,
  );
}

/** Names of the indexed shards, `limit` at most (tests and operators). */
export function listShards(sql: SqlStorage, limit: number): string[] {
  if (!hasSettlementTables(sql)) return [];
  return sql.exec<{ name: string }>('SELECT name FROM shards ORDER BY name LIMIT ?', limit).toArray().map((row) => row.name);
}

export function hasShards(sql: SqlStorage): boolean {
  return hasSettlementTables(sql) && sql.exec('SELECT 1 FROM shards LIMIT 1').toArray().length > 0;
}

/** An indexed shard as a run asks it: its identity and the last handoff piece recorded from it. */
export interface IndexedShard {
  identity: ShardIdentity;
  ackedSeq: number;
}

/** Shards the current run has not finished with, whose wait after a failure (if any) is over, by name; `limit` at most. */
export function shardsToAsk(sql: SqlStorage, now: string, limit: number): IndexedShard[] {
  return sql
    .exec<{ identity: string; acked_seq: number }>('SELECT identity, acked_seq FROM shards WHERE run_done = 0 AND (retry_at IS NULL OR retry_at <= ?) ORDER BY name LIMIT ?', now, limit)
    .toArray()
    .map((row) => ({ identity: JSON.parse(row.identity) as ShardIdentity, ackedSeq: row.acked_seq }));
}

/** Whether the current run has shards left, and the earliest time a failing one may be asked again. */
export function runRemainder(sql: SqlStorage): { remaining: number; waiting: number; nextRetry: string | null } {
  const row = sql
    .exec<{ remaining: number; waiting: number; next_retry: string | null }>(
      'SELECT COUNT(*) AS remaining, COUNT(retry_at) AS waiting, MIN(retry_at) AS next_retry FROM shards WHERE run_done = 0',
    )
    .one();
  return { remaining: row.remaining, waiting: row.waiting, nextRetry: row.next_retry };
}

/** The run is done with a shard: it leaves the index when it holds nothing unsettled (unless it registered again since). */
export function finishShard(sql: SqlStorage, name: string, holdsUnsettled: boolean, generation: number): void {
  if (!holdsUnsettled) sql.exec('DELETE FROM shards WHERE name = ? AND generation <= ?', name, generation);
  sql.exec('UPDATE shards SET run_done = 1, failures = 0, retry_at = NULL, last_error = NULL WHERE name = ?', name);
}

/** A shard could not be asked now: it waits until `retryAt` (the rest of the run goes on). */
export function failShard(sql: SqlStorage, name: string, error: string, retryAt: (failures: number) => string): number {
  const failures = sql.exec<{ failures: number }>('UPDATE shards SET failures = failures + 1 WHERE name = ? RETURNING failures', name).toArray()[0]?.failures ?? 1;
  sql.exec('UPDATE shards SET retry_at = ?, last_error = ? WHERE name = ?', retryAt(failures), error.slice(0, 500), name);
  return failures;
}

/** A new run asks every shard again (a failing one still waits for its retry time). */
export function resetShardsForRun(sql: SqlStorage): void {
  sql.exec('UPDATE shards SET run_done = 0');
}

/** A settlement run: what it settles (captured before `endAt`, into `batchDate`) and what it made or added to. */
export interface SettlementRunRow {
  id: number;
  endAt: string;
  batchDate: string;
  settledAt: string;
  finishedAt: string | null;
  announced: boolean;
  touched: string[];
}

type RunSql = { id: number; end_at: string; batch_date: string; settled_at: string; finished_at: string | null; announced: number; touched: string };

function runFromSql(row: RunSql): SettlementRunRow {
  return { id: row.id, endAt: row.end_at, batchDate: row.batch_date, settledAt: row.settled_at, finishedAt: row.finished_at, announced: row.announced === 1, touched: JSON.parse(row.touched) as string[] };
}

/** The run in progress, if any. */
export function currentRun(sql: SqlStorage): SettlementRunRow | null {
  const row = sql.exec<RunSql>('SELECT * FROM runs WHERE finished_at IS NULL ORDER BY id LIMIT 1').toArray()[0];
  return row ? runFromSql(row) : null;
}

export function readRun(sql: SqlStorage, id: number): SettlementRunRow | null {
  const row = sql.exec<RunSql>('SELECT * FROM runs WHERE id = ?', id).toArray()[0];
  return row ? runFromSql(row) : null;
}

/** The run finished last, if any. */
export function lastFinishedRun(sql: SqlStorage): SettlementRunRow | null {
  if (!hasSettlementTables(sql)) return null;
  const row = sql.exec<RunSql>('SELECT * FROM runs WHERE finished_at IS NOT NULL ORDER BY id DESC LIMIT 1').toArray()[0];
  return row ? runFromSql(row) : null;
}

/** Finished runs not yet announced (their settlement.completed events failed to go out). */
export function unannouncedRuns(sql: SqlStorage): SettlementRunRow[] {
  return sql.exec<RunSql>('SELECT * FROM runs WHERE finished_at IS NOT NULL AND announced = 0 ORDER BY id LIMIT 10').toArray().map(runFromSql);
}

export function startRun(sql: SqlStorage, run: { endAt: string; batchDate: string; settledAt: string }, at: string): SettlementRunRow {
  resetShardsForRun(sql);
  // Finished runs older than a week go (settle now reads only the last one).
  sql.exec('DELETE FROM runs WHERE finished_at IS NOT NULL AND announced = 1 AND finished_at < ?', new Date(Date.parse(at) - RUN_RETENTION_DAYS * 86_400_000).toISOString());
  const row = sql
    .exec<RunSql>('INSERT INTO runs (end_at, batch_date, settled_at, started_at) VALUES (?, ?, ?, ?) RETURNING *', run.endAt, run.batchDate, run.settledAt, at)
    .one();
  return runFromSql(row);
}

export function finishRun(sql: SqlStorage, id: number, at: string): void {
  sql.exec('UPDATE runs SET finished_at = ? WHERE id = ?', at, id);
}

export function markAnnounced(sql: SqlStorage, id: number): void {
  sql.exec('UPDATE runs SET announced = 1 WHERE id = ?', id);
}
