/**
 * GET /api/filebatch/{id}/events: the live progress stream, served from the batch's Durable
 * Object while the real queue processes the file, and the stream tokens a browser opens it with.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { admin, apiKeyId, call, createMerchant, type TestMerchant } from '../helpers/api';
import {
  CARD_HEADER,
  QUEUE_TEST_TIMEOUT,
  createUnqueuedBatch,
  csv,
  deliver,
  saleRows,
  status,
  uploadOk,
  waitForStatus,
  type BatchRecord,
} from '../helpers/batch';
import { expectFailedEnvelope } from '../helpers/fuzz';

let shop: TestMerchant;
let other: TestMerchant;
beforeAll(async () => {
  shop = await createMerchant({ name: 'Stream Shop' });
  other = await createMerchant({ name: 'Other Stream Shop' });
});

interface SseEvent {
  id?: string;
  data?: string;
  retry?: string;
  comment?: string;
}

/** Splits an event-stream body into its events (blank-line separated fields). */
function parseEventStream(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.length > 0)
    .map((block) => {
      const event: SseEvent = {};
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) event.comment = line.slice(1).trim();
        const match = /^(id|data|retry): (.*)$/.exec(line);
        if (match?.[1]) event[match[1] as 'id' | 'data' | 'retry'] = match[2];
      }
      return event;
    });
}

function records(events: SseEvent[]): BatchRecord[] {
  return events.filter((event) => event.data !== undefined).map((event) => JSON.parse(event.data ?? '') as BatchRecord);
}

const ORDER = ['pending', 'queued', 'processing', 'completed'];

describe('the progress stream of a running batch', () => {
  it(
    'delivers the records of a 10,000-row batch in order, as GET answers them, and closes at completed',
    async () => {
      const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(10_000)), 'stream-10k.csv');
      const response = await call('GET', `/api/filebatch/${id}/events`, { key: shop.secretKey });
      expect(response.status).toBe(200);
      expect(response.headers.get('Content-Type')).toBe('text/event-stream; charset=utf-8');
      expect(response.headers.get('Cache-Control')).toBe('no-store');
      // The secret key is not a browser credential: no origin is granted access to this answer.
      expect(response.headers.get('Access-Control-Allow-Origin')).toBeNull();

      // The body ends by itself once the batch is completed.
      const events = parseEventStream(await response.text());
      expect(events[0]).toEqual({ retry: '3000' });
      const seen = records(events);
      const final = await status(shop.secretKey, id);
      expect(final).toMatchObject({ status: 'completed', num_lines: 10_000, processed_lines: 10_000 });
      expect(seen.at(-1)).toEqual(final);

      expect(seen.length).toBeGreaterThanOrEqual(3);
      expect(seen.some((record) => record.status === 'processing' && record.processed_lines > 0 && record.processed_lines < 10_000)).toBe(true);
      // Lines are never shown done while the status still says the batch has not started.
      expect(seen.filter((record) => record.processed_lines > 0).every((record) => ['processing', 'completed'].includes(record.status))).toBe(true);
      for (const [i, record] of seen.entries()) {
        // Every event is the batch record, field for field as the status operation shows it.
        expect(Object.keys(record).sort()).toEqual(Object.keys(final).sort());
        expect(record).toMatchObject({ id, user_id: shop.id, file_name: 'stream-10k.csv', num_lines: 10_000, created_at: final.created_at });
        const previous = seen[i - 1];
        if (!previous) continue;
        // In order: status never goes back, processed_lines never falls, and each event is a change.
        expect(ORDER.indexOf(record.status)).toBeGreaterThanOrEqual(ORDER.indexOf(previous.status));
        expect(record.processed_lines).toBeGreaterThanOrEqual(previous.processed_lines);
        expect(record.status !== previous.status || record.processed_lines !== previous.processed_lines).toBe(true);
        expect(record.updated_at >= previous.updated_at).toBe(true);
      }
      const withData = events.filter((event) => event.data !== undefined);
      expect(withData.map((event) => event.id)).toEqual(seen.map((record) => `${record.status}:${record.processed_lines}`));
      // Processed in chunks of BATCH_CHUNK_ROWS (500): every count on the way is a whole number of chunks.
      expect(seen.every((record) => record.processed_lines % 500 === 0)).toBe(true);
    },
    QUEUE_TEST_TIMEOUT,
  );

  it(
    'ends at failed, with the failure reason, when the batch fails',
    async () => {
      const { id, messages } = await createUnqueuedBatch(shop.secretKey, csv(CARD_HEADER, saleRows(3)), 'stream-fail.csv');
      const response = await call('GET', `/api/filebatch/${id}/events`, { key: shop.secretKey });
      expect(response.status).toBe(200);
      const text = response.text();
      await deliver('binbatch-chunks-dlq', [messages[0]]);
      const seen = records(parseEventStream(await text));
      expect(seen[0]).toMatchObject({ id, status: 'pending', processed_lines: 0 });
      expect(seen.at(-1)).toEqual(await status(shop.secretKey, id));
      expect(seen.at(-1)).toMatchObject({ status: 'failed', failure_reason: expect.stringContaining('chunk 0') });
    },
    QUEUE_TEST_TIMEOUT,
  );
});

describe('an ended batch', () => {
  let id: string;
  beforeAll(async () => {
    id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(2)), 'stream-ended.csv');
    await waitForStatus(shop.secretKey, id, 'completed');
  }, QUEUE_TEST_TIMEOUT);

  it('answers its final record and ends; a reconnection after the final event is told to stop (204)', async () => {
    const response = await call('GET', `/api/filebatch/${id}/events`, { key: shop.secretKey });
    const events = parseEventStream(await response.text());
    expect(records(events)).toEqual([await status(shop.secretKey, id)]);
    const lastId = events.at(-1)?.id ?? '';
    expect(lastId).toBe('completed:2');
    const again = await call('GET', `/api/filebatch/${id}/events`, { key: shop.secretKey, headers: { 'Last-Event-ID': lastId } });
    expect(again.status).toBe(204);
    expect(await again.text()).toBe('');
  });

  it("is another merchant's 404, and a public key, no credential or a wrong one is 401", async () => {
    const cases: [string | null, number][] = [
      [other.secretKey, 404],
      [shop.publicKey, 401],
      [null, 401],
      ['api_' + 'Q'.repeat(32), 401],
    ];
    for (const [key, expected] of cases) {
      const response = await call('GET', `/api/filebatch/${id}/events`, { key });
      expect(response.status, String(key)).toBe(expected);
      await expectFailedEnvelope(response);
    }
    const unknown = await call('GET', '/api/filebatch/bat_nosuchbatch000000000/events', { key: shop.secretKey });
    expect(unknown.status).toBe(404);
    await unknown.body?.cancel();
  });
});

describe('stream tokens (browsers)', () => {
  it('a token minted with the secret key opens the stream without it, from any origin, and only for its batch', async () => {
    const id = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(2)), 'stream-token.csv');
    await waitForStatus(shop.secretKey, id, 'completed');
    const minted = await call('POST', `/api/filebatch/${id}/events/token`, { key: shop.secretKey });
    expect(minted.status).toBe(201);
    const { data } = await minted.json<{ data: { token: string; expires_at: string; url: string } }>();
    expect(data.token).toMatch(/^bst_\d+_[A-Za-z0-9_-]{43}$/);
    expect(data.url).toBe(`/api/filebatch/${id}/events?token=${data.token}`);
    const life = Date.parse(data.expires_at) - Date.now();
    expect(life).toBeGreaterThan(590_000);
    expect(life).toBeLessThanOrEqual(600_000);

    // As an EventSource on another origin would ask: no Authorization header.
    const response = await call('GET', data.url, { headers: { Origin: 'https://merchant.example', Accept: 'text/event-stream' } });
    expect(response.status).toBe(200);
    expect(response.headers.get('Access-Control-Allow-Origin')).toBe('*');
    expect(response.headers.get('Access-Control-Allow-Credentials')).toBeNull();
    expect(records(parseEventStream(await response.text()))).toEqual([await status(shop.secretKey, id)]);

    // Not for another batch, even the same merchant's; not altered; not another merchant's minting.
    const second = await uploadOk(shop.secretKey, csv(CARD_HEADER, saleRows(1)), 'stream-token-2.csv');
    const refused = [
      `/api/filebatch/${second}/events?token=${data.token}`,
      `/api/filebatch/${id}/events?token=${data.token.slice(0, -2)}xx`,
      `/api/filebatch/${id}/events?token=bst_99999999999_${data.token.split('_')[2]}`,
      `/api/filebatch/${id}/events?token=${encodeURIComponent(shop.secretKey)}`,
    ];
    for (const path of refused) {
      const answer = await call('GET', path);
      expect(answer.status, path).toBe(401);
      expect((await expectFailedEnvelope(answer)).msg).toBe('invalid, revoked or expired credential (a secret API key or a stream token)');
    }
    const crossMint = await call('POST', `/api/filebatch/${id}/events/token`, { key: other.secretKey });
    expect(crossMint.status).toBe(404);
    await crossMint.body?.cancel();
    const publicMint = await call('POST', `/api/filebatch/${id}/events/token`, { key: shop.publicKey });
    expect(publicMint.status).toBe(401);
    await publicMint.body?.cancel();
    await waitForStatus(shop.secretKey, second, 'completed');
  }, QUEUE_TEST_TIMEOUT);

  it('a token stops opening the stream as soon as the key that minted it is revoked', async () => {
    const merchant = await createMerchant({ name: 'Revoking Shop' });
    const id = await uploadOk(merchant.secretKey, csv(CARD_HEADER, saleRows(1)), 'revoked-token.csv');
    await waitForStatus(merchant.secretKey, id, 'completed');
    const minted = await call('POST', `/api/filebatch/${id}/events/token`, { key: merchant.secretKey });
    const { data } = await minted.json<{ data: { url: string } }>();
    const before = await call('GET', data.url);
    expect(before.status).toBe(200);
    await before.body?.cancel();

    // A second secret key stays active: the token was bound to the first one, not to the merchant.
    const mintingKeyId = await apiKeyId(merchant.id, 'secret');
    const second = await admin('POST', `/admin/merchants/${merchant.id}/keys`, { type: 'secret' });
    expect(second.status).toBe(201);
    const revoked = await admin('DELETE', `/admin/keys/${mintingKeyId}`);
    expect(revoked.status).toBe(200);
    const after = await call('GET', data.url);
    expect(after.status).toBe(401);
    expect((await expectFailedEnvelope(after)).msg).toBe('invalid, revoked or expired credential (a secret API key or a stream token)');
  }, QUEUE_TEST_TIMEOUT);
});
