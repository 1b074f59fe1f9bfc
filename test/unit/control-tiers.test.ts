// SLO tiers of one network through the real control plane (scheduler/control.ts): the inss planner, told the
// cluster shares tiers, places one worker for both names (the tight tier, named as the network), and a batch that
// holds tasks of both names answers each task under its own name with its own slice of the batch's output.
import { afterEach, describe, expect, it } from 'vitest';
import { inssFactory } from '../../rl/inss.js';
import type { TaskAnswer } from '../../scheduler/control.js';
import { AGENT_PROTOCOL_VERSION } from '../../src/protocol/agent.js';
import type { ClusterInfo, Deployment } from '../../src/policy/types.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';
import { ScriptedPolicy } from '../support/fakes.js';

const rtx = loadProfileFile('rtx2060s');
const MODELS = [
  { name: 'mobilenet', sloMs: 40 },
  { name: 'mobilenet-bulk', sloMs: 400, profileModel: 'mobilenet' },
];
const harnesses: Harness[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) h.control.stop();
});

function harness(policy: (c: ClusterInfo) => ReturnType<typeof inssFactory.create>): Harness {
  const h = controlHarness({
    models: MODELS,
    profiles: new Map([[rtx.id, rtx]]),
    policy,
    gpus: simGpus('rtx2060s', 1),
    initialRatePerS: { mobilenet: 100, 'mobilenet-bulk': 100 },
  });
  harnesses.push(h);
  return h;
}

describe('SLO tiers sharing a worker in the control plane', () => {
  it('inss places one worker for both names when the cluster shares tiers, one each when it does not', () => {
    for (const shareTiers of [true, false]) {
      const h = harness((c) => inssFactory.create({ ...c, shareTiers }, {}));
      const models = new Set(h.desired().map((w) => w.model));
      expect([...models].sort()).toEqual(shareTiers ? ['mobilenet'] : ['mobilenet', 'mobilenet-bulk']);
      h.report('ready');
      expect(h.control.readiness().ready).toBe(true);
    }
  });

  it('answers each task of a mixed-tier batch under its own name, with its own output, tight tier first', async () => {
    const shared: Deployment = { placements: [{ model: 0, gpu: 0, pct: 100, batch: 4 }], sharedBy: [0, 0] };
    const h = harness(() => new ScriptedPolicy([shared]));
    h.report('ready');
    // Two bulk tasks, then two tight ones: the tight ones are due first and lead the batch.
    const order = [1, 1, 0, 0];
    const boxes: { answer: TaskAnswer | null }[] = [];
    for (const m of order) {
      h.now += 1;
      boxes.push(h.submit(m));
    }
    const [b] = h.batches();
    expect(h.batches()).toHaveLength(1);
    expect(b!.model).toBe('mobilenet');
    expect(b!.size).toBe(4);
    // Each task's slice of the output holds its place in the batch.
    const payload = Buffer.concat([0, 1, 2, 3].map((i) => Buffer.alloc(4000, i + 1)));
    h.now += 5;
    h.control.batchResult(
      'a1',
      {
        v: AGENT_PROTOCOL_VERSION,
        type: 'result',
        batchId: b!.batchId,
        workerId: b!.workerId,
        latencyMs: 5,
        outputs: [{ name: 'output', datatype: 'FP32', shape: [4, 1000], byteLength: 16000 }],
      },
      payload,
    );
    const places = boxes.map((box) => {
      const a = box.answer!;
      if (!a.ok) throw new Error(a.error);
      return a.outputs[0]!.data[0]! - 1;
    });
    // Batch order: the tight tier's two (submitted third and fourth), then the bulk tier's two.
    expect(places).toEqual([2, 3, 0, 1]);
    // Counted under their own names: two ok answers each.
    const values = (await h.metrics.requests.get()).values;
    const ok = (model: string) => values.find((v) => v.labels.model === model && v.labels.outcome === 'ok')?.value;
    expect([ok('mobilenet'), ok('mobilenet-bulk')]).toEqual([2, 2]);
  });
});
