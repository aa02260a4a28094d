// Applies schema.sql (read on the Node side by vitest.config.ts) to this test file's D1, then the
// surcharge rules the release ships: what `npm run dev` and the deploy steps do.
import { reset } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import { applySchema, applyShippedSurchargeRules } from './helpers/schema';

// The workerd project runs its files one after another in one workerd (vitest.config.ts): first
// delete whatever the file before left (D1, KV, R2, caches, Durable Objects and their alarms).
await reset();
await applySchema(env.DB, env.TEST_SCHEMA ?? '');
await applyShippedSurchargeRules(env.DB);
