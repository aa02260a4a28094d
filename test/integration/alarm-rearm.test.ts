/**
 * Every alarm chain re-arms after a failure (lib/alarm-guard.ts): an alarm that throws is retried a
 * few times by the platform and then dropped, so a ledger shard would never be archived, an export
 * file (personal data) never deleted, an index never folded or emptied. Each object here gets a
 * storage fault, its alarm runs and fails inside, and the alarm is set again about a minute later;
 * once the fault is gone, the next alarm does the work. The hourly sweep deletes export files an
 * export's object missed.
 */
import { env } from 'cloudflare:workers';
import { runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { ALARM_RETRY_MS } from '../../src/lib/alarm-guard';
import { startExport, transactionExport } from '../../src/services/search/exports';
import { deleteExpiredExportFiles } from '../../src/services/search/export-sweep';
import { MAINTENANCE_JOBS } from '../../src/services/maintenance';
import { searchDirectory, searchKeys, weekOf } from '../../src/services/search/names';
import { utcDay } from '../../src/services/transactions/ledger';
import { call, createMerchant } from '../helpers/api';
import { apiShardName } from '../helpers/ledger';

const VISA = '4111111111111111';

// Any object stub: only its storage is used.
type Stub = DurableObjectStub<undefined>;

/** Renames `table` away (a storage fault every statement on it meets), or back. */
async function fault(stub: Stub, table: string, on: boolean): Promise<void> {
  await runInDurableObject(stub, (_instance, state) => {
    state.storage.sql.exec(on ? `ALTER TABLE ${table} RENAME TO ${table}_away` : `ALTER TABLE ${table}_away RENAME TO ${table}`);
  });
}

/**
 * Runs the alarm now and answers when the next one is set. It is armed an hour ahead first, never
 * at "now": an alarm due now is also fired by the runtime on its own, racing the run below.
 */
async function alarmAfterFailingTick(stub: Stub): Promise<{ threw: boolean; next: number | null; ranAt: number }> {
  await runInDurableObject(stub, (_instance, state) => state.storage.setAlarm(Date.now() + 3_600_000));
  const logs = vi.spyOn(console, 'log').mockImplementation(() => {});
  const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
  const ranAt = Date.now();
  const threw = await runDurableObjectAlarm(stub).then(
    () => false,
    () => true,
  );
  logs.mockRestore();
  errors.mockRestore();
  const next = await runInDurableObject(stub, (_instance, state) => state.storage.getAlarm());
  return { threw, next, ranAt };
}

function expectRearmed(result: { threw: boolean; next: number | null; ranAt: number }): void {
  expect(result.threw).toBe(false);
  expect(result.next).not.toBeNull();
  expect(Number(result.next)).toBeGreaterThanOrEqual(result.ranAt + ALARM_RETRY_MS - 1_000);
  expect(Number(result.next)).toBeLessThanOrEqual(Date.now() + ALARM_RETRY_MS + 1_000);
}

describe('an alarm whose work fails is set again, not dropped', () => {
  it('the ledger shard, the search week and directory objects, after an API sale', async () => {
    const shop = await createMerchant({ name: 'Rearm Shop' });
    const response = await call('POST', '/api/transaction', { key: shop.secretKey, body: { transaction_type: 'sale', amount: 1000, order_id: 'REARM1', cc_number: VISA, cc_expiration: '12/30' } });
    expect(response.status, await response.clone().text()).toBe(201);
    const day = utcDay(new Date());
    const shard = env.LEDGER_SHARD.getByName(apiShardName(shop.id, day));
    // The shard's archive is due (its period long over), and its archive step fails, as when R2 is down.
    await runInDurableObject(shard, (_instance, state) => {
      state.storage.sql.exec("UPDATE meta SET archive_at = '2001-01-01T00:00:00.000Z', hashes_clear_at = NULL");
    });
    const objects: [string, Stub, string][] = [
      ['ledger shard', shard, 'pages'],
      ['search week', searchKeys(env, shop.id, weekOf(day)), 'fresh'],
      ['search directory', searchDirectory(env, shop.id), 'days'],
    ];
    for (const [name, stub, table] of objects) {
      await fault(stub, table, true);
      const failing = await alarmAfterFailingTick(stub);
      expect(failing.threw, name).toBe(false);
      expectRearmed(failing);
      await fault(stub, table, false);
      // Back to its own schedule once the fault is gone: a later alarm (or none: the shard is archived), no failure.
      const healthy = await alarmAfterFailingTick(stub);
      expect(healthy.threw, name).toBe(false);
      expect(healthy.next === null || Number(healthy.next) > healthy.ranAt + ALARM_RETRY_MS + 1_000, name).toBe(true);
    }
    // The shard was archived and emptied by the alarm after the fault.
    expect(await runInDurableObject(shard, (_instance, state) => state.storage.sql.databaseSize)).toBeLessThan(20_000);
  });

  it('an export: its alarm re-arms while its storage fails, then writes the file', async () => {
    const shop = await createMerchant({ name: 'Rearm Export Shop' });
    const started = await startExport(env, shop.id, {}, () => new Date(), { arm: false });
    if (!started.ok) throw new Error('export not started');
    const stub = transactionExport(env, started.export.id);
    await fault(stub, 'pending', true);
    expectRearmed(await alarmAfterFailingTick(stub));
    await fault(stub, 'pending', false);
    await runDurableObjectAlarm(stub);
    const state = await stub.state(shop.id);
    expect(state?.status).toBe('completed');
  });
});

describe('the hourly sweep of export files (a backstop for an export object that missed its deletion)', () => {
  it('deletes the files past retention and one day, keeps the younger ones and everything outside exports/', async () => {
    const old = ['exports/0abc/exp_old1.csv', 'exports/k123/exp_old2.csv', 'exports/v9zz/exp_old3.csv'];
    for (const key of [...old, 'results/bat_keep/1.csv']) await env.FILES.put(key, 'id\n1\n');
    const now = Date.now();
    // Five days on: within BATCH_RETENTION_DAYS (10), nothing goes.
    const early = await deleteExpiredExportFiles(env, () => new Date(now + 5 * 86_400_000), 40);
    expect(early).toMatchObject({ finished: true, deleted: 0 });
    // Twelve days on, from whatever hour's starting point: every old export file, and nothing else.
    for (const hour of [0, 13]) {
      await Promise.all(old.map((key) => env.FILES.put(key, 'id\n1\n')));
      const at = new Date(now + 12 * 86_400_000);
      at.setUTCHours(hour);
      const late = await deleteExpiredExportFiles(env, () => at, 40);
      expect(late.finished).toBe(true);
      for (const key of old) expect(await env.FILES.head(key), key).toBeNull();
    }
    expect(await env.FILES.head('results/bat_keep/1.csv')).not.toBeNull();
    expect(MAINTENANCE_JOBS.some((job) => job.run === deleteExpiredExportFiles)).toBe(true);
  });
});
