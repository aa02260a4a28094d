// The BIN dataset the bench imports: ../shared/data/bins/openbiin (374,823 rows) when present, else
// a synthetic dataset of the same size and format, generated into a temporary folder (fixed seed).
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export const OPENBIIN_ROWS = 374_823;
const HEADER = 'BIN6,Ranges,Issuer,Country,Brand,Type';

/** A small deterministic PRNG (mulberry32), so a synthetic dataset and the generated files repeat. */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function synthesize(dir, rows) {
  mkdirSync(dir, { recursive: true });
  const next = random(42);
  const brands = [['4', 'visa'], ['5', 'mastercard'], ['37', 'american express'], ['6011', 'discover'], ['35', 'jcb']];
  const countries = ['US', 'CA', 'GB', 'DE', 'FR', 'BR', 'MX', 'IN', 'JP', ''];
  const types = ['credit', 'debit', 'credit', ''];
  // 374,823 distinct 6-digit BINs out of 1,000,000: walk them in order, keeping each with p ≈ 0.375.
  const bins = [];
  for (let bin = 0; bin < 1_000_000 && bins.length < rows; bin += 1) {
    if (next() < rows / 1_000_000 + 0.01) bins.push(String(bin).padStart(6, '0'));
  }
  const perFile = Math.ceil(bins.length / 100);
  for (let file = 0; file < 100; file += 1) {
    const lines = [HEADER];
    for (const bin of bins.slice(file * perFile, (file + 1) * perFile)) {
      const brand = brands.find(([p]) => bin.startsWith(p))?.[1] ?? 'private label';
      const issuer = next() < 0.5 ? `"SYNTHETIC BANK ${Math.floor(next() * 5000)}"` : '';
      lines.push(`${bin},00-99,${issuer},${countries[Math.floor(next() * countries.length)]},${brand},${types[Math.floor(next() * types.length)]}`);
    }
    writeFileSync(join(dir, `${String(file).padStart(2, '0')}.csv`), lines.join('\n') + '\n');
  }
}

/** { dir, source: 'openbiin' | 'synthetic', files } — `scratch` receives a synthetic dataset if needed. */
export function binDataset(root, scratch) {
  const shared = resolve(root, '..', 'shared', 'data', 'bins', 'openbiin');
  if (existsSync(shared)) return { dir: shared, source: 'openbiin (../shared/data/bins)' };
  const dir = join(scratch, 'synthetic-bins');
  synthesize(dir, OPENBIIN_ROWS);
  return { dir, source: 'synthetic (../shared absent), same size and format' };
}

/** The dataset's BINs: [{ bin, country }] in file order (the first column; quoted issuers skipped over). */
export function readBins(dir) {
  const out = [];
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.csv')).sort()) {
    const lines = readFileSync(join(dir, name), 'utf8').split('\n');
    for (const line of lines.slice(1)) {
      const bin = line.slice(0, 6);
      if (!/^\d{6}$/.test(bin)) continue;
      // Country is the fourth field; the issuer (third) may be quoted and hold commas.
      const match = /^\d{6},[^,]*,(?:"[^"]*"|[^,]*),([A-Z]{2})?,/.exec(line);
      out.push({ bin, country: match?.[1] ?? '' });
    }
  }
  return out;
}

/** Luhn check digit for `partial` (the digits without it). */
export function luhnDigit(partial) {
  let sum = 0;
  for (let i = 0; i < partial.length; i += 1) {
    let d = Number(partial[partial.length - 1 - i]);
    if (i % 2 === 0) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return String((10 - (sum % 10)) % 10);
}

/** A 16-digit card number starting with `bin` that passes Luhn. */
export function cardNumber(bin, next) {
  let body = bin;
  while (body.length < 15) body += String(Math.floor(next() * 10));
  return body + luhnDigit(body);
}

/** Fisher-Yates shuffle with the given PRNG (returns a new array). */
export function shuffled(items, next) {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(next() * (i + 1));
    [copy[i], copy[j]] = [copy[j], copy[i]];
  }
  return copy;
}
