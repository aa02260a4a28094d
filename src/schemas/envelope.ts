/**
 * The envelope, as the contract of every answer that is not a bare object: the success form
 * wraps `data`, the failed form says what went wrong and where. These schemas are what the OpenAPI
 * document publishes and what the contract tests hold every answer to.
 */
import { z } from 'zod';

export const fieldErrorSchema = z
  .strictObject({
    field: z.string().meta({ description: 'The failing field: a JSON path (`payment_method.card.number`), a header name, or `(body)`.' }),
    msg: z.string().meta({ description: 'What is wrong with it, never quoting card data.' }),
  })
  .meta({ id: 'FieldError' });

export type FieldError = z.infer<typeof fieldErrorSchema>;

export const failedEnvelopeSchema = z
  .strictObject({
    status: z.literal('failed'),
    msg: z.string().meta({ description: 'What went wrong and where (`bin: must be 6 to 19 digits (0-9 only)`, `line 7: …`).' }),
    // `const: null` rather than `type: "null"`: openapi-fetch drops a property whose type is only
    // null from its error type (openapi-ts/openapi-typescript#2717), and `error.data` should compile.
    data: z
      .unknown()
      .refine((value) => value === null, 'must be null')
      .meta({ const: null, description: 'Always null in an error.' }),
    errors: z.array(fieldErrorSchema).optional().meta({ description: 'Validation errors only: every failing field.' }),
    request_id: z.string().optional().meta({ description: '500 only: the id of the request in the logs.' }),
  })
  .meta({
    id: 'FailedEnvelope',
    description: 'Every error answer. A validation error adds `errors`; an unexpected error (500) adds `request_id`.',
    example: { status: 'failed', msg: 'bin: must be 6 to 19 digits (0-9 only)', data: null, errors: [{ field: 'bin', msg: 'must be 6 to 19 digits (0-9 only)' }] },
  });

export type FailedEnvelope = z.infer<typeof failedEnvelopeSchema>;

/** The success form around `data`. */
export function successEnvelopeSchema<Data extends z.ZodType>(data: Data) {
  return z.strictObject({ status: z.literal('success'), msg: z.literal('success'), data });
}

export type SuccessEnvelope<Data> = { status: 'success'; msg: 'success'; data: Data };

export const healthSchema = z.strictObject({ status: z.literal('ok') }).meta({ id: 'Health' });

/** What every DELETE answers (inside the success envelope): the id, and that it is gone. */
export const deletedSchema = z
  .strictObject({ id: z.string(), deleted: z.literal(true) })
  .meta({ id: 'Deleted', description: 'Every DELETE answers 200 with this inside the success envelope.' });

export type Deleted = z.infer<typeof deletedSchema>;

/** Every timestamp the API answers: ISO 8601 UTC with milliseconds and `Z`. */
export const timestampSchema = z.iso.datetime({ precision: 3 }).meta({ example: '2026-11-21T05:30:00.000Z' });
