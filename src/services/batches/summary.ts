/**
 * The summary of a completed batch for the console: how many rows were approved, declined or in
 * error, and the first refused rows with their line numbers and reasons. Computed in the Worker by
 * reading the result parts as a stream (the same stream as the download), so no browser ever
 * loads a whole result file and the Worker holds one chunk's bytes at a time.
 */
import type { Env } from '../../env';
import type { Clock } from '../../lib/time';
import { readCsv } from '../../lib/rfc4180-reader';
import { RESULT_COLUMNS } from '../../schemas/transaction-columns';
import { openDownload } from './results';
import { merchantBatchReceiptCounts, type ReceiptCounts } from '../receipts/receipts';

/** How many refused rows the summary lists (the download has them all). */
export const SUMMARY_REFUSED_ROWS = 20;

export interface RefusedRow {
  /** The row's line in the uploaded file (header = line 1). */
  line: number | null;
  response: 'declined' | 'error';
  response_code: number | null;
  reason: string;
}

export interface BatchSummary {
  rows: number;
  approved: number;
  /** Of the approved rows, authorizations awaiting capture (status authorized). */
  authorized: number;
  declined: number;
  error: number;
  first_refused: RefusedRow[];
  /** The batch's email receipts by state, as of now (sending is paced behind processing). */
  receipts: ReceiptCounts;
}

export type SummaryOutcome = { ok: true; summary: BatchSummary } | { ok: false; reason: 'not_found' | 'not_completed' | 'expired' };

const column = (name: (typeof RESULT_COLUMNS)[number]) => RESULT_COLUMNS.indexOf(name);
const RESPONSE = column('response');
const RESPONSE_CODE = column('response_code');
const IDEMPOTENCY_KEY = column('idempotency_key');
const REASON = column('processor_response_text');
const STATUS = column('status');

export async function summarizeBatch(env: Env, merchantId: string, id: string, clock: Clock): Promise<SummaryOutcome> {
  const download = await openDownload(env, merchantId, id, clock);
  if (!download.ok) return download;
  const summary: BatchSummary = { rows: 0, approved: 0, authorized: 0, declined: 0, error: 0, first_refused: [], receipts: { queued: 0, sent: 0, failed: 0 } };
  let header = true;
  // A result file is at most a few hundred bytes per row of an upload that BATCH_MAX_BYTES bounded.
  for await (const record of readCsv(download.body, Number.MAX_SAFE_INTEGER)) {
    if (header) {
      header = false;
      continue;
    }
    const response = record.fields[RESPONSE];
    summary.rows++;
    if (response === 'approved') {
      summary.approved++;
      if (record.fields[STATUS] === 'authorized') summary.authorized++;
      continue;
    }
    const refused = response === 'declined' ? 'declined' : 'error';
    summary[refused]++;
    if (summary.first_refused.length < SUMMARY_REFUSED_ROWS) {
      // A batch row's idempotency key is `{batch id}:{line}` (services/batches/chunks.ts).
      const line = Number((record.fields[IDEMPOTENCY_KEY] ?? '').split(':').pop());
      const code = Number(record.fields[RESPONSE_CODE]);
      summary.first_refused.push({
        line: Number.isInteger(line) && line > 0 ? line : null,
        response: refused,
        response_code: Number.isInteger(code) && record.fields[RESPONSE_CODE] !== '' ? code : null,
        reason: record.fields[REASON] || refused,
      });
    }
  }
  // Receipts are counted where they are queued: in the batch's ledger shard.
  summary.receipts = (await merchantBatchReceiptCounts(env, merchantId, id)) ?? summary.receipts;
  return { ok: true, summary };
}
