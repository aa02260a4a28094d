/**
 * The OpenAPI document is valid OpenAPI 3.1, checked by a maintained validator against the
 * specification's own JSON Schema. Runs in Node: the validator needs the file system.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import { describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/openapi/document';

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1 (openapi-schema-validator)', async () => {
    const document = openApiDocument();
    expect(document.openapi).toBe('3.1.0');
    const result = await new Validator().validate(structuredClone(document) as never);
    expect(result.errors ?? [], JSON.stringify(result.errors, null, 2)).toEqual([]);
    expect(result.valid).toBe(true);
  });
});
