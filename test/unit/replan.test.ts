import { describe, expect, it } from 'vitest';
import { ratesMoved } from '../../src/policy/replan.js';

describe('ratesMoved: the re-plan gate gpulet, iGniter, the oracle and inss share', () => {
  const gate = { fraction: 0.1, floorPerS: 1 };

  it('moves when some rate changed by more than the fraction of the rate planned for', () => {
    expect(ratesMoved([100, 50], [110, 50], gate)).toBe(false); // exactly 10%: not more
    expect(ratesMoved([100, 50], [110.01, 50], gate)).toBe(true);
    expect(ratesMoved([100, 50], [100, 44.9], gate)).toBe(true);
    expect(ratesMoved([100, 50], [91, 54], gate)).toBe(false);
  });

  it('counts rates under the floor as the floor, so near-idle models do not trigger a re-plan', () => {
    expect(ratesMoved([0, 0.2], [0.09, 0.25], gate)).toBe(false);
    expect(ratesMoved([0, 0.2], [0.11, 0.2], gate)).toBe(true);
    expect(ratesMoved([0, 0.2], [0.5, 0.2], { fraction: 0.1, floorPerS: 10 })).toBe(false);
  });

  it('with onStartStop, traffic that starts or stops moves the gate however small', () => {
    const startStop = { ...gate, onStartStop: true };
    expect(ratesMoved([0, 5], [0.01, 5], startStop)).toBe(true);
    expect(ratesMoved([0.01, 5], [0, 5], startStop)).toBe(true);
    expect(ratesMoved([0.01, 5], [0, 5], gate)).toBe(false);
    expect(ratesMoved([0, 5], [0, 5.1], startStop)).toBe(false);
  });

  it('a different number of models always moves it', () => {
    expect(ratesMoved([1, 2], [1, 2, 3], gate)).toBe(true);
    expect(ratesMoved([], [], gate)).toBe(false);
  });
});
