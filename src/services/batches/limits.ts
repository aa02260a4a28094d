/** The batch limits of wrangler.toml's [vars], as numbers (a missing or malformed var takes the default). */
import type { Env } from '../../env';

export interface BatchLimits {
  chunkRows: number;
  maxBytes: number;
  maxRows: number;
  retentionDays: number;
  /** Chunk messages of one batch in the queue or being processed at once (windowed dispatch). */
  chunksInFlight: number;
  /** Minutes without progress before the batch's stall watchdog acts (any positive number, not only whole ones). */
  stallMinutes: number;
}

/**
 * How long a batch may go without any progress before its watchdog gives up: until then it re-sends
 * the chunks not recorded each time it fires (every BATCH_STALL_MINUTES), however many times the
 * processes handling them die. A bound on time, not on attempts: six hours covers a long queue or
 * platform outage, and a batch still stuck then is failed with its rows' results kept.
 */
export const STALL_GIVE_UP_HOURS = 6;

function positiveInt(value: string | undefined, fallback: number): number {
  const number = Number(value);
  return Number.isInteger(number) && number > 0 ? number : fallback;
}

function positiveNumber(value: string | undefined, fallback: number): number {
  const number = Number(value);
  return Number.isFinite(number) && number > 0 ? number : fallback;
}

export function batchLimits(env: Env): BatchLimits {
  return {
    chunkRows: positiveInt(env.BATCH_CHUNK_ROWS, 500),
    maxBytes: positiveInt(env.BATCH_MAX_BYTES, 100 * 1024 * 1024),
    maxRows: positiveInt(env.BATCH_MAX_ROWS, 500_000),
    retentionDays: positiveInt(env.BATCH_RETENTION_DAYS, 10),
    chunksInFlight: positiveInt(env.BATCH_CHUNKS_IN_FLIGHT, 5),
    stallMinutes: positiveNumber(env.BATCH_STALL_MINUTES, 10),
  };
}

