/**
 * The console's Transactions page in a real Chromium against `wrangler dev` (issue 33): signed in on
 * the batch console, find transactions by the common filters, page through them, open one and read
 * its lifecycle (created, captured, settled, refunded), export the search and download the CSV.
 * Screenshots at 375 px and 1440 px go to test-results/screenshots.
 */
import { expect, test, type Page } from '@playwright/test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO } from '../../scripts/local-state.mjs';
import { SCREENSHOTS_DIR, TOKENIZER_URL } from './setup';

const CONSOLE_URL = `${TOKENIZER_URL}/console`;

async function api(path: string, body: unknown, key = DEMO.secretKey): Promise<Record<string, unknown>> {
  const response = await fetch(`${TOKENIZER_URL}${path}`, { method: 'POST', headers: { Authorization: key, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const json = (await response.json()) as { data: Record<string, unknown> };
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${JSON.stringify(json)}`);
  return json.data;
}

async function searchApi(body: unknown): Promise<{ data: { id: string }[]; total_count: number }> {
  const response = await fetch(`${TOKENIZER_URL}/api/transaction/search`, { method: 'POST', headers: { Authorization: DEMO.secretKey, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  return (await response.json()) as { data: { id: string }[]; total_count: number };
}

async function signIn(page: Page): Promise<void> {
  await page.goto(CONSOLE_URL);
  await page.getByLabel('API key').fill(DEMO.secretKey);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByText('Demo Merchant')).toBeVisible();
}

test('find transactions by order, status, amount and card; page; read a lifecycle; export the search', async ({ page }) => {
  const seen: string[] = [];
  page.on('request', (request) => seen.push(request.url()));
  const run = Date.now().toString(36).slice(-6).toUpperCase();
  // An authorization captured, settled and partly refunded: its lifecycle has every step.
  const auth = await api('/api/transaction', { transaction_type: 'authorize', cc_number: '5555555555554444', cc_expiration: '12/30', amount: 4200, order_id: `LIFE${run}` });
  await api(`/api/transaction/${String(auth.id)}/capture`, { amount: 4000 });
  const settled = await fetch(`${TOKENIZER_URL}/admin/merchants/${DEMO.merchantId}/settle`, { method: 'POST', headers: { Authorization: String(process.env.BROWSER_TEST_ADMIN_TOKEN) } });
  expect(settled.status).toBe(200);
  await api(`/api/transaction/${String(auth.id)}/refund`, { amount: 1500 });
  for (let i = 0; i < 25; i++) await api('/api/transaction', { transaction_type: 'sale', cc_number: '4000000000061111', cc_expiration: '12/30', amount: 1000 + i, order_id: `PG${run}${i}` });

  await signIn(page);
  await page.getByRole('link', { name: 'Transactions' }).click();
  await expect(page).toHaveURL(`${TOKENIZER_URL}/console/transactions`);
  const rows = page.getByRole('table', { name: 'Transactions' }).locator('tbody tr');
  // The first page: the newest 20, the last four months.
  await expect(rows).toHaveCount(20);
  await expect(page.locator('#results-count')).toContainText('in the last four months');

  // Pages: Next and Previous.
  const firstPageTop = await rows.first().locator('button').textContent();
  await page.getByRole('button', { name: 'Next' }).click();
  await expect(page.locator('#page-label')).toContainText('21–');
  await expect(rows.first().locator('button')).not.toHaveText(String(firstPageTop));
  await page.getByRole('button', { name: 'Previous' }).click();
  await expect(rows.first().locator('button')).toHaveText(String(firstPageTop));

  // Filters: order number, then amount and card last four, then status.
  await page.getByLabel('Order number').fill(`PG${run}7`);
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('$10.07');
  await page.getByLabel('Order number').fill('');
  await page.getByLabel('Amount comparison').selectOption('>');
  await page.getByLabel('Amount (USD)').fill('10.20');
  await page.getByLabel('Card last four').fill('1111');
  await page.getByRole('button', { name: 'Search' }).click();
  // The page shows what the API answers for the same filters (other suites' files on this server
  // may match too), and this run's four sales over $10.20 come first, newest first.
  const same = await searchApi({ amount: { operator: '>', value: 1020 }, last_four: { operator: '=', value: '1111' }, limit: 20 });
  await expect(rows).toHaveCount(same.data.length);
  for (const [i, n] of [24, 23, 22, 21].entries()) await expect(rows.nth(i)).toContainText(`PG${run}${n}`);
  await page.getByLabel('Amount (USD)').fill('ten');
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(page.getByLabel('Amount (USD)')).toHaveAttribute('aria-invalid', 'true');
  await expect(page.locator('#amount-error')).toHaveText('Write an amount in dollars, like 12.50.');
  await page.getByLabel('Amount (USD)').fill('');
  await page.getByLabel('Card last four').fill('');
  await page.getByLabel('Status').selectOption('partially_refunded');
  const today = new Date().toISOString().slice(0, 10);
  await page.getByLabel('Created from').fill(today);
  await page.getByLabel('Created to').fill(today);
  await page.getByRole('button', { name: 'Search' }).click();
  await expect(rows.filter({ hasText: String(auth.id) })).toHaveCount(1);

  // The lifecycle of the authorization.
  await page.getByRole('button', { name: `Details of ${String(auth.id)}` }).click();
  const detail = page.getByRole('region', { name: /authorize of \$42\.00: partially refunded/ });
  await expect(detail).toBeVisible();
  const lifecycle = page.getByRole('list', { name: 'Lifecycle' }).getByRole('listitem');
  await expect(lifecycle).toHaveCount(4);
  await expect(lifecycle.nth(0)).toContainText('created $42.00: approved');
  await expect(lifecycle.nth(1)).toContainText('captured $40.00');
  await expect(lifecycle.nth(2)).toContainText('settled $40.00 in stl_');
  await expect(lifecycle.nth(3)).toContainText('refunded $15.00 by txn_r');
  await expect(lifecycle.nth(3)).toContainText('pending settlement');
  for (const width of [375, 1440]) {
    await page.setViewportSize({ width, height: 1300 });
    await page.screenshot({ path: join(SCREENSHOTS_DIR, `transactions-detail-${width}.png`), fullPage: true });
  }
  await page.setViewportSize({ width: 1000, height: 1400 });

  // Export this search, wait for it, download the CSV.
  await page.getByLabel('Status').selectOption('');
  await page.getByLabel('Order number').fill(`PG${run}3`);
  await page.getByRole('button', { name: 'Export CSV' }).click();
  const download = page.getByRole('link', { name: 'Download export' });
  await expect(download).toBeVisible({ timeout: 30_000 });
  await expect(page.getByRole('status')).toContainText('Export ready: 1 row.');
  const [file] = await Promise.all([page.waitForEvent('download'), download.click()]);
  const lines = readFileSync(await file.path(), 'utf8').split('\n').filter((line) => line.length > 0);
  expect(lines).toHaveLength(2);
  expect(lines[0]?.startsWith('"id","user_name","idempotency_key","type"')).toBe(true);
  expect(lines[1]).toContain(`"PG${run}3"`);
  await page.screenshot({ path: join(SCREENSHOTS_DIR, 'transactions-export-1000.png'), fullPage: true });

  // Everything the page asked was of its own origin.
  expect(seen.filter((url) => !url.startsWith(TOKENIZER_URL))).toEqual([]);
});

test('signed out, the Transactions page sends to the sign-in', async ({ page }) => {
  await page.goto(`${TOKENIZER_URL}/console/transactions`);
  await expect(page.getByRole('heading', { name: 'Sign in first' })).toBeVisible();
  await page.getByRole('link', { name: 'batch console' }).click();
  await expect(page.getByLabel('API key')).toBeVisible();
  for (const width of [375, 1440]) {
    await signIn(page);
    await page.getByRole('link', { name: 'Transactions' }).click();
    await page.setViewportSize({ width, height: 1100 });
    await expect(page.getByRole('table', { name: 'Transactions' }).locator('tbody tr').first()).toBeVisible();
    await page.screenshot({ path: join(SCREENSHOTS_DIR, `transactions-${width}.png`), fullPage: true });
    await page.goto(CONSOLE_URL);
    await page.getByRole('button', { name: 'Sign out' }).click();
  }
});

test('signing out on the Transactions page ends the session and returns to the sign-in', async ({ page }) => {
  await signIn(page);
  await page.getByRole('link', { name: 'Transactions' }).click();
  await expect(page.getByRole('table', { name: 'Transactions' })).toBeVisible();
  const cookie = (await page.context().cookies()).find((c) => c.name === 'binbatch_console');
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL(CONSOLE_URL);
  await expect(page.getByLabel('API key')).toBeVisible();
  // The old cookie no longer opens a session: the page came back to sign-in, not just out of view.
  const after = await fetch(`${TOKENIZER_URL}/console/session`, { headers: { Cookie: `binbatch_console=${cookie?.value}` } });
  expect(after.status).toBe(401);
  await page.goto(`${TOKENIZER_URL}/console/transactions`);
  await expect(page.getByRole('heading', { name: 'Sign in first' })).toBeVisible();
});
