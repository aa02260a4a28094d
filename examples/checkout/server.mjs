#!/usr/bin/env node
// The demo shop: a merchant's checkout page on an origin of its own, and the merchant's backend
// route that holds the secret key. `npm run dev` starts it beside the Worker (and the browser tests
// drive it). It is a local Node server, not part of the Worker: `wrangler deploy` bundles
// src/index.ts and uploads public/, and this folder is in neither, so neither the page nor the
// secret key it is given can reach production. It listens on 127.0.0.1 only.
//
//   node examples/checkout/server.mjs --port 8788 --tokenizer http://localhost:8787
import { readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { fileURLToPath } from 'node:url';

const here = new URL('.', import.meta.url);
const TEMP_TOKEN = /^tok_[A-Za-z0-9_-]{32}$/;
const STATE = /^[A-Z]{2}$/;
const MAX_BODY_BYTES = 4096;

const escapeHtml = (text) =>
  String(text).replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]);

/**
 * The headers a merchant's checkout page wants: scripts and the frame from itself and the
 * tokenizer's origin only, nothing inline, and no one may frame the checkout itself.
 */
export function checkoutHeaders(tokenizerOrigin) {
  return {
    'Content-Type': 'text/html; charset=utf-8',
    'Content-Security-Policy': [
      "default-src 'none'",
      `script-src 'self' ${tokenizerOrigin}`,
      `frame-src ${tokenizerOrigin}`,
      "style-src 'self'",
      "connect-src 'self'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; '),
    'X-Frame-Options': 'DENY',
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'strict-origin-when-cross-origin',
    'Cache-Control': 'no-store',
  };
}

/**
 * Starts the demo shop. `tokenizerUrl`: the Worker's base URL as the browser reaches it.
 * Resolves { url, close() } once listening.
 */
export async function startCheckout({ port, tokenizerUrl, publicKey, secretKey, host = '127.0.0.1', name = 'localhost' }) {
  const tokenizerOrigin = new URL(tokenizerUrl).origin;
  const shopOrigin = `http://${name}:${port}`;
  const [page, script, style] = await Promise.all(
    ['index.html', 'checkout.js', 'checkout.css'].map((file) => readFile(new URL(file, here), 'utf8')),
  );
  const html = page
    .replaceAll('{{TOKENIZER_URL}}', escapeHtml(tokenizerOrigin))
    .replaceAll('{{PUBLIC_KEY}}', escapeHtml(publicKey))
    .replaceAll('{{SHOP_ORIGIN}}', escapeHtml(shopOrigin));
  const staticHeaders = { 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' };

  const server = createServer(async (request, response) => {
    const send = (status, headers, body) => {
      response.writeHead(status, headers);
      response.end(body);
    };
    const json = (status, value) => send(status, { ...staticHeaders, 'Content-Type': 'application/json' }, JSON.stringify(value));
    const path = new URL(request.url ?? '/', shopOrigin).pathname;
    try {
      if (request.method === 'GET' && path === '/') return send(200, checkoutHeaders(tokenizerOrigin), html);
      if (request.method === 'GET' && path === '/checkout.js') {
        return send(200, { ...staticHeaders, 'Content-Type': 'text/javascript; charset=utf-8' }, script);
      }
      if (request.method === 'GET' && path === '/checkout.css') {
        return send(200, { ...staticHeaders, 'Content-Type': 'text/css; charset=utf-8' }, style);
      }
      if (request.method === 'POST' && path === '/api/lookup') {
        const input = await readJson(request);
        if (input === null || !TEMP_TOKEN.test(input.temp_token ?? '')) return json(400, { msg: 'temp_token: expected a tok_… token' });
        if (input.state !== undefined && !STATE.test(input.state)) return json(400, { msg: 'state: expected two capital letters' });
        // The shop's backend asks binbatch with its secret key: this is the only place that key is used.
        const answer = await fetch(`${tokenizerUrl}/api/lookup/bin/protected`, {
          method: 'POST',
          headers: { Authorization: secretKey, 'Content-Type': 'application/json' },
          body: JSON.stringify({ temp_token: input.temp_token, country: 'US', ...(input.state ? { state: input.state } : {}) }),
        });
        return send(answer.status, { ...staticHeaders, 'Content-Type': 'application/json' }, await answer.text());
      }
      return json(404, { msg: `no route for ${request.method} ${path}` });
    } catch (error) {
      return json(502, { msg: `the demo backend could not reach binbatch at ${tokenizerUrl}: ${error.message}` });
    }
  });

  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    url: shopOrigin,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function readJson(request) {
  let size = 0;
  const chunks = [];
  for await (const chunk of request) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(chunk);
  }
  try {
    const value = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return value !== null && typeof value === 'object' ? value : null;
  } catch {
    return null;
  }
}

// Run on its own, with the merchant's keys in the environment, as a shop's backend would hold them:
//   BINBATCH_PUBLIC_KEY=pub_… BINBATCH_SECRET_KEY=api_… node examples/checkout/server.mjs [--port 8788] [--tokenizer http://localhost:8787]
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { BINBATCH_PUBLIC_KEY: publicKey, BINBATCH_SECRET_KEY: secretKey } = process.env;
  if (!publicKey?.startsWith('pub_') || !secretKey?.startsWith('api_')) {
    console.error('Set BINBATCH_PUBLIC_KEY (pub_…) and BINBATCH_SECRET_KEY (api_…) to a merchant\'s keys (README, "Demo credentials").');
    process.exit(2);
  }
  const option = (flag, fallback) => {
    const at = process.argv.indexOf(flag);
    return at >= 0 && process.argv[at + 1] ? process.argv[at + 1] : fallback;
  };
  const shop = await startCheckout({
    port: Number(option('--port', '8788')),
    tokenizerUrl: option('--tokenizer', 'http://localhost:8787'),
    publicKey,
    secretKey,
  });
  console.log(`Demo checkout: ${shop.url}`);
}
