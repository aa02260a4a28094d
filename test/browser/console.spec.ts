/**
 * The batch console in a real Chromium against `wrangler dev`: sign in with the demo key, upload
 * files (picker and drag and drop), watch the progress bar fed by the live progress stream, read
 * the summary, download the results, sign out. Screenshots at 375 px and 1440 px go to
 * test-results/screenshots.
 */
import { expect, test, type Page } from '@playwright/test';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO } from '../../scripts/local-state.mjs';
import { ROOT, SCREENSHOTS_DIR, TOKENIZER_URL } from './setup';

const CONSOLE_URL = `${TOKENIZER_URL}/console`;
const RESULT_HEADER_START = '"id","user_name","idempotency_key","type"';
const SAMPLE = readFileSync(join(ROOT, 'examples/batch-sample.csv'), 'utf8');
const SAMPLE_ROWS = SAMPLE.split('\n').filter((line) => line.length > 0).length - 1;

/** Every request the page makes: all must be to the console's own origin. */
function requestsOf(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (request) => seen.push(request.url()));
  return seen;
}

/** Records every aria-valuenow the progress bar takes (a MutationObserver, installed before the page's script). */
async function recordProgress(page: Page): Promise<void> {
  await page.addInitScript(() => {
    const values: number[] = [];
    (window as unknown as { progressValues: number[] }).progressValues = values;
    document.addEventListener('DOMContentLoaded', () => {
      const bar = document.getElementById('progress');
      if (!bar) return;
      new MutationObserver(() => values.push(Number(bar.getAttribute('aria-valuenow')))).observe(bar, {
        attributes: true,
        attributeFilter: ['aria-valuenow'],
      });
    });
  });
}

async function signIn(page: Page, key = DEMO.secretKey): Promise<void> {
  await page.goto(CONSOLE_URL);
  await page.getByLabel('API key').fill(key);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

async function uploadFile(page: Page, name: string, text: string): Promise<void> {
  await page.getByLabel('CSV file').setInputFiles({ name, mimeType: 'text/csv', buffer: Buffer.from(text) });
  await page.getByRole('button', { name: 'Upload' }).click();
}

async function expectCompleted(page: Page, rows: number): Promise<void> {
  const bar = page.getByRole('progressbar');
  await expect(bar).toHaveAttribute('aria-valuemax', String(rows));
  await expect(page.locator('#batch-status')).toHaveText('completed', { timeout: 150_000 });
  await expect(bar).toHaveAttribute('aria-valuenow', String(rows));
}

async function downloadResults(page: Page): Promise<string[]> {
  const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#summary').getByRole('link', { name: 'Download results' }).click()]);
  const path = await download.path();
  return readFileSync(path, 'utf8').split('\n').filter((line) => line.length > 0);
}

test('sign in with the demo key, drop the sample file, watch it complete, read the summary and download the results', async ({ page }) => {
  const requests = requestsOf(page);
  await recordProgress(page);
  await signIn(page);
  await expect(page.getByText('Demo Merchant')).toBeVisible();
  await expect(page.getByLabel('API key')).toBeHidden();

  // Drag and drop onto the file box.
  const dataTransfer = await page.evaluateHandle((text) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([text], 'batch-sample.csv', { type: 'text/csv' }));
    return transfer;
  }, SAMPLE);
  await page.dispatchEvent('#drop-zone', 'drop', { dataTransfer });
  await page.getByRole('button', { name: 'Upload' }).click();

  await expectCompleted(page, SAMPLE_ROWS);
  const values = await page.evaluate(() => (window as unknown as { progressValues: number[] }).progressValues);
  expect(values.at(-1)).toBe(SAMPLE_ROWS);

  const summary = page.locator('#summary');
  await expect(summary).toBeVisible();
  const counts = await Promise.all(['#count-approved', '#count-declined', '#count-error'].map(async (id) => Number(await page.locator(id).textContent())));
  expect(counts.reduce((a, b) => a + b, 0)).toBe(SAMPLE_ROWS);

  // Its four good rows asked for email receipts: counted, and read again until every one is sent.
  const receipts = page.getByRole('region', { name: 'Email receipts' });
  await expect(receipts).toBeVisible();
  await expect(receipts.getByText('Every receipt was sent.')).toBeVisible();
  await expect(receipts.getByRole('definition').nth(0)).toHaveText('4');
  await expect(receipts.getByRole('definition').nth(1)).toHaveText('0');
  await expect(receipts.getByRole('definition').nth(2)).toHaveText('0');
  await expect(receipts.getByRole('term').nth(0)).toHaveText('Receipts sent');
  await expect(receipts.getByRole('term').nth(2)).toHaveText('Receipts failed');
  await page.screenshot({ path: join(SCREENSHOTS_DIR, 'console-receipts.png'), fullPage: true });

  const lines = await downloadResults(page);
  expect(lines[0]?.startsWith(RESULT_HEADER_START)).toBe(true);
  expect(lines).toHaveLength(SAMPLE_ROWS + 1);

  // History lists it as completed, with a download link of its own.
  const history = page.getByRole('table', { name: 'History' });
  await expect(history.getByRole('row').nth(1)).toContainText('batch-sample.csv');
  await expect(history.getByRole('row').nth(1)).toContainText('completed');
  await expect(history.getByRole('link', { name: 'Download results of batch-sample.csv' }).first()).toBeVisible();

  expect(requests.filter((url) => !url.startsWith(`${TOKENIZER_URL}/`))).toEqual([]);
});

test('a 10,000-row file: the progress bar rises to its maximum, with rows per second and time left, then the summary and the download', async ({ page }) => {
  test.setTimeout(240_000);
  const requests = requestsOf(page);
  await recordProgress(page);
  const file = execFileSync(process.execPath, [join(ROOT, 'examples/generate-batch.mjs'), '10000'], { maxBuffer: 64 * 1024 * 1024 }).toString();
  await signIn(page);
  await uploadFile(page, 'generated-10000.csv', file);
  await expect(page.locator('#batch-rate')).toHaveText(/^[\d,]+ rows\/s$/, { timeout: 120_000 });
  await expectCompleted(page, 10_000);

  const values = await page.evaluate(() => (window as unknown as { progressValues: number[] }).progressValues);
  // Several distinct values on the way up (the stream sends at most 4 a second), never going down.
  const distinct = [...new Set(values)];
  expect(distinct.length).toBeGreaterThan(2);
  expect(values).toEqual([...values].sort((a, b) => a - b));
  expect(values.at(-1)).toBe(10_000);

  // The generated amounts run 1.01 to 99.99, so the file holds each sandbox amount trigger once
  // (docs/transactions.md): 3.00 and 3.01 are declined, 4.21 is a processor error; the rest approve.
  await expect(page.locator('#count-approved')).toHaveText('9,997');
  await expect(page.locator('#count-declined')).toHaveText('2');
  await expect(page.locator('#count-error')).toHaveText('1');
  for (const width of [1440, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 1400 : 1000 });
    await page.screenshot({ path: join(SCREENSHOTS_DIR, `console-${width}.png`), fullPage: true });
  }
  // Readable at 375 px: nothing wider than the viewport but the tables' own scroll boxes.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow).toBeLessThanOrEqual(0);

  const lines = await downloadResults(page);
  expect(lines[0]?.startsWith(RESULT_HEADER_START)).toBe(true);
  expect(lines).toHaveLength(10_001);
  expect(requests.filter((url) => !url.startsWith(`${TOKENIZER_URL}/`))).toEqual([]);
});

test('the same file again is refused next to the file field, naming the first batch; "Upload anyway" charges it again', async ({ page }) => {
  await signIn(page);
  // A file of its own (other tests upload the sample): its bytes are this run's.
  const run = String(Date.now() % 100_000_000);
  const rows = [1, 2, 3].map((i) => `"sale","${1000 + i}","4111111111111111","12/30","R${run}${i}"`);
  const text = `"transaction_type","amount","cc_number","cc_expiration","order_id"\n${rows.join('\n')}\n`;
  await uploadFile(page, 'repeat.csv', text);
  await expectCompleted(page, rows.length);
  // The batch's id, from its download link (…/batches/{id}/download).
  const batchIdOf = async () => /bat_[0-9a-v]+/.exec((await page.locator('#summary').getByRole('link', { name: 'Download results' }).getAttribute('href')) ?? '')?.[0];
  const first = await batchIdOf();
  expect(first).toMatch(/^bat_/);

  await uploadFile(page, 'repeat.csv', text);
  const error = page.locator('#csv-file-error');
  await expect(error).toContainText('was already uploaded');
  await expect(error).toContainText(String(first));
  const anyway = page.getByRole('button', { name: 'Upload anyway' });
  await expect(anyway).toBeVisible();
  await expect(anyway).toBeFocused();
  await page.screenshot({ path: join(SCREENSHOTS_DIR, 'console-duplicate-file.png'), fullPage: true });

  await anyway.click();
  await expect(anyway).toBeHidden();
  // The batch shown is the new one (until its first update the panel still shows the first), and it completes.
  await expect.poll(batchIdOf, { timeout: 30_000 }).not.toBe(first);
  await expectCompleted(page, rows.length);
});

test('a structurally bad file is refused with its line number, next to the file field', async ({ page }) => {
  await signIn(page);
  const bad = `${SAMPLE.split('\n').slice(0, 3).join('\n')}\n"sale","1000"\n`;
  await uploadFile(page, 'bad.csv', bad);
  const field = page.getByLabel('CSV file');
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  await expect(page.locator('#csv-file-error')).toHaveText(/^The file was refused: line 4: /);
  await expect(field).toHaveAccessibleDescription(/line 4: /);
  await expect(page.getByRole('progressbar')).toBeHidden();
  await page.screenshot({ path: join(SCREENSHOTS_DIR, 'console-bad-file.png'), fullPage: true });
});

test('a wrong key shows an error next to the API key field, and nothing is signed in', async ({ page }) => {
  await signIn(page, 'api_thisIsNotAKey000000000000000000');
  const field = page.getByLabel('API key');
  await expect(field).toHaveAccessibleDescription('Sign-in refused: invalid or revoked API key.');
  await expect(field).toHaveAttribute('aria-invalid', 'true');
  await expect(field).toBeFocused();
  await expect(page.getByLabel('CSV file')).toBeHidden();
  expect(await page.context().cookies()).toEqual([]);
  await page.screenshot({ path: join(SCREENSHOTS_DIR, 'console-wrong-key.png') });
});

test('signing out ends the session on the server: the old cookie no longer works', async ({ page }) => {
  await signIn(page);
  await expect(page.getByLabel('CSV file')).toBeVisible();
  const cookie = (await page.context().cookies()).find((c) => c.name === 'binbatch_console');
  expect(cookie?.httpOnly).toBe(true);
  expect(cookie?.sameSite).toBe('Strict');
  // The key is in no storage the page's script could read.
  expect(await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }) + document.cookie)).toBe('{}{}');
  const before = await fetch(`${TOKENIZER_URL}/console/session`, { headers: { Cookie: `binbatch_console=${cookie?.value}` } });
  expect(before.status).toBe(200);

  // Keyboard only: Tab to "Sign out", Enter.
  await page.getByRole('button', { name: 'Sign out' }).focus();
  await page.keyboard.press('Enter');
  await expect(page.getByLabel('API key')).toBeVisible();
  const after = await fetch(`${TOKENIZER_URL}/console/session`, { headers: { Cookie: `binbatch_console=${cookie?.value}` } });
  expect(after.status).toBe(401);
  await page.reload();
  await expect(page.getByLabel('API key')).toBeVisible();
});

test('the page is served with a strict CSP and loads nothing from another origin', async ({ page }) => {
  const requests = requestsOf(page);
  const response = await page.goto(CONSOLE_URL);
  const csp = response?.headers()['content-security-policy'] ?? '';
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("frame-ancestors 'none'");
  await expect(page.getByLabel('API key')).toBeVisible();
  expect(requests.length).toBeGreaterThan(1);
  expect(requests.filter((url) => !url.startsWith(`${TOKENIZER_URL}/`))).toEqual([]);
});

test('pause a running batch (the bar reads Paused), resume it to the end; pause and cancel another, confirming how many rows will not run', async ({ page }) => {
  test.setTimeout(240_000);
  // 100,000 rows (200 chunks): the window (BATCH_CHUNKS_IN_FLIGHT, 5 chunks) is 2.5% of the file, so
  // a pause sent as the upload answers lands long before the last chunks are sent. With 10,000 rows
  // (a window of 25%) a loaded machine could process the file while the pause was on its way, and
  // the chunks already sent then end the batch while paused: correct, but not what this tests.
  const ROWS = 100_000;
  const file = execFileSync(process.execPath, [join(ROOT, 'examples/generate-batch.mjs'), String(ROWS)], { maxBuffer: 64 * 1024 * 1024 }).toString();
  await signIn(page);
  // Bytes of this run's own (the first test uploads the generator's 10,000 rows as they are).
  const run = String(Date.now() % 100_000_000);
  await uploadFile(page, 'pause-me.csv', file.replace('"ord1"', `"P${run}"`));
  const pause = page.getByRole('button', { name: 'Pause', exact: true });
  await pause.click();
  const bar = page.getByRole('progressbar', { name: 'Paused' });
  await expect(bar).toBeVisible();
  await expect(page.getByRole('button', { name: 'Resume', exact: true })).toBeVisible();
  await expect(page.locator('#batch-status')).toHaveText(/\(paused\)$/);
  // A batch paused this early cannot reach its end: only the chunks already sent still land.
  const held = Number(await bar.getAttribute('aria-valuenow'));
  expect(held).toBeLessThan(ROWS);
  for (const width of [1440, 375]) {
    await page.setViewportSize({ width, height: width === 375 ? 1400 : 1000 });
    await page.screenshot({ path: join(SCREENSHOTS_DIR, `console-paused-${width}.png`), fullPage: true });
  }

  await page.getByRole('button', { name: 'Resume', exact: true }).click();
  await expect(page.getByRole('progressbar', { name: 'Lines processed' })).toBeVisible();
  await expectCompleted(page, ROWS);
  await expect(page.getByRole('button', { name: 'Pause', exact: true })).toBeHidden();

  // A second file: paused, then cancelled; the confirmation says how many rows will not run.
  await uploadFile(page, 'wrong-file.csv', file.replace('"ord1"', `"C${run}"`));
  await page.getByRole('button', { name: 'Pause', exact: true }).click();
  await expect(page.getByRole('progressbar', { name: 'Paused' })).toBeVisible();
  await page.getByRole('button', { name: 'Cancel batch' }).click();
  const dialog = page.getByRole('alertdialog', { name: 'Cancel this batch?' });
  await expect(dialog).toBeVisible();
  // The count follows the bar (chunks already running when it was paused may still land).
  await expect
    .poll(async () => {
      const processed = Number(await page.getByRole('progressbar').getAttribute('aria-valuenow'));
      const text = (await dialog.textContent()) ?? '';
      return text.includes(`${(ROWS - processed).toLocaleString('en-US')} of ${ROWS.toLocaleString('en-US')} rows have not run yet and will not run`);
    })
    .toBe(true);
  await expect(page.getByRole('button', { name: 'Keep it running' })).toBeFocused();
  await page.screenshot({ path: join(SCREENSHOTS_DIR, 'console-cancel-confirm-375.png'), fullPage: true });
  await page.getByRole('button', { name: 'Yes, cancel the batch' }).click();
  await expect(page.locator('#batch-status')).toHaveText('failed');
  await expect(page.locator('#batch-error')).toContainText('The batch was cancelled by you');
  await expect(page.getByRole('button', { name: 'Cancel batch' })).toBeHidden();
  await expect(dialog).toBeHidden();
  const history = page.getByRole('table', { name: 'History' });
  await expect(history.getByRole('row').nth(1)).toContainText('wrong-file.csv');
  await expect(history.getByRole('row').nth(1)).toContainText('failed');
  await page.setViewportSize({ width: 1440, height: 1000 });
  await page.screenshot({ path: join(SCREENSHOTS_DIR, 'console-cancelled-1440.png'), fullPage: true });
});

test('Check file: the report of a file before it is uploaded, nothing uploaded', async ({ page }) => {
  const posts: string[] = [];
  page.on('request', (request) => {
    if (request.method() === 'POST') posts.push(new URL(request.url()).pathname);
  });
  await signIn(page);
  const text =
    '"transaction_type","transaction_id","amount","cc_number","cc_expiration"\n' +
    '"authorize","","1500","4111111111111111","12/30"\n' +
    '"capture","line:2","600","",""\n' +
    '"void","txn_a20261127example","100","",""\n';
  await page.getByLabel('CSV file').setInputFiles({ name: 'check.csv', mimeType: 'text/csv', buffer: Buffer.from(text) });
  await page.getByRole('button', { name: 'Check file' }).click();
  await expect(page.locator('#check-summary')).toHaveText(
    '3 rows checked: 1 with errors. Would run: 1 authorize, 1 capture. Totals: authorize 15.00 USD, capture 6.00 USD. Nothing was uploaded or charged.',
  );
  await expect(page.locator('#check-errors li')).toHaveText(['Line 4, amount: must be empty for a void (a void releases the whole transaction)']);
  await expect(page.locator('#batch-section')).toBeHidden();
  // Checked only: the file was never uploaded.
  expect(posts.filter((path) => path.startsWith('/console/batches'))).toEqual(['/console/batches/check']);
});
