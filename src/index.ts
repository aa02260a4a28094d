/** Wiring only: HTTP goes to the Hono app, queue batches to their consumers, the cron to retention. */
import { app } from './app';
import type { Env } from './env';

export { BatchProgress } from './durable-objects/batch-progress';

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Env>;
