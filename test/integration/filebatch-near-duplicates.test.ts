/**
 * The duplicate guard sees content: the same rows with CRLF line endings, a BOM or no final newline
 * are the same file, refused within 24 hours (409 naming the first batch) unless meant; other rows
 * are another file.
 */
import { describe, expect, it } from 'vitest';
import { call, createMerchant } from '../helpers/api';
import { CARD_HEADER, csv, saleRows } from '../helpers/batch';

/** An upload that does not say it means a repeat (the helpers' uploads do). */
function uploadMultipart(key: string, text: string): Promise<Response> {
  const form = new FormData();
  form.append('file', new File([text], 'batch.csv', { type: 'text/csv' }));
  return call('POST', '/api/filebatch', { key, body: form });
}

describe('near-duplicate uploads', () => {
  it('refuses the same rows re-encoded (CRLF, BOM, no final newline) as the file already uploaded', async () => {
    const shop = await createMerchant({ name: 'Near Duplicates' });
    const original = csv(CARD_HEADER, saleRows(3));
    expect(original.endsWith('\n')).toBe(true);
    const first = await uploadMultipart(shop.secretKey, original);
    expect(first.status).toBe(200);
    const firstId = (await first.json<{ data: { id: string } }>()).data.id;

    const variants = {
      crlf: original.replaceAll('\n', '\r\n'),
      bom: `\ufeff${original}`,
      'no final newline': original.slice(0, -1),
      'all three': `\ufeff${original.slice(0, -1).replaceAll('\n', '\r\n')}`,
    };
    for (const [name, text] of Object.entries(variants)) {
      const answer = await uploadMultipart(shop.secretKey, text);
      expect(answer.status, name).toBe(409);
      expect((await answer.json<{ msg: string }>()).msg, name).toContain(`as batch ${firstId}`);
    }
    const other = await uploadMultipart(shop.secretKey, csv(CARD_HEADER, saleRows(4)));
    expect(other.status).toBe(200);
    await other.body?.cancel();
    const listing = await call('GET', '/api/filebatch', { key: shop.secretKey });
    expect((await listing.json<{ total_count: number }>()).total_count).toBe(2);
  });
});
