/**
 * The declines of a merchant's cards in one bucket (services/declines/card-guard.ts says which):
 * one row per (card, UTC hour) with the card's declined attempts in that hour, keyed by the card's
 * keyed hash (never its number), kept 30 days. A row per hour rather than per attempt: a card tried
 * again and again (a brand without a network limit, a runaway client) adds a count, not a row, so
 * one card holds at most 24 × 30 = 720 rows, and the networks' windows (24 hours, 30 days) are read
 * from at most that many.
 *
 * Spread over CARD_DECLINE_BUCKETS objects per merchant by the hash's first byte. The bound, at the
 * design volume (10 million attempts a day, 10% declined, every decline a different card or hour:
 * one row each): 1 million rows a day, 30 million in 30 days, 937,500 per bucket; 96 bytes a row
 * measured in workerd with its index (test/integration/capacity.test.ts), 0.09 GB a bucket, far
 * under half of the 5 GB goal (docs/capacity.md). Rows past 30 days are deleted by the object's daily
 * alarm, SWEEP_ROWS a statement, going on at once while more are due.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
export const DECLINE_MEMORY_MS = 30 * DAY_MS;
/** Rows deleted per statement by the sweep: one statement stays far under the object's 30 s CPU per alarm. */
const SWEEP_ROWS = 5_000;

export interface CardDeclineCounts {
  card: string;
  /** A decline the networks forbid retrying, within 30 days. */
  never: boolean;
  last24h: number;
  last30d: number;
}

/**
 * The first hour a window ending at `now` counts. The hour that holds its start counts whole: a
 * count may include up to an hour of attempts older than the window, never leave one out, so the
 * guard is at most an hour stricter than the networks, and never looser.
 */
function firstHour(now: number, windowMs: number): number {
  return Math.floor((now - windowMs) / HOUR_MS);
}

/**
 * An object written by the version that kept a row per attempt (`declines`): folded into hours once
 * (at most 30 days of one bucket's declines), its full-length hashes cut to the length kept now.
 */
export function foldAttemptRows(sql: SqlStorage): void {
  if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'declines'").toArray().length === 0) return;
  sql.exec(
    `INSERT INTO card_hours (card, hour, attempts, never)
     SELECT substr(card, 1, 32), at / ${HOUR_MS}, COUNT(*), MAX(never) FROM declines GROUP BY 1, 2`,
  );
  sql.exec('DROP TABLE declines');
}

export class CardDeclines extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec(
        `CREATE TABLE IF NOT EXISTS card_hours (card TEXT NOT NULL, hour INTEGER NOT NULL, attempts INTEGER NOT NULL, never INTEGER NOT NULL,
         PRIMARY KEY (card, hour)) WITHOUT ROWID`,
      );
      sql.exec('CREATE INDEX IF NOT EXISTS card_hours_hour ON card_hours (hour)');
      foldAttemptRows(sql);
    });
  }

  /** The counts of each card (at most a chunk's 500 distinct cards a call). */
  counts(cards: string[], now: number): CardDeclineCounts[] {
    if (cards.length === 0) return [];
    const rows = this.ctx.storage.sql
      .exec<{ card: string; never: number; last24h: number; last30d: number }>(
        `SELECT card, MAX(never) AS never, SUM(CASE WHEN hour >= ? THEN attempts ELSE 0 END) AS last24h, SUM(attempts) AS last30d FROM card_hours
         WHERE card IN (SELECT value FROM json_each(?)) AND hour >= ? GROUP BY card`,
        firstHour(now, DAY_MS),
        JSON.stringify(cards),
        firstHour(now, DECLINE_MEMORY_MS),
      )
      .toArray();
    return rows.map((row) => ({ card: row.card, never: row.never === 1, last24h: Number(row.last24h), last30d: Number(row.last30d) }));
  }

  /** Counts these declined attempts in their cards' rows of the hour (one upsert each, at most a chunk's 500). */
  async record(declines: { card: string; never: boolean }[], now: number): Promise<void> {
    const hour = Math.floor(now / HOUR_MS);
    for (const decline of declines) {
      this.ctx.storage.sql.exec(
        `INSERT INTO card_hours (card, hour, attempts, never) VALUES (?, ?, 1, ?)
         ON CONFLICT (card, hour) DO UPDATE SET attempts = attempts + 1, never = MAX(never, excluded.never)`,
        decline.card,
        hour,
        decline.never ? 1 : 0,
      );
    }
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(now + DAY_MS);
  }

  override async alarm(): Promise<void> {
    const before = firstHour(Date.now(), DECLINE_MEMORY_MS);
    const sql = this.ctx.storage.sql;
    sql.exec('DELETE FROM card_hours WHERE (card, hour) IN (SELECT card, hour FROM card_hours WHERE hour < ? LIMIT ?)', before, SWEEP_ROWS);
    const left = sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM (SELECT 1 FROM card_hours LIMIT 1)').one().n;
    const more = sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM (SELECT 1 FROM card_hours WHERE hour < ? LIMIT 1)', before).one().n;
    // Emptied: the object is forgotten. More past 30 days: go on at once. Otherwise, tomorrow.
    if (left === 0) await this.ctx.storage.deleteAll();
    else await this.ctx.storage.setAlarm(more > 0 ? Date.now() : Date.now() + DAY_MS);
  }
}
