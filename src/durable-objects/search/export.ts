/**
 * One export (`transactionExport`, services/search/exports.ts; docs/transactions.md, "Exports"): its
 * query, its progress and its open upload, and the alarm that writes it in bounded steps until it
 * is complete, then keeps it BATCH_RETENTION_DAYS and deletes it with its file.
 *
 * Steps never overlap: a call that comes while a step runs (the alarm, a test's `run`) waits for that
 * step and answers its outcome, so the upload has one writer.
 */
import { DurableObject } from 'cloudflare:workers';
import type { Env } from '../../env';
import { rearmAfterFailure } from '../../lib/alarm-guard';
import { redactDigits } from '../../lib/redact';
import { abandonExport, announceExport, deleteExportFile, exportStep } from '../../services/search/exports';
import { createExport, readExport, readPending, saveProgress, type ExportQuery, type ExportRow } from '../../storage/search/exports';

/** Steps that fail in a row before the export is given up (the alarm waits 10 s more each time). */
const MAX_FAILURES = 5;
const RETRY_STEP_MS = 10_000;

type StepOutcome = { export: ExportRow | null; nextAt: number | null };

export class TransactionExport extends DurableObject<Env> {
  #running: Promise<StepOutcome> | null = null;

  /** Records the export and arms the alarm that writes it (`arm` false: a test runs its steps itself). */
  async start(job: { id: string; merchantId: string; query: ExportQuery; createdAt: string }, arm = true): Promise<ExportRow> {
    createExport(this.ctx.storage.sql, job);
    if (arm) await this.ctx.storage.setAlarm(Date.now());
    const row = readExport(this.ctx.storage.sql);
    if (!row) throw new Error('the export was not recorded');
    return row;
  }

  /** The export, for its merchant only (another merchant's is answered as absent). */
  async state(merchantId: string): Promise<ExportRow | null> {
    const row = readExport(this.ctx.storage.sql);
    return row && row.merchantId === merchantId ? row : null;
  }

  /**
   * One step at `now` (the alarm's time; tests pass their own): write the next pages, finish, announce,
   * or past retention delete the file and empty the object. Answers the export after it (null: deleted),
   * and when the alarm should come back.
   */
  async run(now: string): Promise<StepOutcome> {
    this.#running ??= this.#step(now).finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async #step(now: string): Promise<StepOutcome> {
    const sql = this.ctx.storage.sql;
    const row = readExport(sql);
    if (!row) return { export: null, nextAt: null };
    const at = new Date(now);
    if (row.deleteAt !== null && row.deleteAt <= now) {
      await deleteExportFile(this.env, row);
      await this.ctx.storage.deleteAll();
      return { export: null, nextAt: null };
    }
    if (row.status === 'running') {
      let next: { row: ExportRow; pending: Uint8Array };
      try {
        next = await exportStep(this.env, row, readPending(sql), at);
      } catch (err) {
        // The detail goes to the log; the merchant is told what to do.
        console.error(JSON.stringify({ level: 'error', event: 'export_step_failed', export: row.id, failures: row.failures + 1, error: redactDigits(err instanceof Error ? err.message : 'unknown error') }));
        const reason = `the export could not be written after ${MAX_FAILURES} attempts: start it again`;
        const failed = row.failures + 1 >= MAX_FAILURES ? await abandonExport(this.env, { ...row, failures: row.failures + 1 }, reason, at) : { ...row, failures: row.failures + 1 };
        saveProgress(sql, failed, readPending(sql));
        return { export: failed, nextAt: failed.status === 'failed' ? Date.parse(failed.deleteAt ?? now) : Date.parse(now) + RETRY_STEP_MS * failed.failures };
      }
      this.ctx.storage.transactionSync(() => saveProgress(sql, { ...next.row, failures: 0 }, next.pending));
      if (next.row.status === 'running') return { export: next.row, nextAt: Date.parse(now) };
    }
    const done = readExport(sql) as ExportRow;
    if (done.status === 'completed' && !done.announced) {
      await announceExport(this.env, done, at);
      saveProgress(sql, { ...done, announced: true }, new Uint8Array(0));
    }
    return { export: readExport(sql), nextAt: done.deleteAt === null ? null : Date.parse(done.deleteAt) };
  }

  override async alarm(): Promise<void> {
    // Announcing (D1, a queue) and deleting the file at deleteAt (R2) may fail: the alarm is set
    // again rather than dropped, so an export's file (personal data) is never kept past deleteAt.
    await rearmAfterFailure(this.ctx.storage, 'export_alarm_failed', async () => {
      const { nextAt } = await this.run(new Date().toISOString());
      if (nextAt !== null) await this.ctx.storage.setAlarm(nextAt);
    });
  }
}
