// The tests' Email Service: the RECEIPT_EMAIL binding of the test pool (vitest.config.ts) is this
// worker instead of Miniflare's `send_email` simulator, whose messages land in files under a temp
// directory. It checks a message as Cloudflare's Email Service documents it (recipients, subject,
// size, the header allowlist, no line break in a header) and records what it accepts. (A send a
// test wants to fail is failed in the Worker's isolate, test/helpers/receipts.ts `failNextSends`:
// an error thrown across RPC is also reported by workerd as uncaught here.)
//   https://developers.cloudflare.com/email-service/api/send-emails/workers-api/#error-codes
//   https://developers.cloudflare.com/email-service/reference/headers/
import { WorkerEntrypoint } from 'cloudflare:workers';

/** Every message accepted, in order (shared by the test files this isolate serves: filter by recipient). */
const sent = [];

const PLATFORM_HEADERS = ['date', 'message-id', 'mime-version', 'content-type', 'content-transfer-encoding', 'dkim-signature', 'return-path', 'received'];
const API_FIELDS = ['from', 'to', 'cc', 'bcc', 'subject', 'reply-to'];
const ALLOWED = ['in-reply-to', 'references', 'list-unsubscribe', 'list-unsubscribe-post', 'list-id', 'precedence', 'auto-submitted', 'content-language', 'importance', 'organization'];

function fail(code, message) {
  const error = new Error(`${code}: ${message}`);
  error.code = code;
  return error;
}

const address = (value) => (typeof value === 'string' ? value : value?.email);
const LINE_BREAK = /[\r\n]/;

function check(message) {
  const to = Array.isArray(message.to) ? message.to : [message.to];
  if (!message.from || to.length === 0 || !message.subject) throw fail('E_FIELD_MISSING', 'to, from and subject are required');
  if (to.length > 50) throw fail('E_TOO_MANY_RECIPIENTS', 'at most 50 recipients');
  if (message.subject.length > 998) throw fail('E_VALIDATION_ERROR', 'subject over 998 characters');
  for (const value of [message.subject, message.from?.name ?? '', address(message.from), address(message.replyTo) ?? '', ...to]) {
    if (LINE_BREAK.test(value)) throw fail('E_VALIDATION_ERROR', 'a line break in a header field');
  }
  let headerBytes = 0;
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const lower = name.toLowerCase();
    if (PLATFORM_HEADERS.includes(lower)) throw fail('E_HEADER_NOT_ALLOWED', `header '${name}' is platform-controlled`);
    if (API_FIELDS.includes(lower)) throw fail('E_HEADER_USE_API_FIELD', `header '${name}' must be set via its API field`);
    if (!lower.startsWith('x-') && !ALLOWED.includes(lower)) throw fail('E_HEADER_NOT_ALLOWED', `header '${name}' is not on the allowlist`);
    if (value === '' || LINE_BREAK.test(value)) throw fail('E_HEADER_VALUE_INVALID', `header '${name}' is empty or has a line break`);
    if (new TextEncoder().encode(value).length > 2048) throw fail('E_HEADER_VALUE_TOO_LONG', `header '${name}' is over 2048 bytes`);
    headerBytes += name.length + value.length + 4;
  }
  if (headerBytes > 16_000) throw fail('E_HEADERS_TOO_LARGE', 'custom headers over 16 KB');
  const size = new TextEncoder().encode(`${message.subject}${message.text ?? ''}${message.html ?? ''}`).length;
  if (size > 5 * 1024 * 1024) throw fail('E_CONTENT_TOO_LARGE', 'message over 5 MiB');
  if (!message.text && !message.html) throw fail('E_FIELD_MISSING', 'text or html is required');
  return to;
}

export class MailRecorder extends WorkerEntrypoint {
  send(message) {
    const to = check(message);
    const from = address(message.from);
    const messageId = `<${crypto.randomUUID()}@${from.slice(from.indexOf('@') + 1)}>`;
    sent.push({ ...message, to: to.length === 1 ? to[0] : to, messageId });
    return { messageId };
  }

  /** The messages accepted for `to` (every one when not given), in order. */
  async messages(to) {
    return sent.filter((message) => to === undefined || message.to === to);
  }
}

export default {
  fetch() {
    return new Response('the tests\' Email Service (test/helpers/mail-recorder.worker.mjs)');
  },
};
