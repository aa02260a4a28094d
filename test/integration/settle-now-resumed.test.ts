/**
 * Settle now answers the batches the run it finished added to, also when the run it finishes is one
 * a crash interrupted (begun by an earlier settle-now that never returned): that earlier run's
 * batches are this call's work, even though the run ending at this call's time finds nothing left.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import type { Caller } from '../../src/env';
import { authenticateKey } from '../../src/services/merchants';
import { settlementObject } from '../../src/services/settlement/index-registry';
import { settleMerchantNow } from '../../src/services/settlement/runs';
import { processTransactions } from '../../src/services/recorded';
import { createMerchant } from '../helpers/api';

const DAY = 86_400_000;
/** A day a week from now: no cutoff of this test's merchant runs unless the test says so. */
const D = Math.floor(Date.now() / DAY) * DAY + 7 * DAY;

describe('settle now after an interrupted run', () => {
  it('answers the batches of the interrupted run it finished, with every transaction', async () => {
    const shop = await createMerchant({ name: 'Interrupted Settlement' });
    const caller = (await authenticateKey(env, shop.secretKey)) as Caller;
    let total = 0;
    for (let i = 0; i < 6; i++) {
      const [outcome] = await processTransactions(
        env,
        caller,
        [{ input: { transaction_type: 'sale', cc_number: '4111111111111111', cc_expiration: '12/30', amount: String(1000 + i) }, idempotencyKey: crypto.randomUUID() }],
        { source: 'api', ipAddress: null },
        () => new Date(D + 3_600_000 + i * 60_000),
      );
      expect(outcome?.ok).toBe(true);
      total += 1000 + i;
    }
    // The first settle now: one small step, then the process dies (nothing calls again).
    const first = await settlementObject(env, shop.id).settleNow(shop.id, new Date(D + 5 * 3_600_000).toISOString(), { entries: 1, pageEntries: 1 });
    expect(first.done).toBe(false);

    // After the restart, settle now again, later: it finishes that run first.
    const outcome = await settleMerchantNow(env, shop.id, () => new Date(D + 6 * 3_600_000));
    expect(outcome.finished).toBe(true);
    expect(outcome.batches).toHaveLength(1);
    expect(outcome.batches[0]).toMatchObject({ num_transactions: 6, amount_captured: total });
  });
});
