/**
 * The hourly cron's jobs, run one after another by `runMaintenance`. Each runs on its own: a job
 * that throws is logged and the next one still runs. Each goes on, page after page, until its work
 * is done or its budget of `maxStatements` D1 statements (R2 and object calls counted too) is
 * spent, and reports whether it got to the end; what it leaves, the next hour's run picks up, as
 * every job is safe to run again. The budgets together stay under half of what one invocation may
 * spend (D1: 1,000 queries; subrequests: 1,000 as the D1 and KV pages state them), so a big day
 * cannot fail the run. What each keeps up with, per run and per day, is in docs/limits.md
 * ("Retention at any volume").
 *
 * Most of the expiring is not done here: a batch's object deletes its own results at its deadline
 * (durable-objects/batch-progress.ts), the ledger shards and the sandbox processor's memory empty
 * themselves with their own alarms. This sweeps what is shared (D1 tables) and what an alarm missed.
 *
 * Adding or removing a job is one line of MAINTENANCE_JOBS.
 */
import type { Env } from '../env';
import { D1, HALF, WORKERS } from '../lib/platform-limits';
import { redactDigits } from '../lib/redact';
import type { Clock } from '../lib/time';
import { deleteLapsedUploadFingerprints } from './batches/fingerprints';
import { deleteExpiredBatchRecords } from './batches/records';
import { deleteExpiredResults } from './batches/results';
import { startDueBilling } from './recurring/billing';
import { deleteExpiredWebhookEvents, failStuckDeliveries } from './webhooks/retention';
import { deleteExpiredExportFiles } from './search/export-sweep';

/** What one run may spend: half of the smaller of D1's queries and the planned subrequests per invocation. */
export const MAINTENANCE_BUDGET = Math.floor(Math.min(D1.queriesPerInvocation, WORKERS.subrequestsPlanned) * HALF);

/** What a job did: its counts (logged as they are) and whether it reached the end of its work. */
export type JobOutcome = { finished: boolean } & Record<string, number | boolean>;

export interface MaintenanceJob {
  /** The `event` of the job's log line. */
  name: string;
  /** The most D1 statements (and R2 or object calls) one run of the job may make. */
  maxStatements: number;
  run: (env: Env, clock: Clock, maxStatements: number) => Promise<JobOutcome>;
}

export const MAINTENANCE_JOBS: readonly MaintenanceJob[] = [
  // The objects' own retention alarms do this; the job sweeps batches whose alarm never ran.
  { name: 'batch_retention', maxStatements: 100, run: deleteExpiredResults },
  { name: 'batch_record_retention', maxStatements: 40, run: deleteExpiredBatchRecords },
  { name: 'webhook_retention', maxStatements: 240, run: deleteExpiredWebhookEvents },
  { name: 'webhook_stuck_deliveries', maxStatements: 20, run: failStuckDeliveries },
  { name: 'upload_fingerprint_retention', maxStatements: 20, run: deleteLapsedUploadFingerprints },
  // Starts each merchant's billing object for what is due today; the objects bill in bounded alarm ticks.
  { name: 'recurring_billing', maxStatements: 40, run: startDueBilling },
  // An export's object deletes its file at deleteAt; this sweeps files an object missed.
  { name: 'export_file_retention', maxStatements: 40, run: deleteExpiredExportFiles },
];

export type JobReport = { job: string; ok: true; outcome: JobOutcome } | { job: string; ok: false };

/**
 * Runs each job in turn and logs one line for each: its outcome (`finished: false` means it
 * stopped at its budget and the next run goes on), or its failure with digit runs redacted, as an
 * error can quote the data it failed on.
 */
export async function runMaintenance(env: Env, clock: Clock, jobs: readonly MaintenanceJob[] = MAINTENANCE_JOBS): Promise<JobReport[]> {
  const reports: JobReport[] = [];
  for (const job of jobs) {
    try {
      const outcome = await job.run(env, clock, job.maxStatements);
      console.log(JSON.stringify({ level: 'info', event: job.name, ...outcome }));
      reports.push({ job: job.name, ok: true, outcome });
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      console.error(
        JSON.stringify({ level: 'error', event: 'maintenance_job_failed', job: job.name, error: error.name, message: redactDigits(error.message) }),
      );
      reports.push({ job: job.name, ok: false });
    }
  }
  return reports;
}
