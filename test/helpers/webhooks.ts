/**
 * Webhook receivers inside the test: the Worker's outgoing fetch (globalThis.fetch, which the
 * delivery consumer calls) is routed to handlers registered by URL, so no delivery leaves the
 * machine. A fetch to any other URL fails like an unreachable host.
 */
import { call } from './api';

export interface Received {
  url: string;
  method: string;
  headers: Headers;
  body: string;
}

/** Answers the n-th request (0-based) a receiver gets. */
export type Answer = (request: Received, n: number) => Response | Promise<Response>;

interface Receiver {
  answer: Answer;
  received: Received[];
}

const receivers = new Map<string, Receiver>();
let installed = false;

function install(): void {
  if (installed) return;
  installed = true;
  // Assigned, not spied: vi.restoreAllMocks() in other files' hooks must not put the real fetch back.
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    const request = new Request(input, init);
    const receiver = receivers.get(request.url);
    if (!receiver) throw new TypeError(`network access is disabled in tests (${request.url})`);
    const received: Received = { url: request.url, method: request.method, headers: request.headers, body: await request.text() };
    receiver.received.push(received);
    return receiver.answer(received, receiver.received.length - 1);
  };
}

let sequence = 0;

/** A receiver at a fresh https URL (under hooks.example.test); `answer` may be changed later. */
export function receiver(answer: Answer = () => new Response(null, { status: 204 })): { url: string; received: Received[]; answer: Answer } {
  install();
  const url = `https://hooks.example.test/r${++sequence}-${crypto.randomUUID().slice(0, 8)}`;
  const entry: Receiver = { answer, received: [] };
  receivers.set(url, entry);
  return {
    url,
    received: entry.received,
    get answer() {
      return entry.answer;
    },
    set answer(next: Answer) {
      entry.answer = next;
    },
  };
}

/** Answers 500, 500, then 204: the scripted statuses in order, the last one repeated. */
export function statuses(...codes: number[]): Answer {
  return (_request, n) => new Response(null, { status: codes[Math.min(n, codes.length - 1)] ?? 204 });
}

export interface CreatedEndpoint {
  id: string;
  url: string;
  events: string[];
  created_at: string;
  previous_secret_expires_at: string | null;
  secret: string;
}

export async function createEndpoint(key: string, body: { url: string; events?: string[] }): Promise<CreatedEndpoint> {
  const response = await call('POST', '/api/webhooks', { key, body });
  if (response.status !== 201) throw new Error(`webhook endpoint creation failed: ${response.status} ${await response.text()}`);
  return (await response.json<{ data: CreatedEndpoint }>()).data;
}

export interface Delivery {
  id: string;
  endpoint_id: string;
  event_id: string;
  type: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  last_status_code: number | null;
  last_error: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  created_at: string;
  redelivery_of: string | null;
}

export async function deliveries(key: string, endpointId: string): Promise<Delivery[]> {
  const response = await call('GET', `/api/webhooks/${endpointId}/deliveries?limit=100`, { key });
  if (response.status !== 200) throw new Error(`deliveries: ${response.status} ${await response.text()}`);
  return (await response.json<{ data: Delivery[] }>()).data;
}

/**
 * Checks a Binbatch-Signature header as a receiver would, written from the definition
 * (not with the service's code): some v1 equals hex HMAC-SHA256(secret, "<t>.<body>").
 */
export async function signatureVerifies(header: string | null, body: string, secret: string): Promise<boolean> {
  if (header === null) return false;
  const parts = header.split(',').map((part) => part.split('=') as [string, string]);
  const timestamp = parts.find(([name]) => name === 't')?.[1];
  if (timestamp === undefined) return false;
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${timestamp}.${body}`)));
  const expected = [...mac].map((byte) => byte.toString(16).padStart(2, '0')).join('');
  return parts.some(([name, value]) => name === 'v1' && value === expected);
}
