/**
 * The one signed POST every webhook attempt makes, for batch events (delivery.ts) and transaction
 * events (transaction-event-delivery.ts) alike:
 *
 *   POST <endpoint url>   body: the event's JSON, the same bytes at every attempt
 *     Content-Type: application/json
 *     Binbatch-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>[,v1=<previous secret's>]
 *     Binbatch-Event-Id: evt_…      Binbatch-Delivery-Id: the attempt's delivery
 *     Signature: <base64url HMAC-SHA256(secret, body)>   [Signature-Previous: <previous secret's>]   X-Webhook-Event-Id: evt_…  (FluidPay's)
 *
 * Signed with the endpoint's current secret and, while a rotation's overlap lasts, its previous
 * one. No redirect is followed, and the time limit starts as the request is sent.
 */
import { fluidPaySignatureHeaders, signatureHeader } from '../../lib/webhook-signature';
import type { WebhookDeps } from './deps';
import { openSigningSecret } from './secrets';

/** An endpoint's sealed secrets, as its row holds them. */
export interface EndpointSecrets {
  merchantId: string;
  endpointId: string;
  sealedSecret: string;
  sealedPreviousSecret: string | null;
  /** When the previous secret stops signing (the rotation's overlap). */
  previousSecretExpiresAt: string | null;
}

/** One attempt's request: where, what, and the ids its headers carry. */
export interface SignedPost {
  url: string;
  body: string;
  eventId: string;
  deliveryId: string;
}

export type SendResult = { statusCode: number | null; error: string | null };

/** Sends one attempt: its status, or what kept it from getting one (a timeout, a network error). */
export async function sendSigned(
  deps: Pick<WebhookDeps, 'dataKey' | 'config' | 'fetch' | 'timeoutSignal'>,
  endpoint: EndpointSecrets,
  post: SignedPost,
  now: Date,
): Promise<SendResult> {
  const secrets = await activeSecrets(deps.dataKey, endpoint, now);
  const headers = {
    'Content-Type': 'application/json',
    'User-Agent': 'binbatch-webhooks/1',
    'Binbatch-Signature': await signatureHeader(secrets, Math.floor(now.getTime() / 1_000), post.body),
    'Binbatch-Event-Id': post.eventId,
    'Binbatch-Delivery-Id': post.deliveryId,
    // FluidPay's verifier (their SDKs' ParseWebhookRequest) reads these.
    ...(await fluidPaySignatureHeaders(secrets, post.body)),
    'X-Webhook-Event-Id': post.eventId,
  };
  let response: Response;
  try {
    // The time limit starts here, as the request is sent, not when the attempt began: the consumers
    // keep their attempts within the invocation's connections, so no request waits for one unsent
    // while its limit runs (queues/webhook-consumer.ts, ATTEMPTS_AT_ONCE).
    const signal = deps.timeoutSignal(deps.config.timeoutMs);
    response = await deps.fetch(post.url, {
      method: 'POST',
      headers,
      body: post.body,
      // A redirect could lead anywhere, past the URL rules: it counts as a failed attempt.
      redirect: 'manual',
      signal,
    });
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    if (error.name === 'TimeoutError' || error.name === 'AbortError') {
      return { statusCode: null, error: `timed out after ${deps.config.timeoutMs / 1_000} s` };
    }
    return { statusCode: null, error: `network error: ${error.message.slice(0, 200)}` };
  }
  // The answer's body is not wanted (nor stored): release the connection.
  await response.body?.cancel().catch(() => undefined);
  if (response.status >= 200 && response.status < 300) return { statusCode: response.status, error: null };
  const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : '';
  return { statusCode: response.status, error: `HTTP ${response.status}${redirect}` };
}

/** The current secret, and the previous one while its rotation overlap lasts. */
async function activeSecrets(dataKey: string, endpoint: EndpointSecrets, now: Date): Promise<string[]> {
  const open = (sealed: string) => openSigningSecret(dataKey, endpoint.merchantId, endpoint.endpointId, sealed);
  const current = await open(endpoint.sealedSecret);
  // CARD_DATA_KEY changed or the row was tampered with: an operator's problem, not the receiver's.
  if (current === null) throw new Error(`the signing secret of endpoint ${endpoint.endpointId} cannot be opened`);
  const secrets = [current];
  const overlapEnds = endpoint.previousSecretExpiresAt;
  if (endpoint.sealedPreviousSecret !== null && overlapEnds !== null && Date.parse(overlapEnds) > now.getTime()) {
    const previous = await open(endpoint.sealedPreviousSecret);
    if (previous !== null) secrets.push(previous);
  }
  return secrets;
}
