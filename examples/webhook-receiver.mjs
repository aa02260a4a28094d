#!/usr/bin/env node
// A webhook receiver for binbatch's batch events: verifies Binbatch-Signature (5-minute tolerance
// against replay), drops events it has seen, prints the event. See README "Webhooks".
//   WEBHOOK_SECRET=whsec_… node examples/webhook-receiver.mjs 8789
import { createHmac, timingSafeEqual } from 'node:crypto';
import { createServer } from 'node:http';

const port = Number(process.argv[2] ?? 8789);
const secret = process.env.WEBHOOK_SECRET ?? '';
if (!secret.startsWith('whsec_')) throw new Error('set WEBHOOK_SECRET to the secret shown when the endpoint was created');
const TOLERANCE_SECONDS = 5 * 60;
const seen = new Set();

/** True when one v1= of the header is the HMAC-SHA256 of "<t>.<body>" and t is within the tolerance. */
function verify(header, body) {
  const fields = (header ?? '').split(',').map((field) => field.split('=', 2));
  const t = Number(fields.find(([name]) => name === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > TOLERANCE_SECONDS) return false;
  const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest();
  return fields.some(([name, value]) => name === 'v1' && /^[0-9a-f]{64}$/.test(value) && timingSafeEqual(Buffer.from(value, 'hex'), expected));
}

createServer((request, response) => {
  const chunks = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const body = Buffer.concat(chunks).toString('utf8'); // the raw body: verify before parsing
    if (!verify(request.headers['binbatch-signature'], body)) {
      console.log(`refused: bad or stale signature (${request.headers['binbatch-event-id'] ?? 'no event id'})`);
      response.writeHead(400).end();
      return;
    }
    const event = JSON.parse(body);
    if (seen.has(event.id)) console.log(`duplicate ${event.id}, already handled`);
    else {
      seen.add(event.id);
      console.log(`verified ${event.type} ${event.id}:`, JSON.stringify(event.data));
    }
    response.writeHead(204).end();
  });
}).listen(port, '127.0.0.1', () => console.log(`listening on http://127.0.0.1:${port}/ (also http://localhost:${port}/)`));
