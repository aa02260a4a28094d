import type { Context } from 'hono';
import { HTTPException } from 'hono/http-exception';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppEnv } from './env';
import { ClientAbortError } from './lib/body-reader';
import { redactDigits, redactUrlPart } from './lib/redact';
import type { FailedEnvelope, FieldError, SuccessEnvelope } from './schemas/envelope';

/** The closed list of error codes the service answers with. */
export type ErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'payment_declined'
  | 'gone'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'rate_limited'
  | 'internal';

export type { FailedEnvelope, FieldError };

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly fieldErrors?: FieldError[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export function statusOf(code: ErrorCode): ContentfulStatusCode {
  switch (code) {
    case 'bad_request':
      return 400;
    case 'unauthorized':
      return 401;
    case 'forbidden':
      return 403;
    case 'not_found':
      return 404;
    case 'method_not_allowed':
      return 405;
    case 'conflict':
      return 409;
    case 'payment_declined':
      return 402;
    case 'gone':
      return 410;
    case 'payload_too_large':
      return 413;
    case 'unsupported_media_type':
      return 415;
    case 'rate_limited':
      return 429;
    case 'internal':
      return 500;
  }
}

export function failed(msg: string, errors?: FieldError[]): FailedEnvelope {
  return errors && errors.length > 0 ? { status: 'failed', msg, data: null, errors } : { status: 'failed', msg, data: null };
}

/** The envelope, success form. */
export function success<T>(data: T): SuccessEnvelope<T> {
  return { status: 'success', msg: 'success', data };
}

const HTTP_CODES: Partial<Record<number, ErrorCode>> = {
  400: 'bad_request',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'method_not_allowed',
  402: 'payment_declined',
  409: 'conflict',
  410: 'gone',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
};

/**
 * The one error handler. AppError and HTTPException carry messages written for the client;
 * anything else is logged with the request id (never the input) and answered generically.
 */
export function handleError(err: Error, c: Context<AppEnv>): Response {
  if (err instanceof AppError) {
    for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value);
    return c.json(failed(err.message, err.fieldErrors), statusOf(err.code));
  }
  if (err instanceof HTTPException && HTTP_CODES[err.status]) {
    // Hono's own exceptions (malformed JSON, body limit) have short, input-free messages.
    const msg = err.status === 413 ? 'request body too large' : err.message || 'bad request';
    return c.json(failed(msg), err.status as ContentfulStatusCode);
  }
  const requestId = c.get('requestId') ?? 'unknown';
  if (err instanceof ClientAbortError) {
    // Nobody is left to read the answer; 499 (nginx's "client closed request") marks it in the request log.
    console.log(JSON.stringify({ level: 'info', event: 'client_aborted', request_id: requestId, path: redactUrlPart(new URL(c.req.url).pathname), bytes_read: err.bytesRead }));
    return c.body(null, 499 as ContentfulStatusCode);
  }
  // A message may quote input, and input may hold card data: digits are redacted before logging.
  console.error(
    JSON.stringify({
      level: 'error',
      request_id: requestId,
      path: redactUrlPart(new URL(c.req.url).pathname),
      error: err.name,
      message: redactDigits(err.message),
    }),
  );
  return c.json({ ...failed('internal server error'), request_id: requestId }, 500);
}
