import { successEnvelopeSchema } from '../../schemas/envelope';
import { tokenCreateSchema } from '../../schemas/tokenizer';
import { tempTokenSchema } from '../../schemas/tokenizer-response';
import { ANY_KEY, errors, json, ok, type Registry } from './common';

export function registerTokenizer(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/tokenizer/token',
    operationId: 'createTempToken',
    tags: ['Tokens and vault'],
    summary: 'Tokenize a card: a temp token valid 15 minutes for this merchant',
    description: 'Public or secret key (the browser component uses the public key). Rate-limited per key (600 per 60 s).',
    security: ANY_KEY,
    request: {
      body: { required: true, content: json(tokenCreateSchema) },
    },
    responses: {
      201: ok('The token.', successEnvelopeSchema(tempTokenSchema)),
      ...errors([400, 401, 413, 429]),
    },
  });
}
