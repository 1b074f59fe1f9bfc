// A pipeline step's tasks in the scheduler's control plane (scheduler/control.ts, driven by hand through
// test/support/control.ts), under the rule the twin runs (src/serving/pipeline.ts, docs/pipelines.md): its first
// step measures its request's way in, and a step's queue keeps its tasks in stamp order.
import { afterEach, describe, expect, it } from 'vitest';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';
import { FixedPolicy } from '../support/fakes.js';

const rtx = loadProfileFile('rtx2060s');
const harnesses: Harness[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) h.control.stop();
});
function harness(timeoutAction: 'delay' | 'reject'): Harness {
  const h = controlHarness({
    models: [{ name: 'resnet50', sloMs: 1000, queuePolicy: { timeoutAction } }],
    profiles: new Map([[rtx.id, rtx]]),
    policy: () => new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] }),
    gpus: simGpus('rtx2060s', 1),
  });
  harnesses.push(h);
  return h;
}
const input = { name: 'input', datatype: 'FP32' as const, shape: [1, 3, 224, 224], data: Buffer.alloc(602112) };

describe("a pipeline step's tasks in the scheduler", () => {
  it("a pipeline's first step measures its request's way in whatever its stamp; a later step does not", () => {
    const h = harness('reject');
    h.report('ready');
    h.now = 1000;
    const ignore = () => undefined;
    h.control.submit(0, input, ignore, { receivedMs: 1000 - 7, stampMs: 950, wayIn: true }); // the plan's split
    h.control.submit(0, input, ignore, { receivedMs: 1000 - 40, stampMs: 1100 }); // a later step: no way in
    for (const b of h.batches()) h.result(b.batchId); // the host's transport entry comes with its first batch
    const entry = (
      h.control.snapshot() as {
        transport: Record<string, { wayIn?: { fixedMs: number; perMbMs: number }; requests?: number }>;
      }
    ).transport.a1!;
    expect(entry.requests).toBe(1);
    expect(entry.wayIn!.fixedMs).toBeCloseTo(7, 6);
  });

  it('a step queue keeps its tasks in stamp order, not in the order their earlier steps answered', () => {
    // As the twin's step lanes (src/sim/taskBuffer.ts): the request that arrived first is stamped first, wherever
    // its earlier step finished; the stamps are ahead of the clock, as a step's are when earlier steps were quick.
    const h = harness('delay');
    const answers: string[] = [];
    h.now = 100;
    h.control.submit(0, input, () => answers.push('stamped 150'), { receivedMs: 70, stampMs: 150 });
    h.control.submit(0, input, () => answers.push('stamped 120'), { receivedMs: 40, stampMs: 120 });
    h.control.submit(0, input, () => answers.push('stamped 130'), { receivedMs: 50, stampMs: 130 });
    h.report('ready');
    for (let i = 0; i < 3; i++) h.result(h.batches()[i]!.batchId);
    expect(answers).toEqual(['stamped 120', 'stamped 130', 'stamped 150']);
  });
});
