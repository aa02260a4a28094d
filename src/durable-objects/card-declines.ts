/**
 * The declines of a merchant's cards in one bucket (services/declines/card-guard.ts says which):
 * one row per declined card attempt, keyed by the card's keyed hash (never its number), kept 30
 * days. Spread over CARD_DECLINE_BUCKETS objects per merchant by the hash's first byte, so a
 * merchant's 10 million transactions a day put about 1/32 of its checks and declines on each
 * object; at a 5% decline rate one object holds some 470,000 rows of 30 days (about 30 MB of its
 * 10 GB), and rows past 30 days are deleted by the object's daily alarm, 5,000 a statement.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../env';

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

export class CardDeclines extends DurableObject<Env> {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec('CREATE TABLE IF NOT EXISTS declines (card TEXT NOT NULL, at INTEGER NOT NULL, never INTEGER NOT NULL)');
      ctx.storage.sql.exec('CREATE INDEX IF NOT EXISTS declines_card ON declines (card, at)');
      ctx.storage.sql.exec('CREATE INDEX IF NOT EXISTS declines_at ON declines (at)');
    });
  }

  /** The counts of each card (at most a chunk's 500 distinct cards a call). */
  counts(cards: string[], now: number): CardDeclineCounts[] {
    if (cards.length === 0) return [];
    const rows = this.ctx.storage.sql
      .exec<{ card: string; never: number; last24h: number; last30d: number }>(
        `SELECT card, MAX(never) AS never, SUM(at > ?) AS last24h, COUNT(*) AS last30d FROM declines
         WHERE card IN (SELECT value FROM json_each(?)) AND at > ? GROUP BY card`,
        now - DAY_MS,
        JSON.stringify(cards),
        now - DECLINE_MEMORY_MS,
      )
      .toArray();
    return rows.map((row) => ({ card: row.card, never: row.never === 1, last24h: Number(row.last24h), last30d: Number(row.last30d) }));
  }

  async record(declines: { card: string; never: boolean }[], now: number): Promise<void> {
    for (const decline of declines) this.ctx.storage.sql.exec('INSERT INTO declines (card, at, never) VALUES (?, ?, ?)', decline.card, now, decline.never ? 1 : 0);
    if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(now + DAY_MS);
  }

  override async alarm(): Promise<void> {
    const before = Date.now() - DECLINE_MEMORY_MS;
    this.ctx.storage.sql.exec('DELETE FROM declines WHERE rowid IN (SELECT rowid FROM declines WHERE at <= ? LIMIT ?)', before, SWEEP_ROWS);
    const left = this.ctx.storage.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM (SELECT 1 FROM declines LIMIT 1)').one().n;
    const more = this.ctx.storage.sql.exec<{ n: number }>('SELECT COUNT(*) AS n FROM (SELECT 1 FROM declines WHERE at <= ? LIMIT 1)', before).one().n;
    // Emptied: the object is forgotten. More past 30 days: go on at once. Otherwise, tomorrow.
    if (left === 0) await this.ctx.storage.deleteAll();
    else await this.ctx.storage.setAlarm(more > 0 ? Date.now() : Date.now() + DAY_MS);
  }
}
