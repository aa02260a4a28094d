/**
 * Email receipts (docs/receipts.md): a merchant's receipt settings (admin API), a receipt's state
 * as a transaction's record shows it, a resend's body, a batch's receipts counted.
 */
import { z } from 'zod';
import { emailAddressField, freeTextProblem } from './text-fields';
import { timestampSchema } from './envelope';

/** Kinds of receipt, after what the card networks print as the transaction type. */
export const RECEIPT_KINDS = ['sale', 'authorization', 'credit', 'refund', 'void'] as const;
export type ReceiptKind = (typeof RECEIPT_KINDS)[number];

export const RECEIPT_STATUSES = ['queued', 'sent', 'failed'] as const;
export type ReceiptStatus = (typeof RECEIPT_STATUSES)[number];

/** Free text a receipt shows: no control character (no line break into a header), no card number. */
function receiptText(max: number) {
  return z
    .string('must be a string')
    .trim()
    .min(1, 'must not be empty (null clears it)')
    .superRefine((value, ctx) => {
      // Free text's one rule (schemas/text-fields.ts): nothing that ends a header line or misleads a reader.
      const problem = freeTextProblem(value, max);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    });
}

/** An email address that becomes a header (To, Reply-To): the one address rule (schemas/text-fields.ts). */
export { emailAddressField };

export const receiptSettingsInputSchema = z
  .strictObject({
    city: receiptText(100).nullable().optional(),
    region: receiptText(100).nullable().optional().meta({ description: 'State, province or region, as printed (`IL`).' }),
    country: z
      .string()
      .regex(/^[A-Z]{2}$/, 'must be a two-letter country code (ISO 3166-1, upper case)')
      .nullable()
      .optional(),
    website: receiptText(2048)
      .refine((value) => /^https:\/\/[^\s"'<>]+$/.test(value), 'must be an https:// URL')
      .nullable()
      .optional(),
    support_email: emailAddressField.nullable().optional().meta({ description: "The receipts' Reply-To: where a customer's reply goes." }),
    support_phone: z
      .string()
      .regex(/^\+?[0-9 ().-]{5,30}$/, 'must be a phone number: digits, spaces, + ( ) . - (5 to 30 characters)')
      .nullable()
      .optional(),
    refund_policy: receiptText(1000).nullable().optional().meta({ description: 'The policy itself, or where to read it.' }),
  })
  .meta({
    id: 'ReceiptSettingsInput',
    description:
      'What receipts show besides the merchant name. Fields left out keep their value; null clears one. The card networks ask for city and region, a website or customer-service contact, and the refund policy.',
  });

export const receiptSettingsSchema = z
  .strictObject({
    city: z.string().nullable(),
    region: z.string().nullable(),
    country: z.string().nullable(),
    website: z.string().nullable(),
    support_email: z.string().nullable(),
    support_phone: z.string().nullable(),
    refund_policy: z.string().nullable(),
  })
  .meta({ id: 'ReceiptSettings', description: "What the merchant's email receipts show besides its name (docs/receipts.md)." });

export const receiptStateSchema = z
  .strictObject({
    id: z.string().meta({ description: 'The receipt: `{transaction id}:{kind}`, then `:{n}` for the n-th sent on request. Sent as the X-Receipt-Id header.' }),
    transaction_id: z.string(),
    kind: z.enum(RECEIPT_KINDS),
    to: z.string(),
    status: z.enum(RECEIPT_STATUSES).meta({ description: 'queued (waiting, or retrying: see attempts and last_error), sent (the Email Service accepted it), failed (no more attempts).' }),
    attempts: z.int().min(0),
    queued_at: timestampSchema,
    next_attempt_at: timestampSchema.nullable().meta({ description: 'While queued: when it is next tried.' }),
    sent_at: timestampSchema.nullable(),
    failed_at: timestampSchema.nullable(),
    last_error: z.string().nullable().meta({ description: "The Email Service's last error (code and message)." }),
  })
  .meta({ id: 'ReceiptState' });

export type ReceiptStateView = z.infer<typeof receiptStateSchema>;

export const resendBodySchema = z.strictObject({
  email: emailAddressField.optional().meta({ description: "Send it here instead of the transaction's email_address (or billing_email)." }),
});

export const receiptCountsSchema = z
  .strictObject({
    queued: z.int().min(0).meta({ description: 'Waiting to be sent, or being retried (sending is paced behind processing).' }),
    sent: z.int().min(0),
    failed: z.int().min(0),
  })
  .meta({ id: 'ReceiptCounts', description: "The batch's email receipts by state (rows with email_receipt true that were approved)." });

/** A merchant's receipt budgets as the admin API takes them (docs/receipts.md, "Budgets"): null goes back to the default. */
export const receiptLimitsInputSchema = z
  .strictObject({
    daily: z.int('must be an integer').min(0, 'must be 0 or more').max(10_000_000, 'must be at most 10000000').nullable().optional().meta({
      description: 'Receipts the merchant may send in a UTC day (default 10000); past it, the rest wait for the next day. 0 holds all its receipts.',
    }),
    per_minute: z.int('must be an integer').min(1, 'must be 1 or more').max(100_000, 'must be at most 100000').nullable().optional().meta({
      description: "Receipts the merchant may send in a UTC minute (default a quarter of the service's RECEIPT_SENDS_PER_MINUTE).",
    }),
    per_recipient: z.int('must be an integer').min(1, 'must be 1 or more').max(1_000, 'must be at most 1000').nullable().optional().meta({
      description: 'Receipts one address may get from the merchant in a UTC day, resends included (default 10); past it a receipt fails.',
    }),
  })
  .meta({ id: 'ReceiptLimitsInput', description: "The merchant's receipt budgets. Fields left out keep their value; null goes back to the default." });

export const receiptLimitsSchema = z
  .strictObject({
    daily: z.int().min(0),
    per_minute: z.int().min(1),
    per_recipient: z.int().min(1),
  })
  .meta({ id: 'ReceiptLimits', description: "The merchant's receipt budgets in force (docs/receipts.md, \"Budgets\")." });
