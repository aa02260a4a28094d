import { describe, expect, it } from 'vitest';
import { closestField, editDistance } from '../../src/lib/closest-field';

const LOOKUP = ['bin', 'temp_token', 'customer_id', 'payment_method_id', 'country', 'state'];

describe('closestField: the known field an unknown one probably meant', () => {
  it.each([
    ['State', 'state'],
    ['COUNTRY', 'country'],
    ['tempToken', 'temp_token'],
    ['customer-id', 'customer_id'],
    ['stat', 'state'],
    ['contry', 'country'],
    ['cusotmer_id', 'customer_id'],
    ['payment_method', 'payment_method_id'],
  ])('%s → %s', (unknown, meant) => {
    expect(closestField(unknown, LOOKUP)).toBe(meant);
  });

  it('suggests nothing when no field is close', () => {
    expect(closestField('zip', LOOKUP)).toBeNull();
    expect(closestField('amount', LOOKUP)).toBeNull();
    expect(closestField('x', LOOKUP)).toBeNull();
    expect(closestField('State', [])).toBeNull();
  });

  it('counts a swap of neighbours as one edit, and stops at the limit', () => {
    expect(editDistance('cvc', 'ccv')).toBe(1);
    expect(editDistance('kitten', 'sitting')).toBe(3);
    expect(editDistance('abc', 'abc')).toBe(0);
    expect(editDistance('a', 'abcdefgh', 2)).toBe(2);
  });
});
