/** Runs the Worker's daily cron (src/index.ts `scheduled`) as the platform would, at a time the test picks. */
import { env } from 'cloudflare:workers';
import { createExecutionContext, createScheduledController, waitOnExecutionContext } from 'cloudflare:test';
import type { Env } from '../../src/env';
import worker from '../../src/index';

/** The scheduled time is the cron's clock (retention, the idempotency window, webhook history). */
export async function runDailyCron(at: Date): Promise<void> {
  const handler: ExportedHandler<Env> = worker;
  const ctx = createExecutionContext();
  await handler.scheduled?.(createScheduledController({ scheduledTime: at, cron: '17 * * * *' }), env, ctx);
  await waitOnExecutionContext(ctx);
}
