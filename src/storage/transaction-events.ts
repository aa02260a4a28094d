/**
 * D1 access for FluidPay's `transaction_create` events. The events themselves are never stored
 * (they travel in their queue message, services/webhooks/transaction-events.ts): here are only the
 * endpoints that take them and `webhook_transaction_event_health`, one summary row per endpoint.
 * Endpoint ids travel as one JSON parameter, so no statement nears D1's bound parameters.
 */
import type { WebhookEventType } from '../schemas/webhooks';
import type { EndpointRow } from './webhooks';

const SUBSCRIBED = `EXISTS (SELECT 1 FROM json_each(e.events) WHERE json_each.value = 'transaction_create')`;

/** The merchant's endpoints that take transaction_create (at most MAX_WEBHOOK_ENDPOINTS, 10). */
export async function listTransactionEventEndpointIds(db: D1Database, merchantId: string): Promise<string[]> {
  const { results } = await db
    .prepare(`SELECT e.id FROM webhook_endpoints e WHERE e.merchant_id = ?1 AND ${SUBSCRIBED} ORDER BY e.created_at, e.id`)
    .bind(merchantId)
    .all<{ id: string }>();
  return results.map((row) => row.id);
}

/** What one attempt needs of its endpoint (its webhooks.ts row, less when it was made and changed), and where its summary stands. */
export type TransactionEventEndpoint = Omit<EndpointRow, 'created_at' | 'updated_at'> & {
  last_delivered_at: string | null;
  failing_since: string | null;
};

/** The endpoints a queue batch names (at most its size, 10), by id; a deleted one is absent. */
export async function findTransactionEventEndpoints(db: D1Database, ids: readonly string[]): Promise<Map<string, TransactionEventEndpoint>> {
  if (ids.length === 0) return new Map();
  const { results } = await db
    .prepare(
      `SELECT e.id, e.merchant_id, e.url, e.events, e.sealed_secret, e.sealed_previous_secret, e.previous_secret_expires_at,
              h.last_delivered_at, h.failing_since
       FROM webhook_endpoints e LEFT JOIN webhook_transaction_event_health h ON h.endpoint_id = e.id
       WHERE e.id IN (SELECT value FROM json_each(?1))`,
    )
    .bind(JSON.stringify([...new Set(ids)]))
    .all<Omit<TransactionEventEndpoint, 'events'> & { events: string }>();
  return new Map(results.map((row) => [row.id, { ...row, events: JSON.parse(row.events) as WebhookEventType[] }]));
}

/** What a queue batch's attempts did at one endpoint, to add to its summary. */
export interface TransactionEventOutcomes {
  endpointId: string;
  merchantId: string;
  /** The batch's latest delivery, if any. */
  deliveredAt: string | null;
  /**
   * With a delivery in the batch: the first failure after its last delivery (null: none since).
   * Without: the batch's first failure, kept only if the endpoint was not failing already.
   */
  failingSince: string | null;
  failedAttempts: number;
  abandonedEvents: number;
  lastFailure: { at: string; statusCode: number | null; error: string; eventId: string; transactionId: string } | null;
  lastAbandoned: { at: string; transactionId: string } | null;
}

/**
 * Adds each endpoint's outcomes to its summary, one upsert per endpoint in one D1 batch. An
 * endpoint deleted meanwhile gets no row (its summary was deleted with it).
 */
export async function recordTransactionEventOutcomes(db: D1Database, outcomes: readonly TransactionEventOutcomes[]): Promise<void> {
  if (outcomes.length === 0) return;
  await db.batch(
    outcomes.map((o) =>
      db
        .prepare(
          `INSERT INTO webhook_transaction_event_health (endpoint_id, merchant_id, last_delivered_at, failing_since, failed_attempts, abandoned_events,
             last_failure_at, last_failure_status_code, last_failure_error, last_failure_event_id, last_failure_transaction_id,
             last_abandoned_at, last_abandoned_transaction_id)
           SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
           WHERE EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = ?1 AND merchant_id = ?2)
           ON CONFLICT (endpoint_id) DO UPDATE SET
             last_delivered_at = COALESCE(excluded.last_delivered_at, last_delivered_at),
             failing_since = CASE WHEN excluded.last_delivered_at IS NOT NULL THEN excluded.failing_since ELSE COALESCE(failing_since, excluded.failing_since) END,
             failed_attempts = failed_attempts + excluded.failed_attempts,
             abandoned_events = abandoned_events + excluded.abandoned_events,
             last_failure_status_code = CASE WHEN excluded.last_failure_at IS NULL THEN last_failure_status_code ELSE excluded.last_failure_status_code END,
             last_failure_error = COALESCE(excluded.last_failure_error, last_failure_error),
             last_failure_event_id = COALESCE(excluded.last_failure_event_id, last_failure_event_id),
             last_failure_transaction_id = COALESCE(excluded.last_failure_transaction_id, last_failure_transaction_id),
             last_failure_at = COALESCE(excluded.last_failure_at, last_failure_at),
             last_abandoned_transaction_id = COALESCE(excluded.last_abandoned_transaction_id, last_abandoned_transaction_id),
             last_abandoned_at = COALESCE(excluded.last_abandoned_at, last_abandoned_at)`,
        )
        .bind(
          o.endpointId,
          o.merchantId,
          o.deliveredAt,
          o.failingSince,
          o.failedAttempts,
          o.abandonedEvents,
          o.lastFailure?.at ?? null,
          o.lastFailure?.statusCode ?? null,
          o.lastFailure?.error ?? null,
          o.lastFailure?.eventId ?? null,
          o.lastFailure?.transactionId ?? null,
          o.lastAbandoned?.at ?? null,
          o.lastAbandoned?.transactionId ?? null,
        ),
    ),
  );
}

export interface TransactionEventHealthRow {
  endpoint_id: string;
  last_delivered_at: string | null;
  failing_since: string | null;
  failed_attempts: number;
  abandoned_events: number;
  last_failure_at: string | null;
  last_failure_status_code: number | null;
  last_failure_error: string | null;
  last_failure_event_id: string | null;
  last_failure_transaction_id: string | null;
  last_abandoned_at: string | null;
  last_abandoned_transaction_id: string | null;
}

/** The summaries of a merchant's endpoints (at most 10 rows), by endpoint id. */
export async function readTransactionEventHealth(db: D1Database, merchantId: string): Promise<Map<string, TransactionEventHealthRow>> {
  const { results } = await db
    .prepare('SELECT * FROM webhook_transaction_event_health WHERE merchant_id = ?1')
    .bind(merchantId)
    .all<TransactionEventHealthRow & { merchant_id: string }>();
  return new Map(results.map((row) => [row.endpoint_id, row]));
}
