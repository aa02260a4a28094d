/** Requests and answers of the batch console's routes (/console/*). */
import { z } from 'zod';
import { successEnvelopeSchema } from './envelope';
import { receiptCountsSchema } from './receipts';

export const consoleSignInSchema = z.strictObject({
  api_key: z
    .string('must be a string')
    .trim()
    .min(1, 'enter your secret API key (api_…)')
    .max(256, 'must be at most 256 characters')
    .meta({ description: 'The secret API key (api_…). Exchanged for the session; never stored.' }),
});

export const consoleSessionSchema = z
  .strictObject({
    merchant_name: z.string(),
    csrf_token: z.string().meta({ description: 'Send it in `X-CSRF-Token` on every POST and DELETE of the console.' }),
    expires_at: z.string().meta({ description: 'When the session ends (ISO 8601); signing in again starts a new one.' }),
  })
  .meta({ id: 'ConsoleSession' });

export const consoleSessionResponseSchema = successEnvelopeSchema(consoleSessionSchema).meta({ id: 'ConsoleSessionResponse' });

export const consoleSignedOutResponseSchema = successEnvelopeSchema(z.strictObject({ signed_out: z.literal(true) })).meta({
  id: 'ConsoleSignedOutResponse',
});

export const batchSummarySchema = z
  .strictObject({
    rows: z.int().meta({ description: 'Rows in the result file.' }),
    approved: z.int(),
    authorized: z.int().meta({ description: 'Of the approved rows, authorizations awaiting capture.' }),
    declined: z.int(),
    error: z.int().meta({ description: 'Rows refused by validation or by a processor error.' }),
    first_refused: z
      .array(
        z.strictObject({
          line: z.int().nullable().meta({ description: 'The line in the uploaded file (header = line 1).' }),
          response: z.enum(['declined', 'error']),
          response_code: z.int().nullable(),
          reason: z.string().meta({ description: "The result's processor_response_text." }),
        }),
      )
      .meta({ description: 'The first 20 declined or failed rows, in file order.' }),
    receipts: receiptCountsSchema.meta({ description: 'Email receipts of the approved rows with email_receipt true, as of now: sending is paced behind processing, so some may still be queued.' }),
  })
  .meta({ id: 'BatchSummary' });

export const batchSummaryResponseSchema = successEnvelopeSchema(batchSummarySchema).meta({ id: 'BatchSummaryResponse' });
