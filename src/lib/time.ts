/** A clock, injected wherever behaviour depends on time so that tests can move it. */
export type Clock = () => Date;

export const systemClock: Clock = () => new Date();

/** ISO 8601 with milliseconds and a Z zone, the format of every timestamp the service answers. */
export function isoTimestamp(date: Date): string {
  return date.toISOString();
}
