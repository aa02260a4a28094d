/** D1 access for webhook endpoints, events and deliveries (schema.sql, "Webhooks"). */
import type { WebhookEventType } from '../schemas/webhooks';

export interface EndpointRow {
  id: string;
  merchant_id: string;
  url: string;
  events: WebhookEventType[];
  sealed_secret: string;
  sealed_previous_secret: string | null;
  previous_secret_expires_at: string | null;
  created_at: string;
  updated_at: string;
}

type StoredEndpointRow = Omit<EndpointRow, 'events'> & { events: string };

function toEndpoint(row: StoredEndpointRow): EndpointRow {
  return { ...row, events: JSON.parse(row.events) as WebhookEventType[] };
}

export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

export interface DeliveryRow {
  id: string;
  merchant_id: string;
  endpoint_id: string;
  event_id: string;
  redelivery_of: string | null;
  status: DeliveryStatus;
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  enqueued_at: string | null;
  created_at: string;
}

/** A delivery with its event's type (what the deliveries list shows). */
export type DeliveryWithType = DeliveryRow & { type: WebhookEventType };

/** Everything one attempt needs: the delivery, where it goes, how it is signed, what it carries. */
export type DeliveryForAttempt = DeliveryWithType & {
  url: string;
  sealed_secret: string;
  sealed_previous_secret: string | null;
  previous_secret_expires_at: string | null;
  payload: string;
};

// ---- endpoints ------------------------------------------------------------------------------

/**
 * Inserts the endpoint unless the merchant already has `limit` of them, in one statement so two
 * concurrent creations cannot both slip under the limit. False when the limit was reached.
 */
export async function insertEndpointWithinLimit(db: D1Database, endpoint: EndpointRow, limit: number): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO webhook_endpoints (id, merchant_id, url, events, sealed_secret, sealed_previous_secret,
                                      previous_secret_expires_at, created_at, updated_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9
       WHERE (SELECT COUNT(*) FROM webhook_endpoints WHERE merchant_id = ?2) < ?10`,
    )
    .bind(
      endpoint.id,
      endpoint.merchant_id,
      endpoint.url,
      JSON.stringify(endpoint.events),
      endpoint.sealed_secret,
      endpoint.sealed_previous_secret,
      endpoint.previous_secret_expires_at,
      endpoint.created_at,
      endpoint.updated_at,
      limit,
    )
    .run();
  return result.meta.changes === 1;
}

export async function listMerchantEndpoints(db: D1Database, merchantId: string): Promise<EndpointRow[]> {
  const { results } = await db
    .prepare('SELECT * FROM webhook_endpoints WHERE merchant_id = ?1 ORDER BY created_at, id')
    .bind(merchantId)
    .all<StoredEndpointRow>();
  return results.map(toEndpoint);
}

export async function findMerchantEndpoint(db: D1Database, merchantId: string, id: string): Promise<EndpointRow | null> {
  const row = await db
    .prepare('SELECT * FROM webhook_endpoints WHERE id = ?1 AND merchant_id = ?2')
    .bind(id, merchantId)
    .first<StoredEndpointRow>();
  return row ? toEndpoint(row) : null;
}

/** Deletes the endpoint and its delivery history; pending attempts find nothing and stop. */
export async function deleteMerchantEndpoint(db: D1Database, merchantId: string, id: string): Promise<boolean> {
  const [, , deleted] = await db.batch([
    db.prepare('DELETE FROM webhook_deliveries WHERE endpoint_id = ?1 AND merchant_id = ?2').bind(id, merchantId),
    // Its transaction_create summary (storage/transaction-events.ts).
    db.prepare('DELETE FROM webhook_transaction_event_health WHERE endpoint_id = ?1 AND merchant_id = ?2').bind(id, merchantId),
    db.prepare('DELETE FROM webhook_endpoints WHERE id = ?1 AND merchant_id = ?2').bind(id, merchantId),
  ]);
  return (deleted?.meta.changes ?? 0) === 1;
}

/** The current secret becomes the previous one (until `previousExpiresAt`); the new one is current. */
export async function rotateEndpointSecret(
  db: D1Database,
  merchantId: string,
  id: string,
  sealedSecret: string,
  previousExpiresAt: string,
  now: string,
): Promise<EndpointRow | null> {
  const row = await db
    .prepare(
      `UPDATE webhook_endpoints
       SET sealed_previous_secret = sealed_secret, previous_secret_expires_at = ?3, sealed_secret = ?4, updated_at = ?5
       WHERE id = ?1 AND merchant_id = ?2
       RETURNING *`,
    )
    .bind(id, merchantId, previousExpiresAt, sealedSecret, now)
    .first<StoredEndpointRow>();
  return row ? toEndpoint(row) : null;
}

// ---- events ---------------------------------------------------------------------------------

export interface NewEvent {
  id: string;
  merchant_id: string;
  type: WebhookEventType;
  batch_id: string;
  payload: string;
  created_at: string;
}

/** Where a batch's event of one type stands, read in one round trip. */
export interface EventState {
  /** Whether the event was recorded already (by an earlier run of the transition's effects). */
  recorded: boolean;
  /** Its deliveries whose first attempt was never put on the queue. */
  unsent: string[];
  /** Endpoints of the batch's merchant that want this type and existed at `transitionAt`. */
  subscribers: number;
}

const SUBSCRIBED = `EXISTS (SELECT 1 FROM json_each(e.events) WHERE json_each.value = ?2) AND e.created_at <= ?3`;

export async function readEventState(db: D1Database, batchId: string, type: WebhookEventType, transitionAt: string): Promise<EventState> {
  const [event, subscribers] = await db.batch([
    db
      .prepare(
        `SELECT ev.id AS event_id, d.id AS delivery_id
         FROM webhook_events ev
         LEFT JOIN webhook_deliveries d ON d.event_id = ev.id AND d.enqueued_at IS NULL AND d.status = 'pending' AND d.attempts = 0
         WHERE ev.batch_id = ?1 AND ev.type = ?2`,
      )
      .bind(batchId, type),
    db
      .prepare(
        `SELECT COUNT(*) AS n FROM webhook_endpoints e
         WHERE e.merchant_id = (SELECT merchant_id FROM batches WHERE id = ?1) AND ${SUBSCRIBED}`,
      )
      .bind(batchId, type, transitionAt),
  ]);
  const rows = (event?.results ?? []) as { event_id: string; delivery_id: string | null }[];
  return {
    recorded: rows.length > 0,
    unsent: rows.flatMap((row) => (row.delivery_id === null ? [] : [row.delivery_id])),
    subscribers: ((subscribers?.results ?? [])[0] as { n: number } | undefined)?.n ?? 0,
  };
}

/**
 * Records the event and one pending delivery per endpoint of the merchant subscribed to its type
 * (and created by `transitionAt`: an endpoint gets the transitions after it was made), in one
 * transaction, unless this batch already has an event of this type: then nothing is written.
 * Answers the new deliveries' ids, or null when the event was there already.
 */
export async function insertEventWithDeliveries(db: D1Database, event: NewEvent, transitionAt: string): Promise<string[] | null> {
  const [inserted, deliveries] = await db.batch([
    db
      .prepare(
        `INSERT OR IGNORE INTO webhook_events (id, merchant_id, type, batch_id, payload, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)`,
      )
      .bind(event.id, event.merchant_id, event.type, event.batch_id, event.payload, event.created_at),
    // Only when the row above is ours: an existing event of this batch and type has another id.
    db
      .prepare(
        `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
         SELECT 'whd_' || lower(hex(randomblob(12))), e.merchant_id, e.id, ?4, 'pending', 0, ?5, ?5
         FROM webhook_endpoints e
         WHERE e.merchant_id = ?1 AND ${SUBSCRIBED} AND EXISTS (SELECT 1 FROM webhook_events WHERE id = ?4)
         RETURNING id`,
      )
      .bind(event.merchant_id, event.type, transitionAt, event.id, event.created_at),
  ]);
  if ((inserted?.meta.changes ?? 0) !== 1) return null;
  return ((deliveries?.results ?? []) as { id: string }[]).map((row) => row.id);
}

export async function markEnqueued(db: D1Database, ids: string[], at: string): Promise<void> {
  if (ids.length === 0) return;
  await db.batch(ids.map((id) => db.prepare('UPDATE webhook_deliveries SET enqueued_at = ?2 WHERE id = ?1').bind(id, at)));
}

// ---- deliveries -----------------------------------------------------------------------------

export async function listEndpointDeliveries(
  db: D1Database,
  merchantId: string,
  endpointId: string,
  limit: number,
  offset: number,
): Promise<{ deliveries: DeliveryWithType[]; total: number }> {
  const [page, count] = await db.batch([
    db
      .prepare(
        `SELECT d.*, ev.type FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
         WHERE d.endpoint_id = ?1 AND d.merchant_id = ?2
         ORDER BY d.created_at DESC, d.id DESC LIMIT ?3 OFFSET ?4`,
      )
      .bind(endpointId, merchantId, limit, offset),
    db.prepare('SELECT COUNT(*) AS total FROM webhook_deliveries WHERE endpoint_id = ?1 AND merchant_id = ?2').bind(endpointId, merchantId),
  ]);
  const deliveries = (page?.results ?? []) as DeliveryWithType[];
  const total = ((count?.results ?? [])[0] as { total: number } | undefined)?.total ?? 0;
  return { deliveries, total };
}

export async function findMerchantDelivery(
  db: D1Database,
  merchantId: string,
  endpointId: string,
  id: string,
): Promise<DeliveryWithType | null> {
  return db
    .prepare(
      `SELECT d.*, ev.type FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
       WHERE d.id = ?1 AND d.endpoint_id = ?2 AND d.merchant_id = ?3`,
    )
    .bind(id, endpointId, merchantId)
    .first<DeliveryWithType>();
}

/**
 * Inserts a redelivery, only while its event is still kept (the retention cron may have removed
 * it since the original was read). False when the event is gone.
 */
export async function insertDelivery(db: D1Database, delivery: DeliveryRow): Promise<boolean> {
  const result = await db
    .prepare(
      `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, redelivery_of, status, attempts, last_status_code,
                                       last_error, next_attempt_at, delivered_at, enqueued_at, created_at)
       SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13
       WHERE EXISTS (SELECT 1 FROM webhook_events WHERE id = ?4)`,
    )
    .bind(
      delivery.id,
      delivery.merchant_id,
      delivery.endpoint_id,
      delivery.event_id,
      delivery.redelivery_of,
      delivery.status,
      delivery.attempts,
      delivery.last_status_code,
      delivery.last_error,
      delivery.next_attempt_at,
      delivery.delivered_at,
      delivery.enqueued_at,
      delivery.created_at,
    )
    .run();
  return result.meta.changes === 1;
}

export async function findDeliveryForAttempt(db: D1Database, id: string): Promise<DeliveryForAttempt | null> {
  return db
    .prepare(
      `SELECT d.*, ev.type, ev.payload, e.url, e.sealed_secret, e.sealed_previous_secret, e.previous_secret_expires_at
       FROM webhook_deliveries d
       JOIN webhook_events ev ON ev.id = d.event_id
       JOIN webhook_endpoints e ON e.id = d.endpoint_id
       WHERE d.id = ?1`,
    )
    .bind(id)
    .first<DeliveryForAttempt>();
}

export interface AttemptRecord {
  status: DeliveryStatus;
  lastStatusCode: number | null;
  lastError: string | null;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
}

/**
 * Records attempt number `attemptsBefore + 1`, only if no one recorded it first (a duplicate queue
 * message running the same attempt). False when the delivery had moved on.
 */
export async function recordAttempt(db: D1Database, id: string, attemptsBefore: number, attempt: AttemptRecord): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE webhook_deliveries
       SET attempts = attempts + 1, status = ?3, last_status_code = ?4, last_error = ?5, next_attempt_at = ?6, delivered_at = ?7
       WHERE id = ?1 AND attempts = ?2 AND status = 'pending'`,
    )
    .bind(id, attemptsBefore, attempt.status, attempt.lastStatusCode, attempt.lastError, attempt.nextAttemptAt, attempt.deliveredAt)
    .run();
  return result.meta.changes === 1;
}

/** Ends a delivery that cannot be attempted any more (its queue message exhausted its retries). */
export async function markDeliveryFailed(db: D1Database, id: string, attemptsBefore: number, reason: string): Promise<boolean> {
  const result = await db
    .prepare(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = ?3, next_attempt_at = NULL
       WHERE id = ?1 AND attempts = ?2 AND status = 'pending'`,
    )
    .bind(id, attemptsBefore, reason)
    .run();
  return result.meta.changes === 1;
}

// ---- retention ------------------------------------------------------------------------------

/**
 * Removes up to `limit` events created before `cutoff` that no delivery is still retrying, with
 * all their deliveries, in one transaction. An event a redelivery made pending again meanwhile
 * keeps itself and that delivery. Answers how many events the page listed and how many went.
 */
export async function deleteSettledEventsBefore(db: D1Database, cutoff: string, limit: number): Promise<{ listed: number; removed: number }> {
  const settled = `SELECT ev.id FROM webhook_events ev
    WHERE ev.created_at < ?1 AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = ev.id AND d.status = 'pending')
    ORDER BY ev.created_at LIMIT ?2`;
  const found = await db.prepare(settled).bind(cutoff, limit).all<{ id: string }>();
  if (found.results.length === 0) return { listed: 0, removed: 0 };
  // One JSON parameter for the page, clear of D1's 100 bound parameters (about 30 KB for 1,000 ids).
  const ids = JSON.stringify(found.results.map((row) => row.id));
  const [, events] = await db.batch([
    db.prepare(`DELETE FROM webhook_deliveries WHERE event_id IN (SELECT value FROM json_each(?1)) AND status != 'pending'`).bind(ids),
    db
      .prepare(
        `DELETE FROM webhook_events WHERE id IN (SELECT value FROM json_each(?1))
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = webhook_events.id)`,
      )
      .bind(ids),
  ]);
  return { listed: found.results.length, removed: events?.meta.changes ?? 0 };
}

/**
 * Ends up to `limit` deliveries still `pending` whose attempt was due before `dueBefore` as failed
 * with `reason` (the partial index `webhook_deliveries_pending` finds them without reading the
 * others). Answers how many.
 */
export async function failDeliveriesDueBefore(db: D1Database, dueBefore: string, reason: string, limit: number): Promise<number> {
  const result = await db
    .prepare(
      `UPDATE webhook_deliveries SET status = 'failed', last_error = ?2, next_attempt_at = NULL
       WHERE id IN (SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at < ?1 LIMIT ?3)`,
    )
    .bind(dueBefore, reason, limit)
    .run();
  return result.meta.changes;
}
