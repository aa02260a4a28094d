// Applies schema.sql (read on the Node side by vitest.config.ts) to this test file's D1.
import { env } from 'cloudflare:workers';
import { applySchema } from './helpers/schema';

await applySchema(env.DB, env.TEST_SCHEMA ?? '');
