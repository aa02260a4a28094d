/**
 * Webhooks and the batch progress stream: what the HTTP routes accept, every answer they give,
 * the event payload a receiver gets, and the queue message of a delivery. The answers are
 * written as the contract (the OpenAPI document is built from them); the routes build their
 * bodies with these types.
 */
import { z } from 'zod';
import { listQuerySchema } from './filebatch';

export const WEBHOOK_EVENT_TYPES = ['batch.completed', 'batch.failed'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const MAX_WEBHOOK_ENDPOINTS = 10;

// ---- requests -------------------------------------------------------------------------------

export const webhookCreateSchema = z.strictObject({
  url: z.string('must be a string (an https:// URL)').trim().min(1, 'must not be empty').max(2048, 'must be at most 2048 characters'),
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

// ---- answers --------------------------------------------------------------------------------

function envelope<T extends z.ZodType>(data: T) {
  return z.object({ status: z.literal('success'), msg: z.literal('success'), data });
}

const timestamp = z.string().describe('ISO 8601 with milliseconds and Z');

/** The batch record exactly as GET /api/filebatch/{id} answers it (SPEC.md "Batch record"). */
export const batchRecordSchema = z.object({
  id: z.string(),
  user_id: z.string().describe('the owning merchant'),
  file_name: z.string(),
  status: z.enum(['pending', 'queued', 'processing', 'completed', 'failed']),
  num_lines: z.int(),
  processed_lines: z.int(),
  created_at: timestamp,
  updated_at: timestamp,
  failure_reason: z.string().optional().describe('only on a failed batch'),
});

export const webhookEndpointSchema = z.object({
  id: z.string().describe('whe_…'),
  url: z.string(),
  events: z.array(z.enum(WEBHOOK_EVENT_TYPES)),
  created_at: timestamp,
  previous_secret_expires_at: timestamp.nullable().describe('until then the previous secret signs too (after a rotation)'),
});
export type WebhookEndpoint = z.infer<typeof webhookEndpointSchema>;

/** Creation and rotation answer the secret, once; it is never shown again. */
export const webhookEndpointWithSecretSchema = webhookEndpointSchema.extend({
  secret: z.string().describe('whsec_…: the HMAC key, shown once'),
});
export type WebhookEndpointWithSecret = z.infer<typeof webhookEndpointWithSecretSchema>;

export const webhookDeliverySchema = z.object({
  id: z.string().describe('whd_…'),
  endpoint_id: z.string(),
  event_id: z.string().describe('evt_…: the same for every delivery and redelivery of one event'),
  type: z.enum(WEBHOOK_EVENT_TYPES),
  status: z.enum(['pending', 'delivered', 'failed']),
  attempts: z.int(),
  last_status_code: z.int().nullable().describe("the receiver's last HTTP status; null before an answer or after a timeout"),
  last_error: z.string().nullable(),
  next_attempt_at: timestamp.nullable(),
  delivered_at: timestamp.nullable(),
  created_at: timestamp,
  redelivery_of: z.string().nullable(),
});
export type WebhookDelivery = z.infer<typeof webhookDeliverySchema>;

export const webhookCreatedResponseSchema = envelope(webhookEndpointWithSecretSchema);
export const webhookListResponseSchema = envelope(z.array(webhookEndpointSchema));
export const webhookDeletedResponseSchema = envelope(z.object({ id: z.string(), deleted: z.literal(true) }));
export const webhookRotatedResponseSchema = envelope(webhookEndpointWithSecretSchema);
export const deliveryListResponseSchema = envelope(z.array(webhookDeliverySchema)).extend({
  total_count: z.int(),
  limit: z.int(),
  offset: z.int(),
});
export const redeliveryResponseSchema = envelope(webhookDeliverySchema);

export const streamTokenSchema = z.object({
  token: z.string().describe('bst_…'),
  expires_at: timestamp,
  url: z.string().describe('the stream path with the token: open it with EventSource'),
});
export const streamTokenResponseSchema = envelope(streamTokenSchema);

/**
 * What a receiver gets: the body of every delivery (POST, application/json), signed in the
 * Binbatch-Signature header. Also each `data:` line of the progress stream is a batchRecordSchema.
 */
export const webhookEventSchema = z.object({
  id: z.string().describe('evt_…: drop a delivery whose event id you have already handled'),
  type: z.enum(WEBHOOK_EVENT_TYPES),
  created_at: timestamp,
  data: batchRecordSchema,
});
export type WebhookEvent = z.infer<typeof webhookEventSchema>;

// ---- queue ----------------------------------------------------------------------------------

/** One message per attempt: which delivery, and which attempt (1-based) it is for. */
export const webhookDeliveryMessageSchema = z.object({
  deliveryId: z.string().min(1),
  attempt: z.int().min(1),
});
export type WebhookDeliveryMessage = z.infer<typeof webhookDeliveryMessageSchema>;
