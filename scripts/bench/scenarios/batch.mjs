// Scenario 6: batch files of 1,000, 10,000, 100,000 and (full run only) 500,000 generated rows, the
// largest file accepted (BATCH_MAX_ROWS), through the whole pipeline: multipart upload (POST
// /api/filebatch), queue processing until `completed` (GET /api/filebatch/{id} polled every 100 ms),
// result download (GET .../download, streamed and counted), and the peak RSS of the workerd
// processes from the upload's start to the download's end. One more 100,000-row file runs for a
// merchant with the enhanced BIN lookup on, created through the admin API as a new user would.
import { callJson, mapLimit, requireRoute, SECRET_KEY } from '../http.mjs';
import { cardNumber, random } from '../dataset.mjs';
import { HeapSampler } from '../profile.mjs';

const COLUMNS = [
  'transaction_type', 'amount', 'cc_number', 'cc_expiration', 'cc_cvc',
  'ach_account_number', 'ach_routing_number', 'ach_account_type', 'ach_sec_code',
  'customer_id', 'order_id', 'description', 'email_address',
  'billing_first_name', 'billing_last_name', 'billing_postal_code', 'billing_country',
];
// Routing numbers that pass the ABA checksum (public, of large US banks).
const ROUTING = ['021000021', '011000015', '026009593', '121000358', '071000013'];
const TYPES = ['sale', 'sale', 'sale', 'sale', 'authorize', 'authorize', 'credit'];
const CUSTOMERS = 50;
/** Every fifth vault customer pays by ACH. */
const isAchCustomer = (index) => index % 5 === 4;

/**
 * `rows` data rows: about 65% card, 20% ACH, 10% vault customer, 5% invalid (bad Luhn, expired
 * card, missing amount, bad routing number). Every field quoted, as SPEC.md's format says.
 * `receipts`: every row also asks for an email receipt (email_receipt true, to its email_address);
 * a number n: every n-th row asks for one (the others leave the column empty).
 */
export function generateBatchCsv(rows, { bins, customers, seed = 1, receipts = false }) {
  const achCustomers = new Set(customers.filter((_, i) => isAchCustomer(i)));
  const next = random(seed);
  const pick = (list) => list[Math.floor(next() * list.length)];
  const q = (v) => `"${v}"`;
  const columns = receipts ? [...COLUMNS, 'email_receipt'] : COLUMNS;
  const lines = [columns.map(q).join(',')];
  let invalid = 0;
  for (let i = 0; i < rows; i += 1) {
    const row = Object.fromEntries(columns.map((c) => [c, '']));
    if (receipts) row.email_receipt = receipts === true || i % receipts === 0 ? 'true' : '';
    row.transaction_type = pick(TYPES);
    row.amount = String(100 + Math.floor(next() * 99_900));
    row.order_id = `ORD${String(i).padStart(8, '0')}`;
    row.description = 'BenchOrder';
    row.email_address = `buyer${i % 997}@example.com`;
    row.billing_first_name = 'Ana';
    row.billing_last_name = 'Bench';
    row.billing_postal_code = String(10000 + (i % 89999));
    row.billing_country = 'US';
    const kind = next();
    if (kind < 0.65) {
      row.cc_number = cardNumber(pick(bins), next);
      row.cc_expiration = '12/30';
      // American Express (34/37) has a 4-digit CVC, every other brand 3.
      const amex = /^3[47]/.test(row.cc_number);
      row.cc_cvc = String(amex ? 1000 + Math.floor(next() * 9000) : 100 + Math.floor(next() * 900));
    } else if (kind < 0.85) {
      // ACH has no authorization hold (the engine refuses an ACH authorize): sales and credits only.
      if (row.transaction_type === 'authorize') row.transaction_type = 'sale';
      row.ach_account_number = String(10_000_000 + Math.floor(next() * 89_999_999));
      row.ach_routing_number = pick(ROUTING);
      row.ach_account_type = next() < 0.7 ? 'checking' : 'savings';
      row.ach_sec_code = pick(['WEB', 'CCD', 'PPD']);
    } else if (kind < 0.95) {
      row.customer_id = pick(customers);
      if (achCustomers.has(row.customer_id) && row.transaction_type === 'authorize') row.transaction_type = 'sale';
    } else {
      invalid += 1;
      const flaw = i % 4;
      row.cc_number = cardNumber(pick(bins), next);
      row.cc_expiration = '12/30';
      if (flaw === 0) row.cc_number = row.cc_number.slice(0, 15) + String((Number(row.cc_number[15]) + 1) % 10);
      else if (flaw === 1) row.cc_expiration = '01/20';
      else if (flaw === 2) row.amount = '';
      else {
        row.cc_number = '';
        row.cc_expiration = '';
        row.ach_account_number = '12345678';
        row.ach_routing_number = '123456789';
        row.ach_account_type = 'checking';
        row.ach_sec_code = 'WEB';
      }
    }
    lines.push(columns.map((c) => q(row[c])).join(','));
  }
  return { text: lines.join('\n') + '\n', invalid };
}

/** Vault customers the files charge (created once per merchant key; reused when the lookup scenario made them). */
export async function ensureCustomers(ctx, bins, auth = SECRET_KEY) {
  // Other merchants' keys are new on each server, so their customers are remembered by key.
  ctx.data.batchCustomersByKey ??= {};
  const known = auth === SECRET_KEY ? ctx.data.batchCustomers : ctx.data.batchCustomersByKey[auth];
  if (known) return known;
  const next = random(17);
  const ids = Array.from({ length: CUSTOMERS }, (_, i) => `batch${String(i).padStart(4, '0')}`);
  const created = await mapLimit(ids, 8, (id, i) =>
    callJson(ctx, 'POST', '/api/vault/customer', isAchCustomer(i)
      ? { id, payment_method: { ach: { account_number: '000123456789', routing_number: '021000021', account_type: 'checking', sec_code: 'WEB' } } }
      : { id, payment_method: { card: { number: cardNumber(bins[i % bins.length], next), expiration: '12/30' } } }, { auth }));
  requireRoute(created[0], 'POST /api/vault/customer');
  for (const r of created) if (r.status !== 201 && r.status !== 200) throw new Error(`vault: ${r.status} ${JSON.stringify(r.body)}`);
  if (auth === SECRET_KEY) ctx.data.batchCustomers = ids;
  else ctx.data.batchCustomersByKey[auth] = ids;
  return ids;
}

/** Tallies the `response` column of a result CSV stream; counts bytes and lines. */
async function download(ctx, id, auth = SECRET_KEY) {
  const started = performance.now();
  const response = await fetch(`${ctx.url}/api/filebatch/${id}/download`, { headers: { authorization: auth } });
  if (!response.ok || !response.body) throw new Error(`download: HTTP ${response.status} ${await response.text()}`);
  let bytes = 0;
  let lines = 0;
  let responseColumn = -1;
  let textColumn = -1;
  const errorTexts = {};
  let carry = '';
  const tally = {};
  const decoder = new TextDecoder();
  for await (const chunk of response.body) {
    bytes += chunk.byteLength;
    const text = carry + decoder.decode(chunk, { stream: true });
    const parts = text.split('\n');
    carry = parts.pop();
    for (const line of parts) {
      lines += 1;
      // Result fields hold no quotes or commas of their own in the columns read here; split is enough.
      const cells = line.split(',').map((c) => c.replace(/^"|"$/g, ''));
      if (responseColumn < 0) {
        responseColumn = cells.indexOf('response');
        textColumn = cells.indexOf('processor_response_text');
        continue;
      }
      const response = cells[responseColumn] ?? '?';
      tally[response] = (tally[response] ?? 0) + 1;
      if (response !== 'approved') {
        // Which fields were refused (validation texts name them), without any value.
        const reason = (cells[textColumn] ?? '').split(';').map((part) => part.split(':')[0].trim()).join('; ');
        errorTexts[reason] = (errorTexts[reason] ?? 0) + 1;
      }
    }
  }
  if (carry) lines += 1;
  return { seconds: (performance.now() - started) / 1000, bytes, lines, tally, errorTexts };
}

/**
 * Uploads a generated file of `rows` rows, waits for `completed`, downloads the results. Options:
 * `auth` (another merchant's secret key), `pollMs` (status polling interval), `label` (row names),
 * `note` (added to the upload → completed row), `allowDuplicate` (the same file again within 24 hours).
 */
async function runFile(ctx, rows, bins, customers, { auth = SECRET_KEY, pollMs = 100, label: named, note: extraNote = '', receipts = false, allowDuplicate = false } = {}) {
  const { text, invalid } = generateBatchCsv(rows, { bins, customers, seed: rows, receipts });
  const bytes = Buffer.byteLength(text);
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/csv' }), `bench-${rows}.csv`);
  ctx.rss.reset();
  const rssBefore = ctx.rss.currentMb();
  // The isolate's own heap, beside workerd's RSS (which also holds the D1/R2/queue simulators).
  const heap = ctx.profiling ? null : await HeapSampler.connect(ctx.server.inspectorPort);

  const started = performance.now();
  const upload = await fetch(`${ctx.url}/api/filebatch${allowDuplicate ? '?allow_duplicate=true' : ''}`, {
    method: 'POST', headers: { authorization: auth }, body: form, signal: AbortSignal.timeout(600_000),
  });
  const uploadBody = await upload.json().catch(() => null);
  const uploadSeconds = (performance.now() - started) / 1000;
  requireRoute({ status: upload.status, body: uploadBody }, 'POST /api/filebatch');
  if (uploadBody?.status !== 'success') throw new Error(`upload of ${rows} rows: HTTP ${upload.status} ${JSON.stringify(uploadBody)}`);
  const id = uploadBody.data.id;

  // Generous ceiling: 60 s + 20 ms per row (100k rows: 34 min) before giving up on a stuck batch.
  const deadline = Date.now() + 60_000 + rows * 20;
  let record;
  for (;;) {
    const status = await callJson(ctx, 'GET', `/api/filebatch/${id}`, undefined, { auth });
    record = status.body;
    if (record?.status === 'completed' || record?.status === 'failed') break;
    if (Date.now() > deadline) throw new Error(`batch of ${rows} rows not completed after ${Math.round((Date.now() - (deadline - 60_000 - rows * 20)) / 1000)} s: ${JSON.stringify(record)}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
  const completedSeconds = (performance.now() - started) / 1000;
  if (record.status !== 'completed') throw new Error(`batch of ${rows} rows ended ${record.status}: ${JSON.stringify(record)}`);
  const result = await download(ctx, id, auth);
  const peak = ctx.rss.peakMb();
  const heapPeak = heap ? await heap.peakMb() : null;
  heap?.close();
  const label = named ?? `batch ${rows.toLocaleString('en-US')} rows`;
  const mb = bytes / 1e6;
  const resultOk = result.lines === record.num_lines + 1;
  const tally = Object.entries(result.tally).map(([k, v]) => `${k} ${v}`).join(', ');
  const shared = {
    rows, batchId: id, numLines: record.num_lines, peakRssMb: peak, rssBeforeMb: rssBefore,
    peakHeapTotalMb: heapPeak?.totalMb ?? null, peakHeapUsedMb: heapPeak?.usedMb ?? null,
  };
  return [
    { scenario: `${label}: upload`, unit: 'MB/s', rate: mb / uploadSeconds, seconds: uploadSeconds, megabytes: mb, ...shared,
      note: `${mb.toFixed(1)} MB multipart, ${invalid} invalid rows` },
    { scenario: `${label}: upload → completed`, unit: 'rows/s', rate: rows / completedSeconds, seconds: completedSeconds, ...shared,
      note: `processed_lines ${record.processed_lines} of num_lines ${record.num_lines}` +
        (heapPeak ? `; isolate heap peak ${heapPeak.totalMb.toFixed(0)} MB (used ${heapPeak.usedMb.toFixed(0)} MB)` : '') + extraNote },
    { scenario: `${label}: download`, unit: 'MB/s', rate: result.bytes / 1e6 / result.seconds, seconds: result.seconds,
      megabytes: result.bytes / 1e6, resultLines: result.lines, tally: result.tally, notApprovedBy: result.errorTexts, ...shared,
      note: `${(result.bytes / 1e6).toFixed(1)} MB, ${result.lines - 1} result rows${resultOk ? '' : ' (≠ num_lines!)'}: ${tally}` },
  ];
}

/**
 * Uploads a file of `rows` rows and answers as soon as it is accepted (the contention run measures
 * other requests while it is processed): { id, auth, done() } where done() waits for `completed`.
 */
export async function startBatchFile(ctx, rows, { auth = SECRET_KEY } = {}) {
  const bins = fileBins(ctx);
  const customers = await ensureCustomers(ctx, bins, auth);
  const { text } = generateBatchCsv(rows, { bins, customers, seed: rows });
  const form = new FormData();
  form.append('file', new Blob([text], { type: 'text/csv' }), `contention-${rows}.csv`);
  const upload = await fetch(`${ctx.url}/api/filebatch`, { method: 'POST', headers: { authorization: auth }, body: form, signal: AbortSignal.timeout(600_000) });
  const body = await upload.json().catch(() => null);
  if (body?.status !== 'success') throw new Error(`upload of ${rows} rows: HTTP ${upload.status} ${JSON.stringify(body)}`);
  const id = body.data.id;
  const status = async () => (await callJson(ctx, 'GET', `/api/filebatch/${id}`, undefined, { auth })).body;
  return {
    id,
    status,
    async done(pollMs = 500) {
      const deadline = Date.now() + 60_000 + rows * 20;
      for (;;) {
        const record = await status();
        if (record?.status === 'completed') return record;
        if (record?.status === 'failed' || Date.now() > deadline) throw new Error(`batch ${id}: ${JSON.stringify(record)}`);
        await new Promise((r) => setTimeout(r, pollMs));
      }
    },
  };
}

/** One more file of `rows` rows (the cost run): the figures runFile answers. */
export async function runBatchFile(ctx, rows, options = {}) {
  const bins = (ctx.data.bins ?? []).filter((b) => b.country).map((b) => b.bin).slice(0, 50_000);
  return runFile(ctx, rows, bins, await ensureCustomers(ctx, bins, options.auth), options);
}

/** The imported BINs the files use (with a country), or a few well-known ones without an import. */
export function fileBins(ctx) {
  const bins = (ctx.data.bins ?? []).filter((b) => b.country).map((b) => b.bin).slice(0, 50_000);
  if (bins.length === 0) bins.push('411111', '555555', '400000');
  return bins;
}

/** A console session's cookie for `auth` (the summary, with the receipts' counts, is the console's). */
async function consoleCookie(ctx, auth) {
  const response = await fetch(`${ctx.url}/console/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: ctx.url },
    body: JSON.stringify({ api_key: auth }),
  });
  await response.arrayBuffer();
  if (response.status !== 201) throw new Error(`console sign-in: HTTP ${response.status}`);
  return (response.headers.get('set-cookie') ?? '').split(';')[0];
}

/** The batch's receipts by state (GET /console/batches/{id}/summary). */
export async function receiptCounts(ctx, id, cookie) {
  const response = await fetch(`${ctx.url}/console/batches/${id}/summary`, { headers: { cookie } });
  const body = await response.json().catch(() => null);
  if (!response.ok || !body?.data?.receipts) throw new Error(`summary of ${id}: HTTP ${response.status} ${JSON.stringify(body)}`);
  return body.data.receipts;
}

/** Seconds the receipts scenario watches sending after the batch completed. */
const RECEIPTS_WATCH_S = 30;

/** Files of these sizes run on a fresh server each; 500,000 rows (BATCH_MAX_ROWS) in full runs only. */
export const BATCH_SIZES = [1_000, 10_000, 100_000, 500_000];

export const batchScenarios = [
  ...BATCH_SIZES.map((rows) => ({
    name: `batch ${rows.toLocaleString('en-US')} rows`,
    group: 'batch',
    enabled: (settings) => settings.batchSizes.includes(rows),
    async run(ctx) {
      if (ctx.freshServer) await ctx.freshServer(`batch of ${rows.toLocaleString('en-US')} rows`);
      const probe = await callJson(ctx, 'GET', '/api/filebatch/bench-probe');
      requireRoute(probe, 'GET /api/filebatch/{id}');
      const bins = fileBins(ctx);
      const customers = await ensureCustomers(ctx, bins);
      return runFile(ctx, rows, bins, customers);
    },
  })),
  {
    // Issue 32: the same 100,000-row file (10,000 with --quick) with email_receipt on every row,
    // against the file without it above: the batch is not slowed (receipts are queued with each
    // chunk's records, one outbox row per chunk, and sent by the shard's alarm, paced behind
    // processing at RECEIPT_SENDS_PER_MINUTE). Then the sending is watched for RECEIPTS_WATCH_S.
    name: 'batch 100,000 rows, receipts on',
    group: 'batch',
    enabled: (settings) => settings.batchSizes.includes(100_000) || settings.quick,
    async run(ctx) {
      const rows = ctx.settings.quick ? 10_000 : 100_000;
      if (ctx.freshServer) await ctx.freshServer(`batch of ${rows.toLocaleString('en-US')} rows with receipts on`);
      const bins = fileBins(ctx);
      const customers = await ensureCustomers(ctx, bins);
      const label = `batch ${rows.toLocaleString('en-US')} rows, receipts on`;
      const figures = await runFile(ctx, rows, bins, customers, { receipts: true, label, note: '; email_receipt true on every row' });
      const id = figures[0]?.batchId;
      const cookie = await consoleCookie(ctx, SECRET_KEY);
      const atCompletion = await receiptCounts(ctx, id, cookie);
      const watchStarted = performance.now();
      let counts = atCompletion;
      while (counts.queued > 0 && performance.now() - watchStarted < RECEIPTS_WATCH_S * 1000) {
        await new Promise((r) => setTimeout(r, 2_000));
        counts = await receiptCounts(ctx, id, cookie);
      }
      const watched = (performance.now() - watchStarted) / 1000;
      const sent = counts.sent - atCompletion.sent;
      const total = counts.queued + counts.sent + counts.failed;
      return [
        ...figures,
        {
          scenario: `${label}: receipts sent after completion`,
          unit: 'receipts/s',
          rate: watched > 0 ? sent / watched : 0,
          seconds: watched,
          rows,
          batchId: id,
          receipts: { total, atCompletion, after: counts },
          note:
            `${total.toLocaleString('en-US')} receipts queued (one per approved row); at completion ${atCompletion.sent.toLocaleString('en-US')} sent, ` +
            `${atCompletion.queued.toLocaleString('en-US')} waiting; ${watched.toFixed(0)} s later ${counts.sent.toLocaleString('en-US')} sent, ` +
            `${counts.queued.toLocaleString('en-US')} waiting, ${counts.failed} failed (paced at RECEIPT_SENDS_PER_MINUTE)`,
        },
      ];
    },
  },
  {
    // As a new user would try it: a merchant created through the admin API with the enhanced BIN
    // lookup on, its own vault customers, then the same 100,000-row file.
    name: 'batch 100,000 rows, enhanced lookup',
    group: 'batch',
    enabled: (settings) => settings.batchSizes.includes(100_000),
    async run(ctx) {
      if (ctx.freshServer) await ctx.freshServer('batch of 100,000 rows for a merchant with the enhanced lookup');
      const merchant = await callJson(ctx, 'POST', '/admin/merchants', { name: 'Enhanced Bench Merchant', enhanced_bin_lookup: true, surcharge_rate_bps: 300 }, { auth: ctx.adminToken });
      requireRoute(merchant, 'POST /admin/merchants');
      if (merchant.status !== 201) throw new Error(`admin: ${merchant.status} ${JSON.stringify(merchant.body)}`);
      const auth = merchant.body.data.secret_key;
      const bins = fileBins(ctx);
      const customers = await ensureCustomers(ctx, bins, auth);
      return runFile(ctx, 100_000, bins, customers, {
        auth,
        label: 'batch 100,000 rows, enhanced lookup',
        note: '; a new merchant (admin API) with enhanced_bin_lookup on',
      });
    },
  },
];
