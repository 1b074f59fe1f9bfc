// The scheduler's control plane (scheduler/control.ts) driven by hand (test/support/control.ts):
// worker identity in desired sets and batches, adoption after a restart, a refused batch, a failed
// worker, a plan returning to a retiring worker.
import { afterEach, describe, expect, it } from 'vitest';
import { PolicyRegistry } from '../../cli/registry.js';
import type { Deployment } from '../../src/policy/types.js';
import { AGENT_PROTOCOL_VERSION, type WorkerStatus } from '../../src/protocol/agent.js';
import type { TaskAnswer } from '../../scheduler/control.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';
import { FixedPolicy, ScriptedPolicy } from '../support/fakes.js';

const rtx = loadProfileFile('rtx2060s');
const profiles = new Map([[rtx.id, rtx]]);
const MODELS = [
  { name: 'resnet50', sloMs: 1000 },
  { name: 'mobilenet', sloMs: 1000 },
];
const harnesses: Harness[] = [];
afterEach(() => {
  for (const h of harnesses.splice(0)) h.control.stop();
});
function harness(opts: Partial<Parameters<typeof controlHarness>[0]> & { d?: Deployment }): Harness {
  const d = opts.d ?? {
    placements: [
      { model: 0, gpu: 0, pct: 50, batch: 1 },
      { model: 1, gpu: 1, pct: 50, batch: 1 },
    ],
  };
  const h = controlHarness({
    models: MODELS,
    profiles,
    policy: () => new FixedPolicy(d),
    gpus: simGpus('rtx2060s', 2),
    ...opts,
  });
  harnesses.push(h);
  return h;
}

describe('worker identity in the control plane', () => {
  it('every desired worker and every batch names its model, GPU, share and generation', () => {
    const h = harness({});
    expect(h.desired()).toEqual([
      { workerId: 'w1', model: 'resnet50', gpu: 0, pct: 50, generation: 1 },
      { workerId: 'w2', model: 'mobilenet', gpu: 1, pct: 50, generation: 2 },
    ]);
    h.report('ready');
    h.submit(1);
    expect(h.batches()).toMatchObject([
      { workerId: 'w2', model: 'mobilenet', gpu: 1, pct: 50, generation: 2, size: 1 },
    ]);
  });

  it('a worker reported under its id but with another identity is not ready and takes no batch', () => {
    const h = harness({});
    h.control.workersReported(
      'a1',
      h
        .desired()
        .map((w) => ({ ...w, model: w.model === 'resnet50' ? 'mobilenet' : 'resnet50', state: 'ready' as const })),
    );
    expect(h.control.readiness().ready).toBe(false);
    const t = h.submit(0);
    expect(h.batches()).toEqual([]);
    expect(t.answer).toBeNull(); // it waits for a worker of its own model
  });

  it('a batch refused as wrong-worker goes back to its queue; the worker takes none until reported again', () => {
    const h = harness({});
    h.report('ready');
    const t = h.submit(0);
    const b = h.batches()[0]!;
    h.control.batchError('a1', {
      v: AGENT_PROTOCOL_VERSION,
      type: 'batchError',
      batchId: b.batchId,
      workerId: b.workerId,
      reason: 'wrong-worker',
      message: 'w1 here is another worker',
    });
    expect(t.answer).toBeNull();
    expect(h.batches().length).toBe(1);
    h.report('ready');
    expect(h.batches().length).toBe(2);
    expect(h.batches()[1]).toMatchObject({ workerId: 'w1', model: 'resnet50' });
  });

  it('a worker whose batch fails loses that batch only: queued tasks wait for it to be reported ready again', () => {
    const h = harness({});
    h.report('ready');
    const lost = h.submit(0);
    const queued = h.submit(0); // batch 1: waits for the worker
    const b = h.batches()[0]!;
    // The agent answers the dead worker's batch first, then reports the worker failed.
    h.control.batchError('a1', {
      v: AGENT_PROTOCOL_VERSION,
      type: 'batchError',
      batchId: b.batchId,
      workerId: b.workerId,
      reason: 'worker-failed',
      message: 'worker exited',
    });
    expect(lost.answer).toMatchObject({ ok: false, reason: 'worker-failed' });
    expect(h.batches().length).toBe(1); // no batch to the dead worker before the agent reports it
    h.report('failed');
    expect(h.batches().length).toBe(1);
    expect(queued.answer).toBeNull();
    h.report('ready'); // restarted by its agent
    expect(h.batches().length).toBe(2);
    expect(h.batches()[1]).toMatchObject({ workerId: 'w1', model: 'resnet50' });
  });
});

describe('applying deployments', () => {
  it('a plan back to a retiring worker before its shadow is ready makes it active and lets the shadow go', () => {
    const at = (pct: number): Deployment => ({
      placements: [
        { model: 0, gpu: 0, pct, batch: 1 },
        { model: 1, gpu: 1, pct: 50, batch: 1 },
      ],
    });
    const h = harness({ policy: () => new ScriptedPolicy([at(50), at(70), at(50)]) });
    h.report('ready');
    const role = (id: string) =>
      (h.control.snapshot() as { workers: { workerId: string; role: string }[] }).workers.find((w) => w.workerId === id)
        ?.role;
    h.control.epoch(); // 70%: w3 starts as w1's shadow, w1 retires
    expect([role('w1'), role('w3')]).toEqual(['retiring', 'shadow']);
    h.control.epoch(); // back to 50% before w3 is ready
    expect(role('w1')).toBe('active');
    expect(h.desired().map((w) => w.workerId)).toEqual(['w1', 'w2']);
    expect((h.control.snapshot() as { deployment: Deployment }).deployment).toEqual(at(50));
    expect(h.control.workerViews().find((w) => w.workerId === 'w1')).toMatchObject({ role: 'active', serving: true });
  });
});

describe('abandoning a shadow (stopped at once, as the simulator does)', () => {
  it('a deployment changed again before a shadow is ready lets it go at once; the old worker serves meanwhile', () => {
    const at = (pct: number): Deployment => ({
      placements: [
        { model: 0, gpu: 0, pct, batch: 1 },
        { model: 1, gpu: 1, pct: 50, batch: 1 },
      ],
    });
    const h = harness({ policy: () => new ScriptedPolicy([at(50), at(70), at(60)]) });
    h.report('ready');
    h.control.epoch(); // 70%: w3 starts as w1's shadow
    h.control.epoch(); // 60% before w3 is ready: w3 is abandoned, w4 replaces w1
    const ws = (h.control.snapshot() as { workers: { workerId: string; role: string; pct: number }[] }).workers;
    expect(ws.map((w) => [w.workerId, w.pct, w.role])).toEqual([
      ['w1', 50, 'retiring'],
      ['w2', 50, 'active'],
      ['w4', 60, 'shadow'],
    ]);
    expect(h.desired().map((w) => w.workerId)).toEqual(['w1', 'w2', 'w4']);
    h.submit(0);
    expect(h.batches().at(-1)).toMatchObject({ workerId: 'w1' }); // still serving
  });
});

describe('a restarted scheduler adopts running workers by what they are', () => {
  // What the agent runs from the scheduler's previous life: w1 and w2 under generations 100 and 101.
  const running: WorkerStatus[] = [
    { workerId: 'w1', model: 'mobilenet', gpu: 1, pct: 50, generation: 100, state: 'ready', pid: 11 },
    { workerId: 'w2', model: 'resnet50', gpu: 0, pct: 50, generation: 101, state: 'ready', pid: 12 },
  ];

  it('keeps the workers that match the new deployment under their identity, without starting any', () => {
    const h = harness({ running });
    expect(
      h
        .desired()
        .map((w) => [w.workerId, w.model, w.gpu, w.pct, w.generation])
        .sort(),
    ).toEqual([
      ['w1', 'mobilenet', 1, 50, 100],
      ['w2', 'resnet50', 0, 50, 101],
    ]);
    expect(h.control.readiness().ready).toBe(true);
    h.submit(0);
    expect(h.batches()).toMatchObject([{ workerId: 'w2', model: 'resnet50', generation: 101 }]);
  });

  it('replaces adopted workers another policy places elsewhere; new workers never reuse an identity', () => {
    const h = harness({
      running,
      d: {
        placements: [
          { model: 0, gpu: 1, pct: 50, batch: 1 },
          { model: 1, gpu: 0, pct: 50, batch: 1 },
        ],
      },
    });
    const desired = h.desired();
    // The adopted ones keep serving (retiring) beside their shadows; the shadows are new ids and generations.
    const fresh = desired.filter((w) => w.generation > 101);
    expect(fresh.map((w) => [w.model, w.gpu]).sort()).toEqual([
      ['mobilenet', 0],
      ['resnet50', 1],
    ]);
    expect(fresh.every((w) => !['w1', 'w2'].includes(w.workerId))).toBe(true);
    h.submit(0);
    expect(h.batches()).toMatchObject([{ workerId: 'w2', model: 'resnet50', gpu: 0 }]);
  });

  it('with static-even (one model a GPU at 96%): shadows at the new share, the adopted serve meanwhile', () => {
    const h = harness({ running, policy: (c) => new PolicyRegistry().get('static-even').create(c, {}) });
    const byGen = h.desired().map((w) => [w.model, w.gpu, w.pct, w.generation > 101 ? 'new' : w.generation]);
    expect(byGen.sort()).toEqual([
      ['mobilenet', 1, 50, 100],
      ['mobilenet', 1, 96, 'new'],
      ['resnet50', 0, 50, 101],
      ['resnet50', 0, 96, 'new'],
    ]);
  });
});

describe('tasks in other encodings', () => {
  it("a batch lists each sample's encoding; a sample the worker could not decode fails its task alone", () => {
    const h = harness({
      d: {
        placements: [
          { model: 0, gpu: 0, pct: 50, batch: 3 },
          { model: 1, gpu: 1, pct: 50, batch: 1 },
        ],
      },
    });
    const answers: (TaskAnswer | null)[] = [null, null, null];
    const inputs = [
      { encoding: 'UINT8' as const, data: Buffer.alloc(150528, 1) },
      { encoding: 'JPEG' as const, data: Buffer.from([0xff, 0xd8, 0xff, 0xe0]) },
      { encoding: undefined, data: Buffer.alloc(602112) },
    ];
    inputs.forEach((x, k) =>
      h.control.submit(
        0,
        {
          name: 'input',
          datatype: 'FP32',
          shape: [1, 3, 224, 224],
          ...(x.encoding ? { encoding: x.encoding } : {}),
          data: x.data,
        },
        (a) => (answers[k] = a),
      ),
    );
    h.report('ready'); // the three, queued while the worker started, go in one batch
    const b = h.batches().find((x) => x.model === 'resnet50')!;
    expect(b.size).toBe(3);
    expect(b.inputs[0]).toEqual({
      name: 'input',
      datatype: 'FP32',
      shape: [3, 3, 224, 224],
      byteLength: 150528 + 4 + 602112,
      samples: [
        { encoding: 'UINT8', byteLength: 150528 },
        { encoding: 'JPEG', byteLength: 4 },
        { encoding: 'FP32', byteLength: 602112 },
      ],
    });
    const out = Buffer.alloc(3 * 4000, 7);
    h.control.batchResult(
      'a1',
      {
        v: AGENT_PROTOCOL_VERSION,
        type: 'result',
        batchId: b.batchId,
        workerId: b.workerId,
        latencyMs: 1,
        outputs: [
          {
            name: 'output',
            datatype: 'FP32',
            shape: [3, 1000],
            byteLength: 12000,
            failed: [{ index: 1, message: "input 'input': the JPEG image could not be decoded: truncated" }],
          },
        ],
      },
      out,
    );
    expect(answers[1]).toEqual({
      ok: false,
      reason: 'bad-input',
      error: "input 'input': the JPEG image could not be decoded: truncated",
    });
    expect(answers[0]).toMatchObject({ ok: true, outputs: [{ name: 'output', shape: [1, 1000] }] });
    expect(answers[2]).toMatchObject({ ok: true });
  });
});

describe('the request\'s way in and the answer\'s way out (docs/serving.md, "The path in the twin")', () => {
  const input = { name: 'input', datatype: 'FP32' as const, shape: [1, 3, 224, 224], data: Buffer.alloc(602112) };
  const submitAt = (h: Harness, receivedMs: number | undefined) => {
    const box: { answer: TaskAnswer | null } = { answer: null };
    h.control.submit(0, input, (a) => (box.answer = a), receivedMs === undefined ? undefined : { receivedMs });
    return box;
  };

  // Under a reject policy, so that a task that cannot meet its deadline shows as an answer at once.
  const rejecting = MODELS.map((m) => ({ ...m, queuePolicy: { timeoutAction: 'reject' as const } }));

  it("a task's deadline and latency count from its request's arrival, and its way in is fitted", () => {
    const h = harness({ models: rejecting });
    h.report('ready');
    h.now = 1000;
    const late = submitAt(h, 1000 - 995); // its 1000 ms SLO is 5 ms from over: no batch makes it
    expect(late.answer).toMatchObject({ ok: false, reason: 'slo' });
    expect(h.batches()).toEqual([]);
    const t = submitAt(h, 1000 - 7);
    expect(h.batches().length).toBe(1);
    h.now = 1020;
    h.result(h.batches()[0]!.batchId);
    expect(t.answer).toMatchObject({ ok: true, latencyMs: 27 });
    const entry = (
      h.control.snapshot() as {
        transport: Record<string, { wayIn?: { fixedMs: number; perMbMs: number }; requests?: number }>;
      }
    ).transport.a1!;
    expect(entry.requests).toBe(2);
    expect(entry.wayIn!.fixedMs).toBeCloseTo((995 + 7) / 2, 6); // one size: all of it fixed
  });

  it("the dispatch rule budgets each task its SLO less the answers' expected way out", () => {
    const h = harness({ models: rejecting });
    h.report('ready');
    const before = submitAt(h, undefined);
    expect(h.batches().length).toBe(1); // the SLO (1000 ms) leaves room
    h.result(h.batches()[0]!.batchId);
    expect(before.answer).toMatchObject({ ok: true });
    for (let i = 0; i < 200; i++) h.control.answerSent(998); // answers take ~998 ms to leave
    const after = submitAt(h, undefined);
    expect(after.answer).toMatchObject({ ok: false, reason: 'slo' }); // 2 ms left: no batch finishes in it
    expect(h.batches().length).toBe(1);
    const entry = (h.control.snapshot() as { transport: Record<string, { wayOutMs?: number; answers?: number }> })
      .transport.a1!;
    expect(entry).toMatchObject({ answers: 200, wayOutMs: 998 });
  });

  it("a host's entry measures how its slow batches come in runs", () => {
    const h = harness({});
    h.report('ready');
    for (let i = 0; i < 200; i++) {
      h.now += 100; // the worker idle, each batch alone
      h.submit(0);
      const b = h.batches().at(-1)!;
      h.now += 2 + (Math.floor(i / 10) % 2 === 1 ? 20 : 4) + (i % 3) / 10; // ten slow, ten fast, ...
      h.result(b.batchId, 2);
    }
    const entry = (h.control.snapshot() as { transport: Record<string, { batches?: number; spreadLag1?: number }> })
      .transport.a1!;
    expect(entry.batches).toBe(200);
    expect(entry.spreadLag1).toBeGreaterThan(0.7);
  });
});

describe('the task queue keeps the order of arrival', () => {
  it('a request that arrived first but was submitted later (a slower body) goes ahead of the others', () => {
    const h = harness({});
    const input = { name: 'input', datatype: 'FP32' as const, shape: [1, 3, 224, 224], data: Buffer.alloc(602112) };
    const answers: string[] = [];
    h.now = 100;
    h.control.submit(0, input, () => answers.push('second'), { receivedMs: 90 });
    h.control.submit(0, input, () => answers.push('first'), { receivedMs: 80 });
    h.report('ready'); // batch 1: the worker takes the oldest first
    h.result(h.batches()[0]!.batchId);
    h.result(h.batches()[1]!.batchId);
    expect(answers).toEqual(['first', 'second']);
  });
});

describe("a batch's telemetry", () => {
  it("carries the GPU memory its worker measured into the policy's batch records, and none where not measured", () => {
    const policy = new FixedPolicy({ placements: [{ model: 0, gpu: 0, pct: 100, batch: 1 }] });
    const h = harness({ policy: () => policy });
    h.report('ready');
    h.submit(0);
    h.result(h.batches()[0]!.batchId, 5, 2048.5);
    h.submit(0);
    h.result(h.batches()[1]!.batchId, 5);
    h.control.epoch();
    const records = policy.observations.at(-1)!.lastEpoch.batches!;
    expect(records.map((r) => r.memoryMb)).toEqual([2048.5, undefined]);
    expect(records[0]).toMatchObject({ model: 0, gpu: 0, batch: 1, execMs: 5 });
  });
});
