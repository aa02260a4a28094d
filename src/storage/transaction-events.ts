/**
 * D1 access for `transaction_create` events (webhook_events with the transaction id as their
 * subject): whether a merchant has an endpoint subscribed, and the event with its deliveries,
 * recorded once per transaction and at most `dailyBound` a merchant a UTC day.
 */

const SUBSCRIBED = `EXISTS (SELECT 1 FROM json_each(e.events) WHERE json_each.value = 'transaction_create')`;

export async function hasTransactionSubscribers(db: D1Database, merchantId: string): Promise<boolean> {
  const row = await db.prepare(`SELECT 1 AS yes FROM webhook_endpoints e WHERE e.merchant_id = ?1 AND ${SUBSCRIBED} LIMIT 1`).bind(merchantId).first<{ yes: number }>();
  return row !== null;
}

export interface NewTransactionEvent {
  id: string;
  merchantId: string;
  transactionId: string;
  payload: string;
  createdAt: string;
}

export type RecordedTransactionEvent =
  /** Recorded now: the deliveries to queue. */
  | { outcome: 'recorded'; deliveries: string[] }
  /** Recorded before: the deliveries whose first message may not have been queued. */
  | { outcome: 'exists'; unsent: string[] }
  /** The merchant's events of the day reached the bound: not recorded. */
  | { outcome: 'over_bound' };

/**
 * Records the event and one delivery per subscribed endpoint in one transaction, unless the
 * transaction has its event already, or the merchant's events since `dayStart` reached `dailyBound`
 * (counted in the same statement, so concurrent requests cannot pass it together).
 */
export async function recordTransactionEvent(db: D1Database, event: NewTransactionEvent, dayStart: string, dailyBound: number): Promise<RecordedTransactionEvent> {
  const [inserted, deliveries, unsent] = await db.batch([
    db
      .prepare(
        `INSERT OR IGNORE INTO webhook_events (id, merchant_id, type, batch_id, payload, created_at)
         SELECT ?1, ?2, 'transaction_create', ?3, ?4, ?5
         WHERE (SELECT COUNT(*) FROM webhook_events WHERE merchant_id = ?2 AND type = 'transaction_create' AND created_at >= ?6) < ?7`,
      )
      .bind(event.id, event.merchantId, event.transactionId, event.payload, event.createdAt, dayStart, dailyBound),
    db
      .prepare(
        `INSERT INTO webhook_deliveries (id, merchant_id, endpoint_id, event_id, status, attempts, next_attempt_at, created_at)
         SELECT 'whd_' || lower(hex(randomblob(12))), e.merchant_id, e.id, ?2, 'pending', 0, ?3, ?3
         FROM webhook_endpoints e
         WHERE e.merchant_id = ?1 AND ${SUBSCRIBED} AND e.created_at <= ?3 AND EXISTS (SELECT 1 FROM webhook_events WHERE id = ?2)
         RETURNING id`,
      )
      .bind(event.merchantId, event.id, event.createdAt),
    db
      .prepare(
        `SELECT d.id FROM webhook_events ev
         JOIN webhook_deliveries d ON d.event_id = ev.id AND d.enqueued_at IS NULL AND d.status = 'pending' AND d.attempts = 0
         WHERE ev.batch_id = ?1 AND ev.type = 'transaction_create' AND ev.id <> ?2`,
      )
      .bind(event.transactionId, event.id),
  ]);
  if ((inserted?.meta.changes ?? 0) === 1) return { outcome: 'recorded', deliveries: ((deliveries?.results ?? []) as { id: string }[]).map((row) => row.id) };
  const exists = await db.prepare(`SELECT 1 AS yes FROM webhook_events WHERE batch_id = ?1 AND type = 'transaction_create'`).bind(event.transactionId).first();
  if (exists === null) return { outcome: 'over_bound' };
  return { outcome: 'exists', unsent: ((unsent?.results ?? []) as { id: string }[]).map((row) => row.id) };
}
