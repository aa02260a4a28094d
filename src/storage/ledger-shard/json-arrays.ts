/**
 * Values bound to `json_each` as JSON arrays, each at most half of what one bound value may hold
 * (bulk.ts and operation-blocks.ts write and read a group of rows a statement this way).
 */
import { DURABLE_OBJECTS, HALF } from '../../lib/platform-limits';
import { utf8Bytes } from './pages';

/** The JSON one bound parameter carries at most. */
export const JSON_PARAMETER_BYTES = DURABLE_OBJECTS.rowBytes * HALF;

/**
 * `values` as JSON arrays of at most JSON_PARAMETER_BYTES each, in order (a value larger than that
 * alone would travel alone; every value here is an id, a key or one record, far under it).
 */
export function jsonArrays(values: readonly unknown[]): string[] {
  const arrays: string[] = [];
  let parts: string[] = [];
  let size = 2;
  for (const value of values) {
    const text = JSON.stringify(value);
    const bytes = utf8Bytes(text) + 1;
    if (parts.length > 0 && size + bytes > JSON_PARAMETER_BYTES) {
      arrays.push(`[${parts.join(',')}]`);
      parts = [];
      size = 2;
    }
    parts.push(text);
    size += bytes;
  }
  if (parts.length > 0) arrays.push(`[${parts.join(',')}]`);
  return arrays;
}
