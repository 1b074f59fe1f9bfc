// NumberMemo (the pooled fixed point's overlap memo) against a Map on the same keys.
import { describe, expect, it } from 'vitest';
import { NumberMemo } from '../../src/policy/pooling/numberMemo.js';
import { Rng } from '../../src/workload/random.js';

describe('NumberMemo', () => {
  it('answers as a Map does for keys across the whole range, past 2^32 included', () => {
    const memo = new NumberMemo(5000);
    const map = new Map<number, number>();
    const rng = new Rng(3);
    for (let k = 0; k < 4000; k++) {
      // Keys near one another (the planner's differ in their low digits) and far apart.
      const key =
        k % 2 === 0 ? Math.floor(rng.next() * Number.MAX_SAFE_INTEGER) : 2 ** 40 + Math.floor(rng.next() * 64);
      const value = rng.next();
      memo.set(key, value);
      map.set(key, value);
    }
    expect(memo.size).toBe(map.size);
    for (const [key, value] of map) expect(memo.get(key)).toBe(value);
    expect(memo.get(12345)).toBe(map.get(12345));
    expect(memo.get(0)).toBeUndefined();
    memo.set(0, 7);
    expect(memo.get(0)).toBe(7);
  });

  it('overwrites a key without growing, and clears itself when full', () => {
    const memo = new NumberMemo(3);
    memo.set(1, 1);
    memo.set(1, 2);
    expect(memo.size).toBe(1);
    expect(memo.get(1)).toBe(2);
    memo.set(2, 2);
    memo.set(3, 3);
    expect(memo.size).toBe(3);
    memo.set(4, 4); // a fourth key: the three before are dropped
    expect(memo.size).toBe(1);
    expect(memo.get(1)).toBeUndefined();
    expect(memo.get(4)).toBe(4);
  });

  it('refuses keys it cannot hold exactly', () => {
    const memo = new NumberMemo(4);
    for (const key of [-1, 0.5, 2 ** 53, Number.NaN, Infinity]) expect(() => memo.set(key, 1)).toThrow(/whole number/);
    expect(() => new NumberMemo(0)).toThrow(/positive integer/);
  });
});
