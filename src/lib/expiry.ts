/** Card expiration dates: accepted as MM/YY, MMYY, MM/YYYY or MMYYYY; valid through the month's end. */

export interface Expiry {
  month: number; // 1-12
  year: number; // four digits
}

export function parseExpiry(value: string): Expiry | null {
  const match = /^(0[1-9]|1[0-2])\/?([0-9]{2}|[0-9]{4})$/.exec(value.trim());
  if (!match) return null;
  const month = Number(match[1]);
  const yearText = match[2] ?? '';
  const year = yearText.length === 2 ? 2000 + Number(yearText) : Number(yearText);
  return { month, year };
}

/** A card is good through the last day of its expiration month (UTC). */
export function isExpired(expiry: Expiry, now: Date): boolean {
  const year = now.getUTCFullYear();
  const month = now.getUTCMonth() + 1;
  return expiry.year < year || (expiry.year === year && expiry.month < month);
}

/** An expiration as text, checked against the clock: the one check every door makes. */
export function checkExpiration(value: string, now: Date): { ok: true; expiry: Expiry } | { ok: false; problem: 'malformed' | 'expired' } {
  const expiry = parseExpiry(value);
  if (expiry === null) return { ok: false, problem: 'malformed' };
  return isExpired(expiry, now) ? { ok: false, problem: 'expired' } : { ok: true, expiry };
}

/** The canonical form stored and shown: MM/YY. */
export function formatExpiry(expiry: Expiry): string {
  return `${String(expiry.month).padStart(2, '0')}/${String(expiry.year % 100).padStart(2, '0')}`;
}
