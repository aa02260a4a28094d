import { binLookupRequestSchema } from '../../schemas/lookup';
import { binLookupResponseSchema } from '../../schemas/lookup-response';
import { errors, json, ok, SECRET_KEY, type Registry } from './common';

export function registerLookup(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/api/lookup/bin/protected',
    operationId: 'lookupBin',
    tags: ['BIN lookup'],
    summary: 'Card metadata for a BIN, a temp token or a vault card',
    description:
      'Exactly one source: `bin` (6 to 19 digits), `temp_token`, or `customer_id` (+ optional `payment_method_id`). ' +
      '`country` + `state` (the place of sale) add `is_surchargeable`; `amount` (minor units, with them) adds the surcharge the merchant may add to it. ' +
      'Longest stored prefix wins; an unknown BIN answers 200 with a minimal body. ' +
      'Rate-limited per key (1,200 per 60 s).',
    security: SECRET_KEY,
    request: { body: { required: true, content: json(binLookupRequestSchema) } },
    responses: {
      200: ok('Card metadata; fields the data does not know are absent.', binLookupResponseSchema),
      ...errors([400, 401, 413, 429], {
        400: 'Validation error (no source, two sources, a malformed field, an unknown or expired temp token, an unknown vault customer).',
      }),
    },
  });
}
