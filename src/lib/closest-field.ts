/**
 * "Did you mean …?" for an unknown field: the known field a client most probably meant. A field
 * that differs only in case, `-`/`_` or spacing (`State`, `cc-number`) is the surest guess; else
 * the nearest by edit distance (a typo: `stat`, `cc_nmuber`), if it is near enough to be a guess
 * rather than noise. Pure: no zod, no request.
 */

/** The known field the unknown one probably meant, or null when none is close. */
export function closestField(unknown: string, known: readonly string[]): string | null {
  const normalized = normalize(unknown);
  const sameLetters = known.find((field) => normalize(field) === normalized);
  if (sameLetters !== undefined) return sameLetters;
  // One edit per 3 characters, at least 1 and at most 3: `amout` → amount, never `id` → `ip`-like noise on long names.
  const allowed = Math.min(3, Math.max(1, Math.floor(normalized.length / 3)));
  let best: string | null = null;
  let bestDistance = allowed + 1;
  for (const field of known) {
    const distance = editDistance(normalized, normalize(field), bestDistance);
    if (distance < bestDistance) {
      best = field;
      bestDistance = distance;
    }
  }
  return best;
}

function normalize(field: string): string {
  return field.toLowerCase().replace(/[-_\s]/g, '');
}

/**
 * Optimal string alignment distance (Levenshtein plus the transposition of two neighbours, the
 * commonest typo). Stops early once every path is at least `limit`, returning `limit`.
 */
export function editDistance(a: string, b: string, limit = Number.POSITIVE_INFINITY): number {
  if (Math.abs(a.length - b.length) >= limit) return limit;
  let previous2: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) value = Math.min(value, (previous2[j - 2] ?? 0) + 1);
      current[j] = value;
      rowMin = Math.min(rowMin, value);
    }
    if (rowMin >= limit) return limit;
    previous2 = previous;
    previous = current;
  }
  return Math.min(previous[b.length] ?? 0, limit);
}
