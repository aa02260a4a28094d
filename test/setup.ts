// Applies schema.sql (read on the Node side by vitest.config.ts) to this test file's D1, then the
// surcharge rules the release ships: what `npm run dev` and the deploy steps do.
import { env } from 'cloudflare:workers';
import { applySchema, applyShippedSurchargeRules } from './helpers/schema';

await applySchema(env.DB, env.TEST_SCHEMA ?? '');
await applyShippedSurchargeRules(env.DB);
