/**
 * The card-number detector, measured on ids: a million of each kind a client or this service uses
 * as an id (UUID v4, UUID v7, 24-character base-36 ids, the service's own ids), at most one refused
 * per million. Runs in Node: a few million calls in workerd's test pool would take minutes.
 *
 * The samples come from a seeded generator, so a run is reproducible and the figures in
 * docs/security.md are this test's output (`npx vitest run test/node/card-number-ids.test.ts`).
 */
import { describe, expect, it } from 'vitest';
import { containsCardNumber, maskCardNumbersIn } from '../../src/lib/card-number';

const SAMPLES = 1_000_000;
const MAX_PER_MILLION = 1;

/** mulberry32: a small seeded generator, good enough to spread ids evenly. */
function generator(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const HEX = '0123456789abcdef';
const BASE36 = '0123456789abcdefghijklmnopqrstuvwxyz';
/** src/lib/crypto.ts's alphabet for randomId. */
const BASE32 = '0123456789abcdefghijklmnopqrstuv';

function chars(random: () => number, alphabet: string, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) out += alphabet[Math.floor(random() * alphabet.length)];
  return out;
}

/** RFC 9562 layout: 8-4-4-4-12, version nibble, variant bits 10. */
function uuid(hex32: string, version: string, random: () => number): string {
  const variant = HEX[8 + Math.floor(random() * 4)];
  return `${hex32.slice(0, 8)}-${hex32.slice(8, 12)}-${version}${hex32.slice(13, 16)}-${variant}${hex32.slice(17, 20)}-${hex32.slice(20, 32)}`;
}

const KINDS: Record<string, (random: () => number) => string> = {
  'UUID v4': (random) => uuid(chars(random, HEX, 32), '4', random),
  'UUID v4, upper case': (random) => uuid(chars(random, HEX, 32), '4', random).toUpperCase(),
  'UUID v4 without dashes': (random) => uuid(chars(random, HEX, 32), '4', random).replace(/-/g, ''),
  'UUID v7': (random) => {
    // 48 bits of Unix milliseconds between 2020 and 2040, then random bits.
    const ms = 1_577_836_800_000 + Math.floor(random() * 631_152_000_000);
    return uuid(ms.toString(16).padStart(12, '0') + chars(random, HEX, 20), '7', random);
  },
  'base-36 id, 24 characters': (random) => chars(random, BASE36, 24),
  'service ids (txn_, bat_, key_, prc_, whe_, whd_ + 20, evt_, auto_ + 24, bare 20)': (random) => {
    const pick = Math.floor(random() * 9);
    const prefixes = ['txn_', 'bat_', 'key_', 'prc_', 'whe_', 'whd_', 'evt_', 'auto_', ''];
    return (prefixes[pick] as string) + chars(random, BASE32, pick === 6 || pick === 7 ? 24 : 20);
  },
  'batch row keys ({batch id}:{line})': (random) => `bat_${chars(random, BASE32, 20)}:${1 + Math.floor(random() * 500_000)}`,
};

describe('the card-number detector on ids', () => {
  const figures: string[] = [];

  it.each(Object.keys(KINDS))(`refuses at most ${MAX_PER_MILLION} per million of: %s`, (kind) => {
    const make = KINDS[kind] as (random: () => number) => string;
    const random = generator(0x5eed + kind.length);
    let refused = 0;
    let masked = 0;
    const examples: string[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const id = make(random);
      if (containsCardNumber(id)) {
        refused++;
        if (examples.length < 5) examples.push(id);
      }
      // A request id quoted in a log line must come out unchanged.
      if (i % 10 === 0 && maskCardNumbersIn(`request ${id} done`) !== `request ${id} done`) masked++;
    }
    figures.push(`${kind}: ${refused} of ${SAMPLES.toLocaleString('en')} refused, ${masked} of ${(SAMPLES / 10).toLocaleString('en')} masked`);
    console.log(figures.at(-1));
    expect(refused, examples.join(', ')).toBeLessThanOrEqual((MAX_PER_MILLION * SAMPLES) / 1_000_000);
    expect(masked).toBe(0);
  }, 120_000);
});
