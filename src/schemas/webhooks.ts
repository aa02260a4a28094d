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
import { receiptCountsSchema } from './receipts';
import { settlementBatchSchema } from './settlement';
import { transactionRecordSchema } from './transaction-response';
import { transactionExportStateSchema } from './transaction-search';

export const WEBHOOK_EVENT_TYPES = ['batch.completed', 'batch.failed', 'settlement.completed', 'export.completed', 'transaction_create'] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/**
 * Types an endpoint gets only when it names them: `transaction_create` is one event per API
 * transaction (FluidPay's event of that name), never the default (docs/webhooks.md).
 */
export const OPT_IN_EVENT_TYPES: readonly WebhookEventType[] = ['transaction_create'];
export const DEFAULT_EVENT_TYPES = WEBHOOK_EVENT_TYPES.filter((type) => !OPT_IN_EVENT_TYPES.includes(type));

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
    .min(1, 'must name at least one event type (leave it out for all of them but transaction_create)')
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

/**
 * How an endpoint takes its `transaction_create` events. They keep no row each (docs/webhooks.md,
 * "transaction_create"), so this summary, with the log lines of each attempt, is their history.
 */
export const transactionEventHealthSchema = z
  .strictObject({
    last_delivered_at: timestampSchema.nullable().meta({ description: 'The latest delivered event (to the minute: a healthy endpoint is recorded at most once a minute).' }),
    failing_since: timestampSchema
      .nullable()
      .meta({ description: 'The first failed attempt since the last delivery; null while the endpoint takes its events. Reconcile from here with the transaction search.' }),
    failed_attempts: z.int().min(0).meta({ description: 'Failed attempts since the endpoint was created (each event has up to 8, as every delivery).' }),
    abandoned_events: z.int().min(0).meta({ description: 'Events given up after their last attempt: never delivered.' }),
    last_failure: z
      .strictObject({
        at: timestampSchema,
        status_code: z.int().nullable().meta({ description: "The receiver's HTTP status; null after a timeout or a network error." }),
        error: z.string().meta({ description: '"HTTP 500", "timed out after 10 s", "network error: …", "url refused: …".' }),
        event_id: z.string(),
        transaction_id: z.string(),
      })
      .nullable(),
    last_abandoned: z.strictObject({ at: timestampSchema, transaction_id: z.string() }).nullable(),
  })
  .meta({ id: 'TransactionEventHealth' });
export type TransactionEventHealth = z.infer<typeof transactionEventHealthSchema>;

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
    transaction_events: transactionEventHealthSchema
      .nullable()
      .meta({ description: 'How its transaction_create events fare (they have no deliveries list); null when the endpoint does not take them.' }),
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
 * A batch event's data: the batch record, and its email receipts by state when
 * the batch ended. Receipts are sent paced behind processing, so most may still be `queued` then.
 */
export const batchEventRecordSchema = batchRecordSchema
  .extend({
    receipts: receiptCountsSchema
      .optional()
      .meta({ description: 'The batch\'s email receipts by state when it ended (absent from events recorded before receipts existed).' }),
  })
  .meta({ id: 'BatchEventRecord' });

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
      .union([batchEventRecordSchema, settlementBatchSchema, transactionExportStateSchema])
      .meta({ description: 'batch.*: the batch record with its email receipts counted; settlement.completed: the settlement batch; export.completed: the export.' }),
  })
  .meta({ id: 'WebhookEvent' });

/** `transaction_create`'s body: FluidPay's event envelope (their SDKs' WebhookEvent), with binbatch's event id. */
export const transactionEventSchema = z
  .strictObject({
    id: z.string().meta({ description: 'evt_… (also in Binbatch-Event-Id and X-Webhook-Event-Id).' }),
    status: z.literal('success'),
    msg: z.literal('success'),
    type: z.literal('transaction_create'),
    account_type: z.literal('merchant'),
    account_type_id: z.string().meta({ description: 'The merchant.' }),
    transaction_id: z.string(),
    action_at: timestampSchema.meta({ description: 'When the transaction was created.' }),
    data: transactionRecordSchema,
  })
  .meta({ id: 'TransactionEvent' });
export type TransactionEvent = z.infer<typeof transactionEventSchema>;
export type WebhookEvent = z.infer<typeof webhookEventSchema>;

// ---- queue ----------------------------------------------------------------------------------

/** One message per attempt: which delivery, and which attempt (1-based) it is for. */
export const webhookDeliveryMessageSchema = z.object({
  deliveryId: z.string().min(1),
  attempt: z.int().min(1),
});
export type WebhookDeliveryMessage = z.infer<typeof webhookDeliveryMessageSchema>;

/**
 * A `transaction_create` event on its way to one endpoint (TRANSACTION_EVENT_QUEUE): the event
 * itself travels here, its attempts are the queue's retries. The event is sent as
 * JSON.stringify(event), the same bytes at every attempt. Only what a delivery needs is checked:
 * an event published by an older version of this Worker still goes out as it was made.
 */
export const transactionEventMessageSchema = z.object({
  endpointId: z.string().regex(/^whe_[a-z0-9]{1,60}$/),
  merchantId: z.string().min(1),
  event: z.looseObject({ id: z.string().min(1), type: z.literal('transaction_create'), transaction_id: z.string().min(1) }),
});
export type TransactionEventMessage = z.infer<typeof transactionEventMessageSchema>;
