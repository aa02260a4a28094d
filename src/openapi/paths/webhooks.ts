/**
 * Webhook endpoints and deliveries, the batch progress stream and its tokens, and (OpenAPI 3.1
 * `webhooks`) the signed requests binbatch sends to a merchant's endpoint.
 */
import { z } from 'zod';
import { batchIdParamSchema } from '../../schemas/filebatch';
import {
  deliveriesQuerySchema,
  deliveryListResponseSchema,
  deliveryParamSchema,
  redeliveryResponseSchema,
  streamTokenResponseSchema,
  transactionEventSchema,
  webhookCreatedResponseSchema,
  webhookCreateSchema,
  webhookDeletedResponseSchema,
  webhookEventSchema,
  webhookIdParamSchema,
  webhookListResponseSchema,
  webhookRotatedResponseSchema,
} from '../../schemas/webhooks';
import { errors, json, ok, SECRET_KEY, SECRET_KEY_OR_STREAM_TOKEN, type Registry } from './common';

const tags = ['Webhooks'];

export function registerWebhooks(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/webhooks',
    operationId: 'createWebhookEndpoint',
    tags,
    summary: 'Subscribe an endpoint to batch events; the answer shows its signing secret once',
    description:
      '`https://` on the default port only in production; private, loopback and link-local addresses are refused. ' +
      '`http://localhost` and `http://127.0.0.1` are allowed when `WEBHOOK_ALLOW_LOCAL=true` (npm run dev). At most 10 endpoints per merchant.',
    security: SECRET_KEY,
    request: {
      body: {
        required: true,
        content: json(webhookCreateSchema, { url: 'https://shop.example/hooks/binbatch', events: ['batch.completed', 'batch.failed'] }),
      },
    },
    responses: {
      201: ok('The endpoint, with its secret (shown once).', webhookCreatedResponseSchema),
      ...errors([400, 401, 409, 413], { 409: 'The merchant already has 10 endpoints.' }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/webhooks',
    operationId: 'listWebhookEndpoints',
    tags,
    summary: "The merchant's endpoints (never their secrets)",
    security: SECRET_KEY,
    responses: { 200: ok('The endpoints.', webhookListResponseSchema), ...errors([401]) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/api/webhooks/{id}',
    operationId: 'deleteWebhookEndpoint',
    tags,
    summary: 'Delete an endpoint and its delivery history',
    security: SECRET_KEY,
    request: { params: webhookIdParamSchema },
    responses: { 200: ok('Deleted.', webhookDeletedResponseSchema), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/webhooks/{id}/rotate-secret',
    operationId: 'rotateWebhookSecret',
    tags,
    summary: 'A new signing secret (shown once); the previous one keeps signing beside it for 24 h',
    security: SECRET_KEY,
    request: { params: webhookIdParamSchema },
    responses: { 200: ok('The endpoint with its new secret.', webhookRotatedResponseSchema), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/webhooks/{id}/deliveries',
    operationId: 'listWebhookDeliveries',
    tags,
    summary: "An endpoint's deliveries, newest first, paginated like the batch list",
    description: 'Deliveries of the events of the last 30 days: the hourly cron removes an older event with its deliveries once none is still being retried.',
    security: SECRET_KEY,
    request: { params: webhookIdParamSchema, query: deliveriesQuerySchema },
    responses: { 200: ok('A page of deliveries.', deliveryListResponseSchema), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/webhooks/{id}/deliveries/{delivery_id}/redeliver',
    operationId: 'redeliverWebhook',
    tags,
    summary: 'Send the event of a delivery again, as a new delivery with the same event id',
    security: SECRET_KEY,
    request: { params: deliveryParamSchema },
    responses: {
      202: ok('The new delivery, queued.', redeliveryResponseSchema),
      ...errors([400, 401, 404, 409], { 409: 'That delivery is still being retried.' }),
    },
  });
  registry.registerPath({
    method: 'get',
    path: '/api/filebatch/{id}/events',
    operationId: 'streamBatchProgress',
    tags: ['Batch files'],
    summary: 'Live progress of a batch as Server-Sent Events, ending after completed or failed',
    description:
      'One `data:` line per change of `status` or `processed_lines` (at most 4 a second), each the batch record as ' +
      'GET /api/filebatch/{id} answers it; event ids are `<status>:<processed_lines>`. Authenticate with the secret key in ' +
      '`Authorization`, or (from a browser, whose EventSource sends no headers) with `?token=` from POST …/events/token, or with the batch console\'s session cookie. ' +
      'A reconnection with `Last-Event-ID` after the final state answers 204.',
    // The stream token is a security scheme (apiKey in the query), not a parameter of its own.
    security: [...SECRET_KEY_OR_STREAM_TOKEN, { consoleSession: [] }],
    request: {
      params: batchIdParamSchema,
      headers: z.object({
        'Last-Event-ID': z
          .string()
          .optional()
          .meta({ description: 'Sent by EventSource on reconnection: the id of the last event received (`<status>:<processed_lines>`).', example: 'processing:1200' }),
      }),
    },
    responses: {
      200: { description: 'The stream.', content: { 'text/event-stream': { schema: z.string().meta({ description: 'Server-Sent Events whose data are batch records.' }) } } },
      204: { description: 'The batch had already ended when this reconnection came: stop reconnecting.' },
      ...errors([400, 401, 404]),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/api/filebatch/{id}/events/token',
    operationId: 'createBatchStreamToken',
    tags: ['Batch files'],
    summary: 'A 10-minute token that opens this batch’s progress stream from a browser (never put a secret key in a URL)',
    security: SECRET_KEY,
    request: { params: batchIdParamSchema },
    responses: { 201: ok('The token and the stream URL.', streamTokenResponseSchema), ...errors([400, 401, 404]) },
  });

  // Every delivery also carries FluidPay's headers, which their SDKs' ParseWebhookRequest checks.
  const fluidPayHeaders = {
    Signature: z.string().meta({ description: "FluidPay's: unpadded base64url HMAC-SHA256(secret, raw body), with the current secret (no timestamp: prefer Binbatch-Signature where replays matter)." }),
    'Signature-Previous': z.string().optional().meta({ description: "FluidPay's: the same with the previous secret, during a rotation's 24-hour overlap." }),
    'X-Webhook-Event-Id': z.string().meta({ description: 'The event id again, under the name FluidPay\'s clients read.' }),
  };
  const binbatchSignature = z.string().meta({
    description: '`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, one `v1=` per active secret.',
  });
  const eventId = z.string().meta({ description: 'The event id (evt_…): drop duplicates by it.' });
  const signed = {
    description: 'Sent by binbatch to each subscribed endpoint, signed with the endpoint secret.',
    request: {
      headers: z.object({
        'Binbatch-Signature': binbatchSignature,
        'Binbatch-Event-Id': eventId,
        'Binbatch-Delivery-Id': z.string().meta({ description: 'This delivery (whd_…): a redelivery or a retry of the same event has its own; quote it with the endpoint\'s deliveries (GET /api/webhooks/{id}/deliveries).' }),
        ...fluidPayHeaders,
      }),
      body: { required: true, content: json(webhookEventSchema) },
    },
    responses: {
      200: { description: 'Any 2xx within 10 s marks the delivery delivered; anything else is retried with backoff.' },
    },
  };
  for (const type of ['batch.completed', 'batch.failed'] as const) {
    registry.registerWebhook({
      method: 'post',
      path: type,
      operationId: type === 'batch.completed' ? 'batchCompletedWebhook' : 'batchFailedWebhook',
      tags,
      summary: type === 'batch.completed' ? 'A batch completed' : 'A batch failed (its record carries failure_reason)',
      ...signed,
      description:
        `${signed.description} \`data\` is the batch record (GET /api/filebatch/{id}) with \`receipts\`: the batch's email receipts ` +
        'by state (queued, sent, failed) when it ended. Receipts are sent paced behind processing, so some are usually still queued then (docs/receipts.md).',
    });
  }
  registry.registerWebhook({
    method: 'post',
    path: 'transaction_create',
    operationId: 'transactionCreateWebhook',
    tags,
    summary: "FluidPay's transaction_create: a transaction of POST /api/transaction was created (opt-in)",
    description:
      'Sent to the endpoints that name `transaction_create` in their events, once per transaction the API created (a replay of the request sends nothing), ' +
      "in FluidPay's event envelope with the record as GET /api/transaction/{id} answers it. No delivery rows: the endpoint's `transaction_events` " +
      '(GET /api/webhooks) sums how its events fare (docs/webhooks.md, "transaction_create").',
    request: {
      headers: z.object({
        'Binbatch-Signature': binbatchSignature,
        'Binbatch-Event-Id': eventId.meta({ description: 'evt_ and the transaction id: the same for every attempt and duplicate of the event.' }),
        'Binbatch-Delivery-Id': z.string().meta({ description: 'whq_…: the queue message carrying the event, the same across its retries (logged with each attempt).' }),
        ...fluidPayHeaders,
      }),
      body: { required: true, content: json(transactionEventSchema) },
    },
    responses: {
      200: { description: 'Any 2xx within 10 s delivers the event; anything else is retried with the same backoff as every delivery (8 attempts over about 22 hours), then given up.' },
    },
  });
}
