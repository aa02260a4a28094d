/**
 * Money totals as exact integers (docs/transactions.md, "Exact totals"). SQLite sums integers
 * exactly in 64 bits; a JavaScript number is exact only up to Number.MAX_SAFE_INTEGER (2^53 − 1), so a
 * total read as a number could come back rounded. Totals are read as decimal text and answered as a
 * JSON number while they are exact as one, and as a decimal string past 2^53 − 1 (as Google's
 * proto3 JSON mapping writes 64-bit integers): never a rounded number.
 */

/** A total: a number while exact as one, else its decimal digits. */
export type ExactInteger = number | string;

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** The total whose decimal digits are `digits` (as SQLite writes an INTEGER as TEXT). */
export function exactInteger(digits: string | number | bigint): ExactInteger {
  const value = BigInt(digits);
  return value <= SAFE && value >= -SAFE ? Number(value) : value.toString();
}

/** a − b, exactly. */
export function exactDifference(a: ExactInteger, b: ExactInteger): ExactInteger {
  return exactInteger(BigInt(a) - BigInt(b));
}
