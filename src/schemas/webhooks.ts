/**
 * Webhooks and the batch progress stream: what the HTTP routes accept, every answer they give,
 * the event payload a receiver gets, and the queue message of a delivery. The answers are
 * written as the contract (the OpenAPI document is built from them); the routes build their
 * bodies with these types.
 */
import { z } from 'zod';
import { urlContainsCardNumber } from '../lib/redact';
import { deletedSchema, successEnvelopeSchema, timestampSchema } from './envelope';
import { listQuerySchema } from './filebatch';
import { batchRecordSchema } from './filebatch-response';
import { settlementBatchSchema } from './settlement';
import { transactionExportStateSchema } from './transaction-search';

export const WEBHOOK_EVENT_TYPES = ['batch.completed', 'batch.failed', 'settlement.completed', 'export.completed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const MAX_WEBHOOK_ENDPOINTS = 10;

// ---- requests -------------------------------------------------------------------------------

export const webhookCreateSchema = z.strictObject({
  url: z
    .string('must be a string (an https:// URL)')
    .trim()
    .min(1, 'must not be empty')
    .max(2048, 'must be at most 2048 characters')
    // Stored and answered back (the endpoint's record, deliveries): never a card number, also escaped.
    .refine((url) => !urlContainsCardNumber(url), 'must not contain a card number'),
  events: z
    .array(z.enum(WEBHOOK_EVENT_TYPES, `must be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`), 'must be an array of event types')
    .min(1, 'must name at least one event type (leave it out for all of them)')
    .optional(),
});
export type WebhookCreate = z.infer<typeof webhookCreateSchema>;

export const webhookIdParamSchema = z.object({
  id: z.string().regex(/^whe_[a-z0-9]{1,60}$/, 'malformed webhook endpoint id'),
});

export const deliveryParamSchema = z.object({
  id: z.string().regex(/^whe_[a-z0-9]{1,60}$/, 'malformed webhook endpoint id'),
  delivery_id: z.string().regex(/^whd_[a-z0-9]{1,60}$/, 'malformed delivery id'),
});

/** Deliveries are paged like the batch list: `limit` 1–100 (20), `offset` ≥ 0. */
export const deliveriesQuerySchema = listQuerySchema;

/** The progress stream takes a stream token in the query (a browser cannot send a header). */
export const batchEventsQuerySchema = z.object({
  token: z.string().max(200, 'must be at most 200 characters').optional(),
});

// ---- answers (strict: the OpenAPI document publishes them and the contract tests hold answers to them)

/** The endpoint as listed: never its secret. */
export const webhookEndpointSchema = z
  .strictObject({
    id: z.string().meta({ description: 'whe_…' }),
    url: z.string(),
    events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
    created_at: timestampSchema,
    previous_secret_expires_at: timestampSchema
      .nullable()
      .meta({ description: 'Until then the previous secret signs too (after a rotation).' }),
  })
  .meta({ id: 'WebhookEndpoint' });
export type WebhookEndpoint = z.infer<typeof webhookEndpointSchema>;

/** Creation and rotation answer the secret, once; it is never shown again. */
export const webhookEndpointWithSecretSchema = webhookEndpointSchema
  .extend({ secret: z.string().meta({ description: 'whsec_…: the HMAC key, shown once.' }) })
  .meta({ id: 'WebhookEndpointWithSecret' });
export type WebhookEndpointWithSecret = z.infer<typeof webhookEndpointWithSecretSchema>;

export const webhookDeliverySchema = z
  .strictObject({
    id: z.string().meta({ description: 'whd_…' }),
    endpoint_id: z.string(),
    event_id: z.string().meta({ description: 'evt_…: the same for every delivery and redelivery of one event.' }),
    type: z.enum(WEBHOOK_EVENT_TYPES),
    status: z.enum(['pending', 'delivered', 'failed']),
    attempts: z.int().min(0),
    last_status_code: z
      .int()
      .nullable()
      .meta({ description: "The receiver's last HTTP status; null before an answer or after a timeout." }),
    last_error: z.string().nullable(),
    next_attempt_at: timestampSchema.nullable(),
    delivered_at: timestampSchema.nullable(),
    created_at: timestampSchema,
    redelivery_of: z.string().nullable(),
  })
  .meta({ id: 'WebhookDelivery' });
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

export const webhookCreatedResponseSchema = successEnvelopeSchema(webhookEndpointWithSecretSchema);
export const webhookListResponseSchema = successEnvelopeSchema(z.array(webhookEndpointSchema));
export const webhookDeletedResponseSchema = successEnvelopeSchema(deletedSchema);
export const webhookRotatedResponseSchema = successEnvelopeSchema(webhookEndpointWithSecretSchema);
/** An endpoint's deliveries, newest first: the envelope plus the page it is (as the batch list). */
export const deliveryListResponseSchema = z
  .strictObject({
    status: z.literal('success'),
    msg: z.literal('success'),
    data: z.array(webhookDeliverySchema),
    total_count: z.int().min(0),
    limit: z.int().min(1).max(100),
    offset: z.int().min(0),
  })
  .meta({ id: 'WebhookDeliveryList' });
export const redeliveryResponseSchema = successEnvelopeSchema(webhookDeliverySchema);

export const streamTokenSchema = z
  .strictObject({
    token: z.string().meta({ description: 'bst_…' }),
    expires_at: timestampSchema,
    url: z.string().meta({ description: 'The stream path with the token: open it with EventSource.' }),
  })
  .meta({ id: 'StreamToken' });
export const streamTokenResponseSchema = successEnvelopeSchema(streamTokenSchema);

/**
 * What a receiver gets: the body of every delivery (POST, application/json), signed in the
 * Binbatch-Signature header. Each `data:` line of the progress stream is a batch record too.
 */
export const webhookEventSchema = z
  .strictObject({
    id: z.string().meta({ description: 'evt_…: drop a delivery whose event id you have already handled.' }),
    type: z.enum(WEBHOOK_EVENT_TYPES),
    created_at: timestampSchema,
    data: z
      .union([batchRecordSchema, settlementBatchSchema, transactionExportStateSchema])
      .meta({ description: 'batch.*: the batch record; settlement.completed: the settlement batch; export.completed: the export.' }),
  })
  .meta({ id: 'WebhookEvent' });
export type WebhookEvent = z.infer<typeof webhookEventSchema>;

// ---- queue ----------------------------------------------------------------------------------

/** One message per attempt: which delivery, and which attempt (1-based) it is for. */
export const webhookDeliveryMessageSchema = z.object({
  deliveryId: z.string().min(1),
  attempt: z.int().min(1),
});
export type WebhookDeliveryMessage = z.infer<typeof webhookDeliveryMessageSchema>;
