/**
 * A file charged twice (issue 21): the same file uploaded again charged every row again, and five
 * concurrent uploads under one Idempotency-Key made five batches. Now the key answers its first
 * batch, and the same bytes within 24 hours are refused naming the earlier batch unless the upload
 * says ?allow_duplicate=true.
 */
import { env } from 'cloudflare:workers';
import { describe, expect, it, vi } from 'vitest';
import { uploadBatch, UPLOAD_REPEAT_WINDOW_MS } from '../../src/services/batches/upload';
import { authenticateKey } from '../../src/services/merchants';
import { call, createMerchant, type TestMerchant } from '../helpers/api';
import { CARD_HEADER, csv, saleRows, QUEUE_TEST_TIMEOUT, waitForStatus } from '../helpers/batch';
import { merchantEntries } from '../helpers/ledger';

function upload(merchant: TestMerchant, text: string, { key, query = '' }: { key?: string; query?: string } = {}): Promise<Response> {
  const form = new FormData();
  form.append('file', new File([text], 'repeat.csv', { type: 'text/csv' }));
  return call('POST', `/api/filebatch${query}`, { key: merchant.secretKey, body: form, headers: key ? { 'Idempotency-Key': key } : {} });
}

async function batchIds(merchant: TestMerchant): Promise<string[]> {
  const { results } = await env.DB.prepare('SELECT id FROM batches WHERE merchant_id = ?1 ORDER BY created_at').bind(merchant.id).all<{ id: string }>();
  return results.map((row) => row.id);
}

/** Transactions recorded for the merchant, in its batches' ledger shards (and its API day shards). */
async function chargedRows(merchant: TestMerchant): Promise<number> {
  return (await merchantEntries(merchant.id)).length;
}

const file = csv(CARD_HEADER, saleRows(3));

describe('the same file uploaded again', () => {
  it(
    'is refused with a 409 naming the first batch; ?allow_duplicate=true uploads it anyway',
    async () => {
      const shop = await createMerchant({ name: 'Repeat Shop' });
      const first = await upload(shop, file);
      expect(first.status).toBe(200);
      const firstId = (await first.json<{ data: { id: string } }>()).data.id;
      await waitForStatus(shop.secretKey, firstId, 'completed');

      const again = await upload(shop, file);
      expect(again.status).toBe(409);
      expect(await again.json()).toEqual({
        status: 'failed',
        msg: `this file was already uploaded in the last 24 hours as batch ${firstId}; to charge its rows again, upload it with ?allow_duplicate=true`,
        data: null,
      });
      expect(await batchIds(shop)).toEqual([firstId]);
      // The refused copy left nothing in R2 either.
      expect((await env.FILES.list({ prefix: 'uploads/' })).objects.filter((object) => !object.key.includes(firstId))).toEqual([]);

      // Another merchant's identical file is its own.
      const other = await createMerchant({ name: 'Other Repeat Shop' });
      expect((await upload(other, file)).status).toBe(200);

      const meant = await upload(shop, file, { query: '?allow_duplicate=true' });
      expect(meant.status).toBe(200);
      const meantId = (await meant.json<{ data: { id: string } }>()).data.id;
      expect(meantId).not.toBe(firstId);
      await waitForStatus(shop.secretKey, meantId, 'completed');
      expect(await chargedRows(shop)).toBe(6);
    },
    QUEUE_TEST_TIMEOUT,
  );

  it('under the same Idempotency-Key answers the first upload again; another file under it is a 409', async () => {
    const shop = await createMerchant({ name: 'Keyed Repeat Shop' });
    const first = await upload(shop, file, { key: 'upload-2026-11-24' });
    expect(first.status).toBe(200);
    expect(first.headers.get('Idempotent-Replayed')).toBeNull();
    const firstBody = await first.json<{ data: { id: string } }>();

    const replay = await upload(shop, file, { key: 'upload-2026-11-24' });
    expect(replay.status, await replay.clone().text()).toBe(200);
    expect(replay.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await replay.json()).toEqual(firstBody);

    const otherFile = await upload(shop, csv(CARD_HEADER, saleRows(4)), { key: 'upload-2026-11-24' });
    expect(otherFile.status).toBe(409);
    expect((await otherFile.json<{ msg: string }>()).msg).toBe(`idempotency-key: already used in the last 24 hours for another file (batch ${firstBody.data.id})`);
    expect(await batchIds(shop)).toEqual([firstBody.data.id]);
  });

  it('an upload under a key whose batch appears between its two reads repeats that batch (no 409)', async () => {
    const shop = await createMerchant({ name: 'Between Reads Shop' });
    const first = await upload(shop, file, { key: 'between-reads' });
    expect(first.status).toBe(200);
    const firstId = (await first.json<{ data: { id: string } }>()).data.id;
    // The second upload's read by key finds nothing, as when the first upload's batch is written
    // just after it; its read by content then finds that batch.
    const prepare = env.DB.prepare.bind(env.DB);
    let hidden = false;
    const spy = vi.spyOn(env.DB, 'prepare').mockImplementation((query: string) => {
      const statement = prepare(query);
      if (hidden || !query.startsWith('SELECT * FROM batches WHERE merchant_id = ?1 AND upload_idempotency_key = ?2')) return statement;
      hidden = true;
      return { bind: () => ({ first: async () => null }) } as unknown as D1PreparedStatement;
    });
    try {
      const again = await upload(shop, file, { key: 'between-reads' });
      expect(hidden).toBe(true);
      expect(again.status).toBe(200);
      expect(again.headers.get('Idempotent-Replayed')).toBe('true');
      expect((await again.json<{ data: { id: string } }>()).data.id).toBe(firstId);
    } finally {
      spy.mockRestore();
    }
    expect(await batchIds(shop)).toEqual([firstId]);
  });

  it('five concurrent uploads under one Idempotency-Key make one batch', async () => {
    const shop = await createMerchant({ name: 'Concurrent Repeat Shop' });
    const answers = await Promise.all(Array.from({ length: 5 }, () => upload(shop, file, { key: 'one-key' })));
    const bodies = await Promise.all(answers.map((answer) => answer.json<{ data: { id: string } }>()));
    expect(answers.map((answer) => answer.status)).toEqual([200, 200, 200, 200, 200]);
    expect(new Set(bodies.map((body) => body.data.id)).size).toBe(1);
    expect(answers.filter((answer) => answer.headers.get('Idempotent-Replayed') === 'true')).toHaveLength(4);
    expect(await batchIds(shop)).toHaveLength(1);
    // The four copies' files are gone: every stored upload belongs to a batch.
    const { results } = await env.DB.prepare('SELECT id FROM batches').all<{ id: string }>();
    const known = new Set(results.map((row) => row.id));
    const stored = (await env.FILES.list({ prefix: 'uploads/' })).objects.map((object) => object.key);
    expect(stored.filter((key) => ![...known].some((id) => key.includes(id)))).toEqual([]);
  });

  it('five uploads under one key that all pass the key check before any batch exists still make one batch', async () => {
    const shop = await createMerchant({ name: 'Racing Repeat Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('no caller');
    // Each file's bytes are held until all five uploads are reading theirs: every one finds no
    // batch under the key, and only the unique index on (merchant, key) can keep them to one.
    let release = () => {};
    const allReading = new Promise<void>((resolve) => (release = resolve));
    let reading = 0;
    const source = () => ({
      fileName: 'race.csv',
      bytes: (async function* () {
        if (++reading === 5) release();
        await allReading;
        yield new TextEncoder().encode(file);
      })(),
    });
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => uploadBatch(env, caller, source(), null, () => new Date(), { idempotencyKey: 'race' })));
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true, true, true]);
    expect(new Set(outcomes.map((outcome) => (outcome.ok ? outcome.batch.id : '?'))).size).toBe(1);
    expect(outcomes.filter((outcome) => outcome.ok && outcome.replayed)).toHaveLength(4);
    expect(await batchIds(shop)).toHaveLength(1);
  });

  it(
    'six concurrent identical uploads without an Idempotency-Key make one batch; the others are the 409 naming it',
    async () => {
      const shop = await createMerchant({ name: 'Six At Once Shop' });
      const answers = await Promise.all(Array.from({ length: 6 }, () => upload(shop, file)));
      const statuses = answers.map((answer) => answer.status).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409, 409]);
      const ids = await batchIds(shop);
      expect(ids).toHaveLength(1);
      const refused = await Promise.all(answers.filter((answer) => answer.status === 409).map((answer) => answer.json<{ msg: string }>()));
      for (const body of refused) expect(body.msg).toBe(`this file was already uploaded in the last 24 hours as batch ${ids[0]}; to charge its rows again, upload it with ?allow_duplicate=true`);
      await waitForStatus(shop.secretKey, ids[0] ?? '', 'completed');
      expect(await chargedRows(shop)).toBe(3);
      // Every stored upload belongs to a batch: the refused copies' files are gone.
      const { results } = await env.DB.prepare('SELECT id FROM batches').all<{ id: string }>();
      const known = new Set(results.map((row) => row.id));
      const stored = (await env.FILES.list({ prefix: 'uploads/' })).objects.map((object) => object.key);
      expect(stored.filter((key) => ![...known].some((id) => key.includes(id)))).toEqual([]);
    },
    QUEUE_TEST_TIMEOUT,
  );

  it('six identical uploads that all pass the duplicate check before any batch exists still make one batch', async () => {
    const shop = await createMerchant({ name: 'Racing Duplicate Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('no caller');
    // Each file's bytes are held until all six uploads are reading theirs: every one finds no
    // earlier batch, and only the claim the batch row is written with can keep them to one.
    let release = () => {};
    const allReading = new Promise<void>((resolve) => (release = resolve));
    let reading = 0;
    const source = () => ({
      fileName: 'race.csv',
      bytes: (async function* () {
        if (++reading === 6) release();
        await allReading;
        yield new TextEncoder().encode(file);
      })(),
    });
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => uploadBatch(env, caller, source(), null, () => new Date())));
    const made = outcomes.flatMap((outcome) => (outcome.ok ? [outcome.batch.id] : []));
    expect(made).toHaveLength(1);
    expect(outcomes.filter((outcome) => !outcome.ok).map((outcome) => !outcome.ok && outcome.reason)).toEqual(Array.from({ length: 5 }, () => 'duplicate_file'));
    expect(await batchIds(shop)).toEqual(made);
  });

  it('six concurrent identical uploads with ?allow_duplicate=true make six batches, and the next plain one names the last', async () => {
    const shop = await createMerchant({ name: 'Meant Six Times Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('no caller');
    // Through the upload service (the batches are not started: this test is about who is accepted).
    const source = () => ({ fileName: 'meant.csv', bytes: (async function* () { yield new TextEncoder().encode(file); })() });
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => uploadBatch(env, caller, source(), null, () => new Date(), { allowDuplicate: true })));
    expect(outcomes.map((outcome) => outcome.ok)).toEqual([true, true, true, true, true, true]);
    const ids = await batchIds(shop);
    expect(ids).toHaveLength(6);
    const again = await upload(shop, file);
    expect(again.status).toBe(409);
    const holder = await env.DB.prepare('SELECT batch_id FROM upload_fingerprints WHERE merchant_id = ?1').bind(shop.id).first<{ batch_id: string }>();
    expect(ids).toContain(holder?.batch_id);
    expect((await again.json<{ msg: string }>()).msg).toContain(`as batch ${holder?.batch_id};`);
  });

  it('after 24 hours the same file and the same key start a new batch', async () => {
    const shop = await createMerchant({ name: 'Day Later Shop' });
    const caller = await authenticateKey(env, shop.secretKey);
    if (!caller) throw new Error('no caller');
    const start = Date.UTC(2026, 10, 24, 6, 0, 0);
    const at = (ms: number) => () => new Date(ms);
    const source = () => ({ fileName: 'day.csv', bytes: (async function* () { yield new TextEncoder().encode(file); })() });
    const first = await uploadBatch(env, caller, source(), null, at(start), { idempotencyKey: 'daily' });
    expect(first).toMatchObject({ ok: true, replayed: false });
    const justBefore = await uploadBatch(env, caller, source(), null, at(start + UPLOAD_REPEAT_WINDOW_MS - 1), { idempotencyKey: 'daily' });
    expect(justBefore).toMatchObject({ ok: true, replayed: true, batch: { id: first.ok ? first.batch.id : '?' } });
    const unkeyed = await uploadBatch(env, caller, source(), null, at(start + UPLOAD_REPEAT_WINDOW_MS - 1));
    expect(unkeyed).toMatchObject({ ok: false, reason: 'duplicate_file' });

    const dayLater = await uploadBatch(env, caller, source(), null, at(start + UPLOAD_REPEAT_WINDOW_MS), { idempotencyKey: 'daily' });
    expect(dayLater).toMatchObject({ ok: true, replayed: false });
    expect(dayLater.ok && first.ok && dayLater.batch.id !== first.batch.id).toBe(true);
  });
});
