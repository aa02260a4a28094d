/**
 * The hosted tokenizer in a real Chromium: the demo checkout (a merchant page on another origin)
 * mounts the card frame, a person types a test card into its labelled fields, and only a token
 * comes back to the page. Screenshots go to test-results/screenshots (printed by the run).
 */
import { expect, test, type FrameLocator, type Page } from '@playwright/test';
import { join } from 'node:path';
import { DEMO } from '../../scripts/local-state.mjs';
import { FOREIGN_SHOP_URL, SCREENSHOTS_DIR, SHOP_URL, TOKENIZER_URL } from './setup';

const VISA = '4111111111111111';
const TOKEN_PATTERN = /^tok_[A-Za-z0-9_-]{32}$/;

async function openCheckout(page: Page, url = SHOP_URL): Promise<FrameLocator> {
  await page.goto(`${url}/`);
  return page.frameLocator('iframe[title="Card details"]');
}

async function typeCard(card: FrameLocator, number: string, expiration = '1234', cvc = '123'): Promise<void> {
  await card.getByLabel('Card number').pressSequentially(number);
  await card.getByLabel('Expiration').pressSequentially(expiration);
  await card.getByLabel('CVC').pressSequentially(cvc);
}

/** Every POST the page (its frames included) sends to the token endpoint. */
function tokenRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (request) => {
    if (request.method() === 'POST' && request.url().startsWith(`${TOKENIZER_URL}/api/tokenizer/token`)) seen.push(request.url());
  });
  return seen;
}

function screenshot(page: Page, name: string): Promise<Buffer> {
  // The viewport is tall enough for the whole checkout: a full-page capture resizes it, and the
  // cross-site card frame (its own renderer process) can be caught before it repaints.
  return page.screenshot({ path: join(SCREENSHOTS_DIR, name) });
}

async function setShopOrigins(origins: string[]): Promise<void> {
  const response = await fetch(`${TOKENIZER_URL}/admin/merchants/${DEMO.merchantId}`, {
    method: 'PATCH',
    headers: { Authorization: process.env.BROWSER_TEST_ADMIN_TOKEN ?? '', 'Content-Type': 'application/json' },
    body: JSON.stringify({ tokenizer_origins: origins }),
  });
  expect(response.status).toBe(200);
}

test('a merchant page on another origin gets a tok_ token for a typed card, and a server-side lookup with it answers the brand', async ({ page }) => {
  const card = await openCheckout(page);
  await typeCard(card, VISA, '1234', '123');
  // The fields show what the person typed, grouped; the brand is recognised as they type.
  await expect(card.getByLabel('Card number')).toHaveValue('4111 1111 1111 1111');
  await expect(card.getByLabel('Expiration')).toHaveValue('12 / 34');
  await expect(card.getByText('Visa', { exact: true })).toBeVisible();
  await screenshot(page, 'checkout-filled.png');

  await page.getByRole('button', { name: 'Tokenize card' }).click();
  await expect(page.getByRole('status')).toHaveText('Token received; lookup done.');
  const token = (await page.locator('#token dt:text-is("Token") + dd').textContent()) ?? '';
  expect(token).toMatch(TOKEN_PATTERN);
  await expect(page.locator('#token dt:text-is("Card") + dd')).toHaveText('visa · BIN 411111 · last 4 1111');
  // The demo backend's lookup (secret key, server side), as the page shows it.
  await expect(page.locator('#lookup dt:text-is("card_brand") + dd')).toHaveText('visa');
  await screenshot(page, 'checkout-token.png');

  // And a lookup made here, as any merchant's server would, answers the card's brand.
  const lookup = await fetch(`${TOKENIZER_URL}/api/lookup/bin/protected`, {
    method: 'POST',
    headers: { Authorization: DEMO.secretKey, 'Content-Type': 'application/json' },
    body: JSON.stringify({ temp_token: token }),
  });
  expect(lookup.status).toBe(200);
  expect(await lookup.json()).toMatchObject({ bin: '411111', card_brand: 'visa' });
});

test('an American Express card: its own grouping, a 4-digit CVC, and its brand in the lookup', async ({ page }) => {
  const card = await openCheckout(page);
  await typeCard(card, '378282246310005', '0931', '1234');
  await expect(card.getByLabel('Card number')).toHaveValue('3782 822463 10005');
  await expect(card.getByText('American Express', { exact: true })).toBeVisible();
  await page.getByRole('button', { name: 'Tokenize card' }).click();
  await expect(page.getByRole('status')).toHaveText('Token received; lookup done.');
  await expect(page.locator('#lookup dt:text-is("card_brand") + dd')).toHaveText('amex');
});

test('a wrong Luhn shows an error on the card number field and produces no token', async ({ page }) => {
  const requests = tokenRequests(page);
  const card = await openCheckout(page);
  const frame = page.locator('iframe[title="Card details"]');
  await expect(card.getByLabel('Card number')).toBeVisible();
  const heightBefore = (await frame.boundingBox())?.height ?? 0;

  await typeCard(card, '4111111111111112');
  await page.getByRole('button', { name: 'Tokenize card' }).click();
  const number = card.getByLabel('Card number');
  await expect(number).toHaveAttribute('aria-invalid', 'true');
  // The message is tied to the field (aria-describedby), so a screen reader reads it with the label.
  await expect(number).toHaveAccessibleDescription('The card number is not valid.');
  await expect(card.getByLabel('Expiration')).toHaveAttribute('aria-invalid', 'false');
  await expect(page.getByRole('status')).toHaveText('Check the card details. Card number: The card number is not valid.');
  // The frame grew with its error message, and the page resized it.
  await expect.poll(async () => (await frame.boundingBox())?.height ?? 0).toBeGreaterThan(heightBefore);
  await screenshot(page, 'checkout-luhn-error.png');

  expect(requests).toEqual([]);
  await expect(page.locator('#result')).toBeHidden();
});

test('submitting empty fields names each one, and no request leaves the frame', async ({ page }) => {
  const requests = tokenRequests(page);
  const card = await openCheckout(page);
  await expect(card.getByLabel('Card number')).toBeVisible();
  await page.getByRole('button', { name: 'Tokenize card' }).click();
  await expect(page.getByRole('status')).toHaveText(
    'Check the card details. Card number: Enter the card number. Expiration: Enter the expiration date. CVC: Enter the CVC.',
  );
  await expect(card.getByLabel('CVC')).toHaveAccessibleDescription('Enter the CVC.');
  // The frame put the person back on the first field to fix.
  await expect(card.getByLabel('Card number')).toBeFocused();
  expect(requests).toEqual([]);
});

test('a page on an origin that is not allowed cannot frame the tokenizer', async ({ page }) => {
  const refusals: string[] = [];
  page.on('console', (message) => {
    if (/frame-ancestors/.test(message.text())) refusals.push(message.text());
  });
  const requests = tokenRequests(page);
  const card = await openCheckout(page, FOREIGN_SHOP_URL);
  // The script tells the page why, naming its origin; the browser refused the frame itself.
  await expect(page.getByRole('status')).toHaveText(
    `The card form did not load: check the public key, and that this page's origin (${FOREIGN_SHOP_URL}) is in the merchant's tokenizer_origins`,
  );
  await expect(card.getByLabel('Card number')).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Tokenize card' })).toBeDisabled();
  // Chromium's own report: the frame's CSP named the one allowed origin, and the frame was blocked.
  expect(refusals.join('\n')).toContain(`"frame-ancestors ${SHOP_URL}"`);
  expect(refusals.join('\n')).toMatch(/blocked/);
  await screenshot(page, 'checkout-origin-not-allowed.png');
  expect(requests).toEqual([]);
});

test("the merchant page's script cannot read the card number from the frame, and its messages carry no digit", async ({ page }) => {
  await page.addInitScript(() => {
    const seen: string[] = [];
    (window as unknown as { seenMessages: string[] }).seenMessages = seen;
    window.addEventListener('message', (event) => seen.push(JSON.stringify(event.data)));
  });
  const card = await openCheckout(page);
  await typeCard(card, VISA);
  await expect(card.getByLabel('Card number')).toHaveValue('4111 1111 1111 1111');

  const probe = await page.evaluate(() => {
    const iframe = document.querySelector('iframe');
    const attempt = (read: () => unknown): string => {
      try {
        return `read: ${String(read())}`;
      } catch (error) {
        return (error as Error).name;
      }
    };
    return {
      contentDocument: iframe?.contentDocument === null ? 'null' : 'readable',
      document: attempt(() => iframe?.contentWindow?.document.getElementById('number')),
      location: attempt(() => iframe?.contentWindow?.location.href),
      frames: attempt(() => (window.frames[0] as Window).document.body.innerHTML),
      // The page itself (less its printed list of test cards) holds no digit of the card.
      pageText: (() => {
        const copy = document.documentElement.cloneNode(true) as HTMLElement;
        copy.querySelector('.test-cards')?.remove();
        return copy.outerHTML;
      })(),
      messages: (window as unknown as { seenMessages: string[] }).seenMessages,
    };
  });
  expect(probe.contentDocument).toBe('null');
  expect(probe.document).toBe('SecurityError');
  expect(probe.location).toBe('SecurityError');
  expect(probe.frames).toBe('SecurityError');
  expect(probe.pageText).not.toContain('1111');

  // The page did hear from the frame as the card was typed: validity and brand, nothing more.
  const changes = probe.messages.map((text) => JSON.parse(text)).filter((message) => message.type === 'change');
  expect(changes.length).toBeGreaterThan(10);
  expect(changes.at(-1).state).toMatchObject({
    brand: 'visa',
    complete: true,
    fields: { number: { complete: true }, expiration: { complete: true }, cvc: { complete: true } },
  });
  for (const text of probe.messages) expect(text).not.toMatch(/1111|4111/);
});

test('the page ignores tokenizer messages that do not come from the frame, and refuses a secret key', async ({ page }) => {
  const card = await openCheckout(page);
  await expect(card.getByLabel('Card number')).toBeVisible();
  const outcome = await page.evaluate(async () => {
    // A forged "change" from this window (any script on the page, or another window, could send one),
    // then a marker: messages are dispatched in order, so once the marker arrives the forgery was seen.
    const seen = new Promise<void>((resolve) =>
      window.addEventListener('message', (event) => {
        if (event.data === 'marker') resolve();
      }),
    );
    window.postMessage({ source: 'binbatch-tokenizer', v: 1, type: 'change', state: { brand: 'forged', complete: true, fields: {} } }, '*');
    window.postMessage('marker', '*');
    await seen;
    let secretKey = 'accepted';
    try {
      new (window as unknown as { BinbatchTokenizer: new (options: object) => unknown }).BinbatchTokenizer({
        publicKey: 'api_secretKeyThatMustNeverBeHere00000',
        container: 'main',
      });
    } catch (error) {
      secretKey = (error as Error).message;
    }
    return { brand: document.querySelector('main')?.dataset.cardBrand, secretKey };
  });
  expect(outcome.brand).not.toBe('forged');
  expect(outcome.secretKey).toContain('a secret key must never be in a web page');
  await expect(page.locator('iframe')).toHaveCount(1);
});

test('the frame opened on its own, outside any checkout, offers no card fields', async ({ page }) => {
  await page.goto(`${TOKENIZER_URL}/tokenizer/v1/frame?key=${DEMO.publicKey}`);
  await expect(page.getByText("This card form works only inside a merchant's checkout page.")).toBeVisible();
  await expect(page.getByLabel('Card number')).toBeHidden();
});

test('the token endpoint refuses the frame once the merchant removes the page from tokenizer_origins', async ({ page }) => {
  const card = await openCheckout(page);
  await typeCard(card, VISA);
  await setShopOrigins([]);
  try {
    await page.getByRole('button', { name: 'Tokenize card' }).click();
    await expect(page.getByRole('status')).toHaveText(`"${SHOP_URL}" is not in this merchant's tokenizer_origins`);
    await expect(page.locator('#result')).toBeHidden();
  } finally {
    await setShopOrigins([SHOP_URL]);
  }
});
