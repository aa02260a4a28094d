/**
 * The one place validation errors are formatted: every route validates with `validate(...)`,
 * which wraps @hono/zod-validator and turns zod issues into a 400 envelope naming each field.
 */
import { zValidator } from '@hono/zod-validator';
import type { MiddlewareHandler, ValidationTargets } from 'hono';
import type { z } from 'zod';
import { AppError, type FieldError } from '../errors';
import { closestField } from '../lib/closest-field';
import { describeFieldErrors } from '../lib/field-errors';
import { containsCardNumber } from '../lib/card-number';

export function fieldErrors(issues: readonly z.core.$ZodIssue[], schema?: z.ZodType): FieldError[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'unrecognized_keys') return unknownFieldErrors(issue.path, issue.keys, schema ? knownKeysAt(schema, issue.path) : []);
    return [{ field: issue.path.length > 0 ? issue.path.map(String).join('.') : '(body)', msg: issue.message }];
  });
}

/**
 * One error per unknown field, named by its path, with the known field it was probably meant to be
 * (`State: unknown field; did you mean state?`). A wrongly flattened form can send a card number
 * as a key, and a message must never carry one (SPEC: card data never reaches error messages):
 * such a key is named "(a card number)" and gets no suggestion.
 */
function unknownFieldErrors(path: readonly PropertyKey[], keys: readonly string[], known: readonly string[]): FieldError[] {
  return keys.map((key) => {
    const isCard = containsCardNumber(key);
    const field = [...path.map(String), isCard ? '(a card number)' : key].join('.');
    const meant = isCard ? null : closestField(key, known);
    return { field, msg: meant === null ? 'unknown field' : `unknown field; did you mean ${meant}?` };
  });
}

/**
 * The field names of the object a zod schema expects at `path` (empty when there is none):
 * what an unknown field there is compared with. Follows the wrappers request schemas use
 * (optional, nullable, default, transform pipes, arrays, unions).
 */
export function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] {
  const def = (schema as z.core.$ZodTypes)._zod.def;
  switch (def.type) {
    case 'object': {
      if (path.length === 0) return Object.keys(def.shape);
      const next = def.shape[String(path[0])];
      return next ? knownKeysAt(next, path.slice(1)) : [];
    }
    case 'array':
      return path.length > 0 ? knownKeysAt(def.element, path.slice(1)) : [];
    case 'pipe':
      // A transform reads the input side: that is where the client's fields are.
      return knownKeysAt(def.in, path);
    case 'union':
      return [...new Set(def.options.flatMap((option) => knownKeysAt(option, path)))];
    case 'lazy':
      return knownKeysAt(def.getter(), path);
    case 'optional':
    case 'nullable':
    case 'default':
    case 'prefault':
    case 'nonoptional':
    case 'readonly':
    case 'catch':
      return knownKeysAt(def.innerType, path);
    default:
      return [];
  }
}

/**
 * Validates one part of the request with a zod schema. For a JSON body the Content-Type is checked
 * first: Hono's JSON validator silently reads a body of another type as `{}`, and a client that
 * forgot the header deserves to be told so rather than "field is required". A body of another
 * media type (or none named) is a 415, the status HTTP has for it (docs/api-decisions.md).
 */
export function validate<Target extends keyof ValidationTargets, Schema extends z.ZodType>(
  target: Target,
  schema: Schema,
) {
  const validator = zValidator(target, schema, (result) => {
    if (!result.success) {
      const errors = fieldErrors(result.error.issues, schema);
      throw new AppError('bad_request', describeFieldErrors(errors), errors);
    }
  });
  if (target !== 'json') return validator;
  const jsonValidator: MiddlewareHandler = async (c, next) => {
    if (!/^application\/([a-z.+-]*\+)?json\b/i.test(c.req.header('Content-Type') ?? '')) {
      throw new AppError('unsupported_media_type', 'Content-Type must be application/json');
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

/**
 * A JSON body that comes in one of two shapes (binbatch's and FluidPay's), told apart once by
 * `pick` on the parsed body; each is validated by its own schema, so errors name its fields, and
 * read into the one value the handler takes. Typed (and documented) as `documented`, the union of
 * both bodies, for the client.
 */
export function validateJsonByShape<Documented extends z.ZodType, Out>(documented: Documented, pick: (body: unknown) => z.ZodType<Out>) {
  const middleware: MiddlewareHandler = async (c, next) => {
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      // Not JSON (or not announced as JSON): the default shape's validator says what is wrong.
      body = undefined;
    }
    return validate('json', pick(body))(c, next);
  };
  type Declared = ReturnType<typeof validate<'json', Documented>>;
  type Input = Declared extends MiddlewareHandler<infer _E, infer _P, infer I> ? I : never;
  return middleware as unknown as MiddlewareHandler<
    Declared extends MiddlewareHandler<infer E> ? E : never,
    string,
    { in: Input extends { in: infer In } ? In : never; out: { json: Out } }
  >;
}
