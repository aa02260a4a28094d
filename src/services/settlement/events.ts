/**
 * `settlement.completed`: announced to the merchant's endpoints subscribed to it for every
 * settlement batch a run made or added to, signed and delivered like the batch events
 * (services/webhooks/delivery.ts). The event's data is the settlement batch with its totals after
 * the run; its key is the batch and that moment, so a run that adds to a batch announces it again.
 */
import type { Env } from '../../env';
import { randomId } from '../../lib/crypto';
import { isoTimestamp, type Clock } from '../../lib/time';
import type { SettlementBatch } from '../../storage/settlement';
import { insertEventWithDeliveries, markEnqueued } from '../../storage/webhooks';

export async function announceSettlement(env: Env, merchantId: string, batches: readonly SettlementBatch[], clock: Clock): Promise<number> {
  let queued = 0;
  for (const batch of batches) {
    const now = isoTimestamp(clock());
    const event = { id: randomId(24, 'evt_'), type: 'settlement.completed' as const, created_at: now, data: batch };
    const deliveries = await insertEventWithDeliveries(
      env.DB,
      { id: event.id, merchant_id: merchantId, type: event.type, batch_id: `${batch.id}@${batch.updated_at}`, payload: JSON.stringify(event), created_at: now },
      now,
    );
    if (!deliveries || deliveries.length === 0) continue;
    await env.WEBHOOK_QUEUE.sendBatch(deliveries.map((deliveryId) => ({ body: { deliveryId, attempt: 1 }, contentType: 'json' as const })));
    await markEnqueued(env.DB, deliveries, now);
    queued += deliveries.length;
  }
  return queued;
}
