/**
 * The one place validation errors are formatted: every route validates with `validate(...)`,
 * which wraps @hono/zod-validator and turns zod issues into a 400 envelope naming each field.
 */
import { zValidator } from '@hono/zod-validator';
import type { MiddlewareHandler, ValidationTargets } from 'hono';
import type { z } from 'zod';
import { AppError, type FieldError } from '../errors';
import { describeFieldErrors } from '../lib/field-errors';
import { containsCardNumber } from '../lib/card-number';

export function fieldErrors(issues: readonly z.core.$ZodIssue[]): FieldError[] {
  return issues.map((issue) => ({
    field: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)',
    msg: issue.code === 'unrecognized_keys' ? unrecognizedKeysMessage(issue.keys) : issue.message,
  }));
}

/**
 * Zod quotes unknown key names back; a wrongly flattened form can send a card number as a key,
 * and a message must never carry one (SPEC: card data never reaches error messages).
 */
function unrecognizedKeysMessage(keys: readonly string[]): string {
  const shown = keys.map((key) => (containsCardNumber(key) ? '(a card number)' : JSON.stringify(key)));
  return `Unrecognized key${keys.length > 1 ? 's' : ''}: ${shown.join(', ')}`;
}

/**
 * Validates one part of the request with a zod schema. For a JSON body the Content-Type is checked
 * first: Hono's JSON validator silently reads a body of another type as `{}`, and a client that
 * forgot the header deserves to be told so rather than "field is required".
 */
export function validate<Target extends keyof ValidationTargets, Schema extends z.ZodType>(
  target: Target,
  schema: Schema,
) {
  const validator = zValidator(target, schema, (result) => {
    if (!result.success) {
      const errors = fieldErrors(result.error.issues);
      throw new AppError('bad_request', describeFieldErrors(errors), errors);
    }
  });
  if (target !== 'json') return validator;
  const jsonValidator: MiddlewareHandler = async (c, next) => {
    if (!/^application\/([a-z.+-]*\+)?json\b/i.test(c.req.header('Content-Type') ?? '')) {
      throw new AppError('bad_request', 'Content-Type must be application/json');
    }
    return validator(c, next);
  };
  return jsonValidator as typeof validator;
}

/**
 * Validates like `validate` without declaring the part to the typed client: for what Cloudflare
 * sets rather than the caller (CF-Connecting-IP), which a client must not be asked to send. The
 * handler reads the checked value from the request itself.
 */
export function check<Target extends keyof ValidationTargets>(target: Target, schema: z.ZodType): MiddlewareHandler {
  return validate(target, schema) as MiddlewareHandler;
}

/**
 * A JSON body that may be left out (capture, void, refund): no body, or an empty one, is read as
 * `{}`; a body present is validated like `validate('json', schema)`.
 */
export function optionalJson<Schema extends z.ZodType>(schema: Schema) {
  const validator = validate('json', schema);
  const middleware: MiddlewareHandler = async (c, next) => {
    const text = c.req.raw.body === null ? '' : await c.req.raw.clone().text();
    if (text.trim() === '') {
      const parsed = schema.safeParse({});
      if (!parsed.success) {
        const errors = fieldErrors(parsed.error.issues);
        throw new AppError('bad_request', describeFieldErrors(errors), errors);
      }
      c.req.addValidatedData('json', parsed.data as object);
      return next();
    }
    return validator(c, next);
  };
  return middleware as typeof validator;
}
