/**
 * One rule per kind of text field, the same at every door: the native and FluidPay transaction
 * bodies and batch rows (services/transactions/validation.ts checks their text columns with the
 * functions), the vault, the receipts' resend and settings, and the admin API (with the zod pieces).
 *
 * What is refused, and why: text here is stored, shown back in the console and in result files,
 * and printed in receipts (their headers too). So no character that can end a line or a header
 * (C0 controls, DEL, C1 controls such as NEL, U+2028/U+2029), none that reorders what a reader sees
 * (the bidirectional embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069, and the marks
 * U+200E, U+200F, U+061C), and no invisible character that makes two different values look equal
 * (zero-width space, joiners, word joiner, U+FEFF). A card number is refused too: these fields are
 * not where card data may live.
 */
import { z } from 'zod';
import { containsCardNumber } from '../lib/card-number';

/** The characters that can mislead a reader or break a line (see the file's comment). */
const MISLEADING = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200b-\u200f\u2060\ufeff\u061c]/u;
/** One address, no display name: no whitespace, quotes, `<>`, `,` or `;` (nothing a header could split on). */
const EMAIL = /^[^\s@"<>,;]+@[^\s@"<>,;]+\.[^\s@"<>,;]+$/;

export const MAX_EMAIL_LENGTH = 254;
export const MISLEADING_MESSAGE = 'must not contain control characters, line breaks, bidirectional overrides or zero-width characters';
export const EMAIL_MESSAGE = 'must be a well-formed email address';
export const CARD_NUMBER_MESSAGE = 'must not contain a card number';

export function hasMisleadingCharacters(value: string): boolean {
  return MISLEADING.test(value);
}

/** Why `value` is not an email address this service sends to or stores, or null. */
export function emailAddressProblem(value: string): string | null {
  // A card number first: written with invisible separators, it is still a card number, and that is what the client must hear.
  if (containsCardNumber(value)) return CARD_NUMBER_MESSAGE;
  if (value.length > MAX_EMAIL_LENGTH || hasMisleadingCharacters(value) || !EMAIL.test(value)) return EMAIL_MESSAGE;
  return null;
}

/** Why `value` is not acceptable free text (a description, an address line, a note) of at most `max` characters, or null. */
export function freeTextProblem(value: string, max: number): string | null {
  if (value.length > max) return `must be at most ${max} characters`;
  if (containsCardNumber(value)) return CARD_NUMBER_MESSAGE;
  if (hasMisleadingCharacters(value)) return MISLEADING_MESSAGE;
  return null;
}

/**
 * A person's or a business's name (a merchant, a processor, a billing first/last name): free text's
 * rule, a name being what a reader most trusts to read as written.
 */
export const nameProblem = freeTextProblem;

/** The zod pieces: the same functions, for the JSON bodies validated with zod. */
export const emailAddressField = z
  .string('must be a string')
  .superRefine((value, ctx) => {
    const problem = emailAddressProblem(value);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  })
  .meta({ format: 'email', maxLength: MAX_EMAIL_LENGTH });

export function freeTextField(max: number) {
  return z
    .string('must be a string')
    .superRefine((value, ctx) => {
      const problem = freeTextProblem(value, max);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({ maxLength: max });
}

export function nameField(max: number) {
  return z
    .string('must be a string')
    .trim()
    .min(1, 'is required')
    .superRefine((value, ctx) => {
      const problem = nameProblem(value, max);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .meta({ maxLength: max });
}
