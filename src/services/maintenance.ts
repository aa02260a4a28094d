/**
 * The daily cron's jobs, run one after another by `runMaintenance`. Each runs on its own: a job
 * that throws is logged and the next one still runs. Each is bounded: it makes at most its
 * `maxStatements` D1 statements (R2 calls counted too) and reports whether it got to the end; what it
 * leaves, the next run picks up, as every job is safe to run again. The caps together stay under
 * what one invocation may spend (D1_QUERIES_PER_INVOCATION), so a big day cannot fail the run.
 *
 * Adding or removing a job is one line of DAILY_JOBS.
 */
import type { Env } from '../env';
import { redactDigits } from '../lib/redact';
import type { Clock } from '../lib/time';
import { deleteExpiredBatchRecords } from './batches/records';
import { deleteExpiredResults } from './batches/results';
import { deleteExpiredWebhookEvents } from './webhooks/retention';

/** D1 queries one Worker invocation may make (Workers Paid); the jobs' caps add up to less. */
export const D1_QUERIES_PER_INVOCATION = 1_000;

/** What a job did: its counts (logged as they are) and whether it reached the end of its work. */
export type JobOutcome = { finished: boolean } & Record<string, number | boolean>;

export interface MaintenanceJob {
  /** The `event` of the job's log line. */
  name: string;
  /** The most D1 statements (and R2 calls) one run of the job may make. */
  maxStatements: number;
  run: (env: Env, clock: Clock, maxStatements: number) => Promise<JobOutcome>;
}

export const DAILY_JOBS: readonly MaintenanceJob[] = [
  { name: 'batch_retention', maxStatements: 300, run: deleteExpiredResults },
  { name: 'batch_record_retention', maxStatements: 100, run: deleteExpiredBatchRecords },
  { name: 'webhook_retention', maxStatements: 300, run: deleteExpiredWebhookEvents },
];

export type JobReport = { job: string; ok: true; outcome: JobOutcome } | { job: string; ok: false };

/**
 * Runs each job in turn and logs one line for each: its outcome (`finished: false` means it
 * stopped at its cap and the next run goes on), or its failure with digit runs redacted, as an
 * error can quote the data it failed on.
 */
export async function runMaintenance(env: Env, clock: Clock, jobs: readonly MaintenanceJob[] = DAILY_JOBS): Promise<JobReport[]> {
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
