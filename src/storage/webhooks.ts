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
  const [, deleted] = await db.batch([
    db.prepare('DELETE FROM webhook_deliveries WHERE endpoint_id = ?1 AND merchant_id = ?2').bind(id, merchantId),
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

/**
 * Records the event and one pending delivery per endpoint of the merchant subscribed to its type,
 * in one transaction, unless this batch already has an event of this type: then nothing is
 * written (the first run's deliveries stand). True when this call recorded it.
 */
export async function insertEventWithDeliveries(db: D1Database, event: NewEvent): Promise<boolean> {
  const [inserted] = await db.batch([
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
         SELECT 'whd_' || lower(hex(randomblob(12))), e.merchant_id, e.id, ?1, 'pending', 0, ?3, ?3
         FROM webhook_endpoints e
         WHERE e.merchant_id = ?2
           AND EXISTS (SELECT 1 FROM json_each(e.events) WHERE json_each.value = ?4)
           AND EXISTS (SELECT 1 FROM webhook_events WHERE id = ?1)`,
      )
      .bind(event.id, event.merchant_id, event.created_at, event.type),
  ]);
  return (inserted?.meta.changes ?? 0) === 1;
}

/** Deliveries of a batch's event whose first attempt has not been put on the queue yet. */
export async function listUnsentDeliveries(db: D1Database, batchId: string, type: WebhookEventType): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT d.id FROM webhook_deliveries d JOIN webhook_events ev ON ev.id = d.event_id
       WHERE ev.batch_id = ?1 AND ev.type = ?2 AND d.enqueued_at IS NULL AND d.status = 'pending' AND d.attempts = 0`,
    )
    .bind(batchId, type)
    .all<{ id: string }>();
  return results.map((row) => row.id);
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

export async function insertDelivery(db: D1Database, delivery: DeliveryRow): Promise<void> {
  await db
    .prepare(
      `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, redelivery_of, status, attempts, last_status_code,
                                       last_error, next_attempt_at, delivered_at, enqueued_at, created_at)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`,
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
