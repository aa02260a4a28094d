/**
 * Rows written or matched in bulk travel as JSON arrays in one bound parameter each, read back
 * with `json_each(?n)` in SQL: D1 allows 100 bound parameters per statement but up to 2 MB in
 * one value, so hundreds of rows fit in one statement.
 */

/** Stays well under D1's 2 MB limit for one bound value. */
export const MAX_PARAMETER_CHARS = 900_000;

/** Joins JSON-encoded rows into JSON arrays of at most about `maxChars` characters each. */
export function jsonArrayParameters(rows: readonly string[], maxChars = MAX_PARAMETER_CHARS): string[] {
  const parameters: string[] = [];
  let current: string[] = [];
  let size = 0;
  for (const json of rows) {
    if (current.length > 0 && size + json.length > maxChars) {
      parameters.push(`[${current.join(',')}]`);
      current = [];
      size = 0;
    }
    current.push(json);
    size += json.length + 1;
  }
  if (current.length > 0) parameters.push(`[${current.join(',')}]`);
  return parameters;
}
