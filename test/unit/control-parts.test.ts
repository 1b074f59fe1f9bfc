// The control plane's managers on their own (scheduler/control/): the per-model queue, the task
// buffer's expiry, the epoch's statistics (the shared builder, as the control plane fills it), a
// batch's outputs cut into its tasks' answers, and the one guard every answer passes before it
// resolves a batch.
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { type BatchPorts, InFlightBatches } from '../../scheduler/control/batches.js';
import { splitOutputs } from '../../scheduler/control/outputs.js';
import { PolicyLoop } from '../../scheduler/control/policyLoop.js';
import { type Batch, newWorker, type Task } from '../../scheduler/control/records.js';
import { TaskBuffer } from '../../scheduler/control/taskBuffer.js';
import { fanOut } from '../../scheduler/observer.js';
import { TaskQueue } from '../../src/serving/taskQueue.js';
import { modelSignature } from '../../src/protocol/tensor.js';

const task = (arrivalMs: number, model = 0): Task => ({
  model,
  arrivalMs,
  inputs: [Buffer.alloc(0)],
  encoding: undefined,
  answer: () => {},
  submittedMs: arrivalMs,
  dispatchedMs: NaN,
});

const worker = (workerId: string, agentId = 'a1') =>
  newWorker({
    workerId,
    generation: 1,
    agentId,
    localGpu: 0,
    gpu: 0,
    model: 0,
    pct: 50,
    batch: 4,
    timeoutMs: NaN,
    role: 'active',
  });

describe('the per-model queue', () => {
  it('keeps arrival order when a task submitted later arrived earlier, and puts a batch back at the head', () => {
    const q = TaskQueue.ofTasks<Task>((t) => t.arrivalMs);
    for (const at of [10, 30, 20]) q.push(task(at));
    expect(q.peek().arrivalMs).toBe(10);
    const a = q.shift();
    const b = q.shift();
    expect([a.arrivalMs, b.arrivalMs]).toEqual([10, 20]);
    q.unshiftAll([a, b]);
    expect(q.drain().map((t) => t.arrivalMs)).toEqual([10, 20, 30]);
    expect(q.length).toBe(0);
  });
});

describe('the task buffer', () => {
  const models = [
    { name: 'reject', sloMs: 100, signature: modelSignature(4, 4), queuePolicy: { timeoutAction: 'reject' as const } },
    { name: 'delay', sloMs: 100, signature: modelSignature(4, 4) },
  ];

  it('times out what is past its deadline: dropped under a reject policy, delayed under a delay policy', () => {
    const buffer = new TaskBuffer(models, () => 0);
    for (const m of [0, 1]) for (const at of [0, 50]) buffer.onTime(m).push(task(at, m));
    const dropped: Task[] = [];
    for (const m of [0, 1])
      buffer.expire(
        m,
        120,
        () => 100,
        (t) => dropped.push(t),
      );
    expect(dropped.map((t) => [t.model, t.arrivalMs])).toEqual([[0, 0]]);
    expect([buffer.onTime(0).length, buffer.onTime(1).length, buffer.delayed(1).length]).toEqual([1, 1, 1]);
    expect(buffer.waiting(1)).toBe(2);
    expect(buffer.stop()).toHaveLength(3);
  });
});

describe("the epoch's statistics", () => {
  it("count served, late and the service's drops, not the client's errors, and start again at reset", () => {
    const loop = new PolicyLoop({
      models: [{ name: 'm', sloMs: 100, signature: modelSignature(4, 4) }],
      policyName: 'none',
      createPolicy: () => {
        throw new Error('not asked');
      },
      settings: { epochMs: 1000, monitorWindowMs: 1000 },
      initialRatesPerS: [2],
      clock: () => 1,
      nowIso: () => '',
      observe: fanOut([]),
      log: pino({ level: 'silent' }),
    });
    loop.answered(0, { ok: true, outputs: [], latencyMs: 10 }, 'ok', 10);
    loop.answered(0, { ok: true, outputs: [], latencyMs: 30 }, 'late', 30);
    loop.answered(0, { ok: false, reason: 'slo', error: '' }, 'dropped_slo', 5);
    loop.answered(0, { ok: false, reason: 'not-deployed', error: '' }, 'not_deployed', 0);
    loop.stats.batchTimed(0, 8);
    const current = { placements: [] };
    const obs = loop.observation([3], current);
    expect(obs.lastEpoch).toEqual({ served: [2], violated: [1], dropped: [1], meanExecMs: [8], meanLatencyMs: [20] });
    expect([obs.nowMs, obs.ratePerS, obs.queued, obs.current]).toEqual([1, [2], [3], current]);
    loop.endEpoch(obs);
    expect(loop.observation([0], current).lastEpoch.served).toEqual([0]);
    expect(loop.observation([0], current).lastEpoch.meanExecMs).toEqual([NaN]);
  });
});

describe("a batch's outputs", () => {
  const ref = { name: 'out', datatype: 'FP32' as const, shape: [2, 1], byteLength: 8 };

  it('gives each task its slice, and a sample the worker could not decode its message', () => {
    const payload = Buffer.from([1, 1, 1, 1, 2, 2, 2, 2]);
    const split = splitOutputs(2, [{ ...ref, failed: [{ index: 0, message: 'bad jpeg' }] }], payload);
    expect(split.problem).toBeNull();
    expect(split.failed.get(0)).toBe('bad jpeg');
    expect(split.outputsOf(1)[0]).toMatchObject({ shape: [1, 1], data: Buffer.from([2, 2, 2, 2]) });
  });

  it('names what is wrong with a result that does not match its batch or its bytes', () => {
    expect(splitOutputs(3, [ref], Buffer.alloc(8)).problem).toMatch(/shape \[2,1\] for a batch of 3/);
    expect(splitOutputs(2, [ref], Buffer.alloc(4)).problem).toMatch(/sent 4 output bytes, its header says 8/);
  });
});

describe('the batches in flight', () => {
  it('take an answer only from the path and worker the batch went to', () => {
    const done: string[] = [];
    const ports: BatchPorts = {
      clock: () => 0,
      finish: () => {},
      requeue: () => {},
      executed: () => {},
      done: (b) => done.push(b.batchId),
      closeDirect: () => {},
    };
    const batches = new InFlightBatches([], pino({ level: 'silent' }), ports);
    const w = worker('w1');
    const batch = (direct: boolean): Batch => ({
      batchId: batches.nextId(),
      worker: w,
      tasks: [],
      size: 0,
      sentMs: 0,
      direct,
      sentWallMs: 0,
      bytes: 0,
      predictedMs: 0,
      timeshared: false,
    });
    const relayed = batch(false);
    const direct = batch(true);
    batches.add(relayed);
    batches.add(direct);
    expect(batches.find(relayed.batchId, { direct: false, agentId: 'a1', workerId: 'w1' })).toBe(relayed);
    expect(batches.find(relayed.batchId, { direct: false, agentId: 'a1' })).toBe(relayed);
    expect(batches.find(relayed.batchId, { direct: false, agentId: 'a2' })).toBeUndefined();
    expect(batches.find(relayed.batchId, { direct: false, agentId: 'a1', workerId: 'w2' })).toBeUndefined();
    expect(batches.find(relayed.batchId, { direct: true, worker: w })).toBeUndefined();
    expect(batches.find(direct.batchId, { direct: true, worker: w })).toBe(direct);
    expect(batches.find(direct.batchId, { direct: true, worker: worker('w1') })).toBeUndefined();
    expect(batches.find(direct.batchId, { direct: false, agentId: 'a1' })).toBeUndefined();
    batches.resolve(relayed, { kind: 'not-run', workerState: 'draining' });
    expect(w.state).toBe('draining');
    expect(done).toEqual([relayed.batchId]);
    expect(batches.find(relayed.batchId, { direct: false, agentId: 'a1' })).toBeUndefined();
  });
});
