import { z } from 'zod';
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
    description:
      'Public or secret key (the hosted tokenizer frame uses the public key). Rate-limited per key (600 per 60 s). ' +
      'A browser request (one with an Origin header) must come from the hosted frame on this origin and name the page ' +
      "that frames it in Tokenizer-Parent-Origin, which must be one of the merchant's tokenizer_origins; otherwise 403.",
    security: ANY_KEY,
    request: {
      headers: z.object({
        'Tokenizer-Parent-Origin': z
          .string()
          .optional()
          .meta({ description: 'Set by the hosted frame: the origin of the page that frames it.', example: 'https://shop.example' }),
      }),
      body: { required: true, content: json(tokenCreateSchema) },
    },
    responses: {
      201: ok('The token.', successEnvelopeSchema(tempTokenSchema)),
      ...errors([400, 401, 403, 413, 429]),
    },
  });
}
