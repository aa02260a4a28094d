/**
 * Exports (docs/transactions.md, "Exports"): the result of a search, of any size, as a CSV of the
 * result file's 69 columns in R2, written in the background by the export's own object
 * (durable-objects/search/export.ts) in bounded steps: each step reads pages of
 * EXPORT_PAGE_RECORDS with the search's cursor, so every transaction is written once however many
 * arrive meanwhile, and uploads parts of PART_BYTES as they fill. Memory is one part and one page.
 * `export.completed` goes to the merchant's webhook endpoints; the file is kept BATCH_RETENTION_DAYS.
 */
import type { Env } from '../../env';
import { toCsvLine } from '../../lib/batch-csv';
import { randomId } from '../../lib/crypto';
import { HALF, R2, WORKERS } from '../../lib/platform-limits';
import { isoTimestamp, type Clock } from '../../lib/time';
import { NUMERIC_RESULT_COLUMNS, RESULT_COLUMNS } from '../../schemas/transaction-columns';
import type { SearchFilters, TransactionExportState } from '../../schemas/transaction-search';
import { exportFileKey, type ExportRow } from '../../storage/search/exports';
import { releaseExportSlot, takeExportSlot } from '../../storage/running-exports';
import { insertEventWithDeliveries, markEnqueued } from '../../storage/webhooks';
import { EXPORT_PAGE_RECORDS } from './limits';
import { runSearch } from './query';
import { searchConditions, searchWindow } from './request';

const DAY_MS = 86_400_000;
/** Every part but the last is this size (R2 wants equal parts of at least 5 MiB): 10,000 parts hold 80 GB. */
export const PART_BYTES = 8 * 1024 * 1024;
if (PART_BYTES < R2.minPartBytes) throw new Error('PART_BYTES is below R2\'s smallest part');
/** Rows one step writes (about 1.3 KB of CSV each: ≈ 65 MB through one part buffer), and pages it may read. */
const ROWS_PER_STEP = 50_000;
const PAGES_PER_STEP = 200;
/** Memory of a step: one part, and one page's CSV (1,000 rows of at most ~2 KB) before it goes into the part. */
if (PART_BYTES + EXPORT_PAGE_RECORDS * 2_000 > WORKERS.isolateMemoryBytes * HALF) throw new Error('an export step exceeds the memory budget');

const NUMERIC = RESULT_COLUMNS.map((column) => NUMERIC_RESULT_COLUMNS.has(column));
const encoder = new TextEncoder();

export function transactionExport(env: Env, exportId: string) {
  return env.TRANSACTION_EXPORT.getByName(exportId);
}

/** Days an export's file is kept (BATCH_RETENTION_DAYS, default 10, as a batch's files). */
export function exportRetentionDays(env: Pick<Env, 'BATCH_RETENTION_DAYS'>): number {
  const days = Number(env.BATCH_RETENTION_DAYS);
  return Number.isFinite(days) && days > 0 ? days : 10;
}

/** The export as the API answers it. */
export function exportView(row: ExportRow): TransactionExportState {
  return {
    id: row.id,
    status: row.status,
    rows: row.rows,
    total_count: row.total,
    total_count_exact: row.totalExact,
    window: { start_date: row.query.window.from, end_date: row.query.window.to, defaulted: row.query.window.defaulted },
    created_at: row.createdAt,
    completed_at: row.completedAt,
    expires_at: row.status === 'completed' ? row.deleteAt : null,
    download_url: row.status === 'completed' ? `/api/transaction/export/${row.id}/download` : null,
    failure_reason: row.failureReason,
  };
}

export type ExportStart = { ok: true; export: TransactionExportState } | { ok: false; field: string; message: string } | { ok: false; busy: true; message: string };

/**
 * Exports of one merchant written at once: each reads its whole window through the index, so a
 * merchant (or a loop in its integration) cannot keep many of those reads going. A slot taken longer
 * ago than EXPORT_SLOT_STALE_MS stops counting: the longest export (60 million rows in steps of
 * 50,000) ends well within it, so only an export that never finished is past it.
 */
export const EXPORTS_RUNNING_MAX = 3;
export const EXPORT_SLOT_STALE_MS = 24 * 3_600_000;

/**
 * Starts an export of the search `filters` describe (the window defaulting as a search's does);
 * its alarm writes it (`options.arm` false: a test runs the steps on its own clock).
 */
export async function startExport(env: Env, merchantId: string, filters: SearchFilters, clock: Clock, options: { arm?: boolean } = {}): Promise<ExportStart> {
  const conditions = searchConditions(filters);
  if (!conditions.ok) return conditions;
  const now = clock();
  const window = searchWindow(filters.created_at, now);
  if (!window.ok) return window;
  const id = randomId(20, 'exp_');
  const startedAt = isoTimestamp(now);
  const staleBefore = isoTimestamp(new Date(now.getTime() - EXPORT_SLOT_STALE_MS));
  if (!(await takeExportSlot(env.DB, { merchantId, exportId: id, startedAt, staleBefore, max: EXPORTS_RUNNING_MAX }))) {
    return { ok: false, busy: true, message: `${EXPORTS_RUNNING_MAX} exports of this merchant are running; start another when one has completed` };
  }
  const row = await transactionExport(env, id).start({ id, merchantId, query: { conditions: conditions.value, window: window.value }, createdAt: isoTimestamp(now) }, options.arm ?? true);
  return { ok: true, export: exportView(row) };
}

export async function findExport(env: Env, merchantId: string, id: string): Promise<TransactionExportState | null> {
  const row = await transactionExport(env, id).state(merchantId);
  return row ? exportView(row) : null;
}

export type ExportDownload =
  | { ok: true; body: ReadableStream; fileName: string; size: number }
  | { ok: false; reason: 'not_found' | 'not_completed' | 'expired' };

export async function openExportDownload(env: Env, merchantId: string, id: string, clock: Clock): Promise<ExportDownload> {
  const row = await transactionExport(env, id).state(merchantId);
  if (!row) return { ok: false, reason: 'not_found' };
  if (row.status !== 'completed') return { ok: false, reason: 'not_completed' };
  if (row.deleteAt !== null && row.deleteAt <= isoTimestamp(clock())) return { ok: false, reason: 'expired' };
  const file = await env.FILES.get(exportFileKey(merchantId, id));
  if (!file) return { ok: false, reason: 'expired' };
  return { ok: true, body: file.body, fileName: `transactions-${id}.csv`, size: file.size };
}

/** The bytes of a part being filled; full parts go to the multipart upload. */
class PartWriter {
  readonly #buffer = new Uint8Array(PART_BYTES);
  #filled: number;
  #upload: R2MultipartUpload | null;

  constructor(
    readonly env: Env,
    readonly row: ExportRow,
    pending: Uint8Array,
  ) {
    this.#buffer.set(pending);
    this.#filled = pending.length;
    this.#upload = row.uploadId === null ? null : env.FILES.resumeMultipartUpload(exportFileKey(row.merchantId, row.id), row.uploadId);
  }

  async write(bytes: Uint8Array): Promise<void> {
    let from = 0;
    while (from < bytes.length) {
      const take = Math.min(bytes.length - from, PART_BYTES - this.#filled);
      this.#buffer.set(bytes.subarray(from, from + take), this.#filled);
      this.#filled += take;
      from += take;
      if (this.#filled === PART_BYTES) await this.#flush();
    }
  }

  async #flush(): Promise<void> {
    if (this.row.parts.length >= R2.maxParts - 1) throw new Error(`the export passed ${R2.maxParts} parts of ${PART_BYTES} bytes: narrow its window`);
    if (this.#upload === null) {
      this.#upload = await this.env.FILES.createMultipartUpload(exportFileKey(this.row.merchantId, this.row.id), { httpMetadata: { contentType: 'text/csv; charset=utf-8' } });
      this.row.uploadId = this.#upload.uploadId;
    }
    this.row.parts.push(await this.#upload.uploadPart(this.row.parts.length + 1, this.#buffer.subarray(0, this.#filled)));
    this.#filled = 0;
  }

  /** The file, whole: one put when it never filled a part, else the last part and the upload's completion. */
  async finish(): Promise<void> {
    const key = exportFileKey(this.row.merchantId, this.row.id);
    if (this.#upload === null) {
      await this.env.FILES.put(key, this.#buffer.subarray(0, this.#filled), { httpMetadata: { contentType: 'text/csv; charset=utf-8' } });
      return;
    }
    if (this.#filled > 0) await this.#flush();
    await this.#upload.complete(this.row.parts);
  }

  get pending(): Uint8Array {
    return this.#buffer.slice(0, this.#filled);
  }
}

/**
 * One step of an export at `now`: pages of the search from where the last step got to, written as
 * CSV, until ROWS_PER_STEP rows or the end. Answers the export's new state and the bytes not yet in
 * a part (saved by the object with it).
 */
export async function exportStep(env: Env, row: ExportRow, pending: Uint8Array, now: Date): Promise<{ row: ExportRow; pending: Uint8Array }> {
  const next: ExportRow = { ...row, parts: [...row.parts] };
  const writer = new PartWriter(env, next, pending);
  if (next.rows === 0 && next.after === null && pending.length === 0) await writer.write(encoder.encode(toCsvLine(RESULT_COLUMNS)));
  let rows = 0;
  for (let pages = 0; rows < ROWS_PER_STEP && pages < PAGES_PER_STEP; pages++) {
    const page = await runSearch(
      env,
      next.merchantId,
      { conditions: next.query.conditions, window: next.query.window, limit: EXPORT_PAGE_RECORDS, offset: 0, after: next.after, count: next.total === null },
      () => now,
    );
    if (next.total === null) {
      next.total = page.totalCount;
      next.totalExact = page.exact;
    }
    let csv = '';
    for (const record of page.records) csv += toCsvLine(RESULT_COLUMNS.map((column) => record[column]), NUMERIC);
    await writer.write(encoder.encode(csv));
    next.rows += page.records.length;
    rows += page.records.length;
    if (page.next === null) {
      await writer.finish();
      // Given back as soon as it is written; a failure here leaves the slot to go stale.
      await releaseExportSlot(env.DB, next.id).catch(() => undefined);
      next.status = 'completed';
      next.completedAt = isoTimestamp(now);
      next.deleteAt = isoTimestamp(new Date(now.getTime() + exportRetentionDays(env) * DAY_MS));
      next.after = null;
      return { row: next, pending: new Uint8Array(0) };
    }
    next.after = page.next;
  }
  return { row: next, pending: writer.pending };
}

/** An export that cannot go on: its upload dropped, its file never made. */
export async function abandonExport(env: Env, row: ExportRow, reason: string, now: Date): Promise<ExportRow> {
  if (row.uploadId !== null) await env.FILES.resumeMultipartUpload(exportFileKey(row.merchantId, row.id), row.uploadId).abort().catch(() => undefined);
  await releaseExportSlot(env.DB, row.id).catch(() => undefined);
  return { ...row, status: 'failed', failureReason: reason, uploadId: null, parts: [], deleteAt: isoTimestamp(new Date(now.getTime() + exportRetentionDays(env) * DAY_MS)) };
}

/** Deletes an export's file (its retention). */
export async function deleteExportFile(env: Env, row: ExportRow): Promise<void> {
  if (row.uploadId !== null && row.status === 'running') await env.FILES.resumeMultipartUpload(exportFileKey(row.merchantId, row.id), row.uploadId).abort().catch(() => undefined);
  await env.FILES.delete(exportFileKey(row.merchantId, row.id));
}

/** `export.completed` to the merchant's endpoints subscribed to it (once per export). */
export async function announceExport(env: Env, row: ExportRow, now: Date): Promise<void> {
  const at = isoTimestamp(now);
  const event = { id: randomId(24, 'evt_'), type: 'export.completed' as const, created_at: at, data: exportView(row) };
  const deliveries = await insertEventWithDeliveries(env.DB, { id: event.id, merchant_id: row.merchantId, type: event.type, batch_id: row.id, payload: JSON.stringify(event), created_at: at }, at);
  if (!deliveries || deliveries.length === 0) return;
  await env.WEBHOOK_QUEUE.sendBatch(deliveries.map((deliveryId) => ({ body: { deliveryId, attempt: 1 }, contentType: 'json' as const })));
  await markEnqueued(env.DB, deliveries, at);
}
