import { describe, expect, it } from 'vitest';
import {
  budgetsError,
  evenBudgets,
  pipelineWiringError,
  stepStampMs,
  type Pipeline,
} from '../../src/serving/pipeline.js';

const chain: Pipeline = {
  name: 'detect-classify',
  sloMs: 300,
  steps: [
    { model: 'resize', inputMap: { RAW: 'IMAGE' }, outputMap: { OUT: 'small' } },
    { model: 'detector', inputMap: { input: 'small' }, outputMap: { boxes: 'crops' } },
    { model: 'classifier', inputMap: { input: 'crops' }, outputMap: { output: 'LABELS' } },
  ],
};

describe('pipeline budgets', () => {
  it('splits evenly and sums to the SLO', () => {
    expect(evenBudgets(chain)).toEqual([100, 100, 100]);
    expect(budgetsError(chain, evenBudgets(chain))).toBeUndefined();
  });

  it('refuses a split of the wrong length, a non-positive budget, or one that misses the SLO', () => {
    expect(budgetsError(chain, [150, 150])).toMatch(/3 steps but 2 budgets/);
    expect(budgetsError(chain, [0, 150, 150])).toMatch(/step 0: budget 0/);
    expect(budgetsError(chain, [100, 100, 90])).toMatch(/sum to 290 ms, not its SLO of 300/);
  });

  it('stamps each step with the budgets before it, so its deadline is the cumulative budget', () => {
    const b = [50, 150, 100];
    expect(stepStampMs(1000, b, 0)).toBe(1000);
    expect(stepStampMs(1000, b, 1)).toBe(1050);
    expect(stepStampMs(1000, b, 2)).toBe(1200);
    expect(stepStampMs(1000, b, 2) + b[2]!).toBe(1000 + chain.sloMs);
  });
});

describe('pipeline wiring', () => {
  it('accepts a chain whose every input is known when its step runs', () => {
    expect(pipelineWiringError(chain, ['IMAGE'], ['LABELS'])).toBeUndefined();
  });

  it('names the step and tensor read before it is written', () => {
    const swapped: Pipeline = { ...chain, steps: [chain.steps[1]!, chain.steps[0]!, chain.steps[2]!] };
    expect(pipelineWiringError(swapped, ['IMAGE'], ['LABELS'])).toMatch(
      /step 0 \(detector\): input 'input' reads 'small'/,
    );
  });

  it('names an output no step writes, a tensor written twice, and an empty pipeline', () => {
    expect(pipelineWiringError(chain, ['IMAGE'], ['LABELS', 'SCORES'])).toMatch(
      /output 'SCORES' is written by no step/,
    );
    const twice: Pipeline = {
      ...chain,
      steps: [...chain.steps, { model: 'x', inputMap: { a: 'small' }, outputMap: { b: 'LABELS' } }],
    };
    expect(pipelineWiringError(twice, ['IMAGE'], ['LABELS'])).toMatch(/step 3 \(x\): output 'b' writes 'LABELS'/);
    expect(pipelineWiringError({ ...chain, steps: [] }, [], [])).toMatch(/has no steps/);
  });
});
