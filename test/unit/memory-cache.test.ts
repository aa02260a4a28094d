import { describe, expect, it } from 'vitest';
import { MemoryCache } from '../../src/lib/memory-cache';

describe('MemoryCache', () => {
  it('keeps at most `limit` entries, dropping the oldest first', () => {
    const cache = new MemoryCache<number>(2);
    cache.set('a', 1);
    cache.set('b', 2);
    cache.set('c', 3);
    expect([cache.get('a'), cache.get('b'), cache.get('c')]).toEqual([undefined, 2, 3]);
  });

  it('keeps null as a value (a cached miss) and forgets deleted keys', () => {
    const cache = new MemoryCache<string | null>(10);
    cache.set('miss', null);
    expect(cache.get('miss')).toBeNull();
    cache.delete('miss');
    expect(cache.get('miss')).toBeUndefined();
  });

  it('expires entries after their time to live, by the injected clock', () => {
    let now = 1_000;
    const cache = new MemoryCache<string>(10, 10_000, () => now);
    cache.set('key', 'caller');
    now += 9_999;
    expect(cache.get('key')).toBe('caller');
    now += 1;
    expect(cache.get('key')).toBeUndefined();
  });
});
