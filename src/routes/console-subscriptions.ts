/**
 * The console's list of subscriptions needing attention (failing, failed, error) with their last
 * decline, the latest changed first, with the console session (docs/console.md; docs/recurring.md).
 */
import { Hono } from 'hono';
import { createMiddleware } from 'hono/factory';
import { requireConsoleSession, type ConsoleEnv } from '../middleware/console-session';
import { subscriptionView } from '../services/recurring/subscriptions';
import { needingAttention } from '../storage/recurring-subscriptions';

/** The most the list shows: one D1 page, served by the (merchant_id, status, updated_at) index. */
export const ATTENTION_LIMIT = 100;

const consoleSession = createMiddleware<ConsoleEnv>(async (c, next) => (c.var.consoleSession ? next() : requireConsoleSession(c, next)));

export const consoleSubscriptions = new Hono<ConsoleEnv>().use('/subscriptions/*', consoleSession).get('/subscriptions/attention', async (c) => {
  const items = (await needingAttention(c.env.DB, c.get('caller').merchantId, ATTENTION_LIMIT)).map(subscriptionView);
  return c.json({ status: 'success' as const, msg: 'success' as const, data: items, total_count: items.length });
});
