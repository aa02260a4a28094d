/**
 * Shared fast-check set-up for the property tests: one fixed seed (a failure prints the seed and
 * the shrunk counterexample, and re-running reproduces it), modest run counts so `npm test` stays
 * fast, and arbitraries for the hostile input a payment API sees.
 */
import fc from 'fast-check';
import { expect } from 'vitest';

/** Change to explore other inputs; a failure report names the seed and path to replay it. */
export const FUZZ_SEED = 20261121;

export function fuzzRuns(numRuns: number): fc.Parameters<unknown> {
  // No shrinking: each run is a request (or a batch), and shrinking would outlast the test's
  // timeout; the first failing input is reported as is, with its seed and path.
  return { seed: FUZZ_SEED, numRuns, endOnFailure: true };
}

/** Digits of scripts other than ASCII: `\d` in some regex engines, Number() in none, a card digit never. */
const UNICODE_DIGIT_BLOCKS = [
  0x0660, // Arabic-Indic
  0x06f0, // Extended Arabic-Indic
  0x0966, // Devanagari
  0x09e6, // Bengali
  0x0e50, // Thai
  0xff10, // Fullwidth
  0x1d7ce, // Mathematical bold (outside the BMP: a surrogate pair in UTF-16)
];

const unicodeDigit = fc
  .tuple(fc.constantFrom(...UNICODE_DIGIT_BLOCKS), fc.integer({ min: 0, max: 9 }))
  .map(([block, digit]) => String.fromCodePoint(block + digit));

/**
 * A string of `minLength`-`maxLength` digits where at least one is not ASCII, e.g. a card number
 * typed on an Arabic keyboard: "٤١١١١١١١١١١١١١١١".
 */
export function unicodeDigits(minLength = 6, maxLength = 19): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.array(fc.oneof(fc.integer({ min: 0, max: 9 }).map(String), unicodeDigit), { minLength, maxLength }),
      fc.nat(),
      unicodeDigit,
    )
    .map(([chars, at, forced]) => {
      const out = [...chars];
      out[at % out.length] = forced;
      return out.join('');
    });
}

/** A JSON value of any type except a string. */
export const nonString: fc.Arbitrary<unknown> = fc.oneof(
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 4 }),
  fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
);

/** Strings a validator must survive: control characters, NUL, lone surrogates, injection attempts. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom('\u0000', '\r', '\n', '"', "'", '\\', ';', '%', '\u202e', '\ud800', '\uffff'), maxLength: 20 }),
  fc.constantFrom(
    "' OR 1=1 --",
    '"); DROP TABLE merchants; --',
    '%s%s%s%n',
    '${7*7}',
    '__proto__',
    '<script>alert(1)</script>',
    '../../etc/passwd',
    '\u0000',
    ' ',
    '',
  ),
  unicodeDigits(),
);

/** A value that is wrong for a string field that only takes digits (card, CVC, BIN, account). */
export const notDigits: fc.Arbitrary<unknown> = fc.oneof(
  nonString,
  unicodeDigits(),
  fc.string({ minLength: 1, maxLength: 30 }).filter((s) => !/^[0-9 -]*$/.test(s)),
);

/** `[[[...]]]` nested `depth` deep, as JSON text. */
export function deeplyNested(depth: number, inner = '1'): string {
  return '['.repeat(depth) + inner + ']'.repeat(depth);
}

/** What every error answer of the service looks like: SPEC.md's failed envelope with a real message. */
export interface FailedBody {
  status: string;
  msg: string;
  data: unknown;
  errors?: { field: string; msg: string }[];
}

export async function expectFailedEnvelope(response: Response): Promise<FailedBody> {
  const body = await response.json<FailedBody>();
  expect(body.status).toBe('failed');
  expect(body.data).toBeNull();
  expect(typeof body.msg).toBe('string');
  expect(body.msg.length).toBeGreaterThan(0);
  expect(body.msg).not.toBe('internal server error');
  return body;
}
