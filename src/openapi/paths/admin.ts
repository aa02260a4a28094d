import { settleResponseSchema } from '../../schemas/settlement';
import { idParamSchema, keyCreateSchema, merchantCreateSchema, merchantPatchSchema, processorCreateSchema } from '../../schemas/admin';
import {
  createdKeySchema,
  createdMerchantSchema,
  importResultSchema,
  merchantSchema,
  processorSchema,
  surchargeRulesResponseSchema,
} from '../../schemas/admin-response';
import { deletedSchema, successEnvelopeSchema } from '../../schemas/envelope';
import { surchargeRulesQuerySchema, surchargeRulesSchema } from '../../schemas/lookup';
import { z } from 'zod';
import { ADMIN_TOKEN, errors, json, ok, type Registry } from './common';

const tags = ['Admin'];
const security = ADMIN_TOKEN;
const merchant = successEnvelopeSchema(merchantSchema);

export function registerAdmin(registry: Registry): void {
  registry.registerPath({
    method: 'post',
    path: '/admin/merchants',
    operationId: 'createMerchant',
    tags,
    summary: 'Create a merchant: the answer shows its secret and public keys once',
    security,
    request: { body: { required: true, content: json(merchantCreateSchema) } },
    responses: { 201: ok('The merchant and its keys.', successEnvelopeSchema(createdMerchantSchema)), ...errors([400, 401, 413]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/admin/merchants/{id}',
    operationId: 'getMerchant',
    tags,
    summary: 'A merchant',
    security,
    request: { params: idParamSchema },
    responses: { 200: ok('The merchant.', merchant), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'patch',
    path: '/admin/merchants/{id}',
    operationId: 'updateMerchant',
    tags,
    summary: "Change a merchant's name, enhanced lookup flag, surcharge rate, tokenizer origins or receipt settings",
    description:
      '`receipt_settings` (docs/receipts.md): what its email receipts show besides its name (city, region, country, website, ' +
      'customer-service email and phone, refund policy); fields left out keep their value, null clears one. Its `support_email` is the receipts\' Reply-To.',
    security,
    request: { params: idParamSchema, body: { required: true, content: json(merchantPatchSchema) } },
    responses: { 200: ok('The merchant.', merchant), ...errors([400, 401, 404, 413]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/admin/merchants/{id}/settle',
    operationId: 'settleMerchant',
    tags,
    summary: "Settle the merchant's transactions awaiting settlement now, as if its cutoff had passed",
    description:
      'Every pending_settlement transaction (captured before now) settles into its processor\'s settlement batch of today. ' +
      'The request drives the run in bounded steps (docs/transactions.md, "Settlement") and answers the batches made or added to by this run; ' +
      'an empty list when nothing was awaiting settlement. Running it again settles nothing twice. ' +
      'When a ledger shard of the merchant cannot be settled now, the run goes on without it and the answer is 202: ' +
      'the batches so far; the merchant\'s settlement alarm retries that shard with backoff and finishes the run, losing nothing.',
    security,
    request: { params: idParamSchema },
    responses: {
      200: ok('The run finished: the settlement batches it made or added to.', settleResponseSchema),
      202: ok("The run goes on by the merchant's alarm (a ledger shard failed and is retried): the batches made or added to so far.", settleResponseSchema),
      ...errors([400, 401, 404]),
    },
  });
  registry.registerPath({
    method: 'post',
    path: '/admin/merchants/{id}/keys',
    operationId: 'createKey',
    tags,
    summary: 'Issue another API key (shown once)',
    security,
    request: { params: idParamSchema, body: { required: true, content: json(keyCreateSchema) } },
    responses: { 201: ok('The key.', successEnvelopeSchema(createdKeySchema)), ...errors([400, 401, 404, 413]) },
  });
  registry.registerPath({
    method: 'delete',
    path: '/admin/keys/{id}',
    operationId: 'revokeKey',
    tags,
    summary: 'Revoke a key: refused from then on',
    security,
    request: { params: idParamSchema },
    responses: { 200: ok('Revoked.', successEnvelopeSchema(deletedSchema)), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'get',
    path: '/admin/merchants/{id}/processors',
    operationId: 'listProcessors',
    tags,
    summary: "A merchant's processors (the sandbox processor is created on first use)",
    security,
    request: { params: idParamSchema },
    responses: { 200: ok('The processors.', successEnvelopeSchema(z.array(processorSchema))), ...errors([400, 401, 404]) },
  });
  registry.registerPath({
    method: 'post',
    path: '/admin/merchants/{id}/processors',
    operationId: 'addProcessor',
    tags,
    summary: 'Add a processor',
    security,
    request: { params: idParamSchema, body: { required: true, content: json(processorCreateSchema) } },
    responses: { 201: ok('The processor.', successEnvelopeSchema(processorSchema)), ...errors([400, 401, 404, 413]) },
  });
  for (const [path, operationId, summary, columns] of [
    ['/admin/bins/import', 'importBins', 'Import BIN records (CSV, streamed, upserting)', 'bin,card_brand,issuing_bank,card_type,card_level_generic,country,payment_method_type,prepaid,commercial,currency (any order); or the binlist or OpenBIIN header'],
    ['/admin/bins/ranges/import', 'importAccountRanges', 'Import account ranges for the enhanced lookup (CSV, streamed)', 'low,high and the BIN record fields'],
  ] as const) {
    registry.registerPath({
      method: 'post',
      path,
      operationId,
      tags,
      summary,
      description: `Columns: ${columns}. A bad row is reported with its line and never stops the rest. At most 32 MiB and 100,000 rows per request.`,
      security,
      request: { body: { required: true, content: { 'text/csv': { schema: { type: 'string', format: 'binary', contentMediaType: 'text/csv' } } } } },
      responses: {
        200: ok('What was imported, and the bad rows.', successEnvelopeSchema(importResultSchema)),
        ...errors([400, 401, 413]),
      },
    });
  }
  registry.registerPath({
    method: 'get',
    path: '/admin/surcharge-rules',
    operationId: 'listSurchargeRules',
    tags,
    summary: 'The surcharge rules: all of them (history included), or those in force on a date',
    description:
      "Both origins: `shipped` (the release's network rules and law, applied by each release) and `operator` (yours, PUT). " +
      '`in_force_on` answers, of each line (same layer, place and conditions), the rule in force on that local date; ' +
      '`country` (+ `region`) keeps the rules of one place, `origin` those of one origin.',
    security,
    request: { query: surchargeRulesQuerySchema },
    responses: { 200: ok('The rules.', successEnvelopeSchema(surchargeRulesResponseSchema)), ...errors([400, 401]) },
  });
  registry.registerPath({
    method: 'put',
    path: '/admin/surcharge-rules',
    operationId: 'replaceSurchargeRules',
    tags,
    summary: "Replace the operator's rules (the shipped rules stay)",
    description:
      "The body is the operator's whole rule set (`GET ?origin=operator`, edited); an empty list removes them all. " +
      'Rules of origin `shipped` are refused: correct one with a rule of the same layer, place, date and conditions (yours wins), or a later one.',
    security,
    request: { body: { required: true, content: json(surchargeRulesSchema) } },
    responses: { 200: ok("The operator's rules now stored.", successEnvelopeSchema(surchargeRulesResponseSchema)), ...errors([400, 401, 413]) },
  });
}
