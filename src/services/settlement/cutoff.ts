/** A merchant's settlement cutoff: the UTC time of day its day ends (docs/transactions.md, "Settlement"). */

const DAY_MS = 86_400_000;

/** The default cutoff: midnight UTC. */
export const DEFAULT_CUTOFF = '00:00';

/** The last cutoff at or before `now` (a cutoff is "HH:MM", UTC). */
export function lastCutoff(now: Date, cutoff: string): Date {
  const [hours, minutes] = cutoff.split(':').map(Number);
  const day = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const at = day + ((hours ?? 0) * 60 + (minutes ?? 0)) * 60_000;
  return new Date(at <= now.getTime() ? at : at - DAY_MS);
}

/** The day a settlement ending at `end` closes: the UTC day of the instant just before it. */
export function batchDateOf(end: Date): string {
  return new Date(end.getTime() - 1).toISOString().slice(0, 10);
}
