// The control plane's data path (scheduler/control/directPath.ts) driven by hand: batches go on a worker's data
// socket once its agent reports one and the connection is up, else through the agent; answers and
// refusals on that socket; a connection that closes; and pipelining (a second batch in flight once
// the first one's predicted GPU time is over, where there is transport to hide), with the shared rule
// of src/serving/dispatch.ts.
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../../src/policy/types.js';
import { workerKey, type WorkerStatus } from '../../src/protocol/agent.js';
import { WORKER_PROTOCOL_VERSION } from '../../src/protocol/worker.js';
import type { TaskAnswer } from '../../scheduler/control.js';
import { nextBatchAtMs, PIPELINE_DEPTH } from '../../src/serving/dispatch.js';
import { type Harness, oneGpuHarnesses } from '../support/control.js';
import { FakeDirectLink, ScriptedPolicy } from '../support/fakes.js';

const { deployment: D, setup } = oneGpuHarnesses();

/** The agent reports its worker ready with a data socket. */
function readyWithData(h: Harness): string {
  const w = h.desired()[0]!;
  const status: WorkerStatus = {
    ...w,
    state: 'ready',
    pid: 1,
    data: { address: 'unix:/tmp/x.sock', secret: 's3cret' },
  };
  h.control.workersReported('a1', [status]);
  return workerKey(w);
}

describe('the direct path in the control plane', () => {
  it('opens a connection to a ready worker with a data socket; once connected, its batches go there, named', () => {
    const direct = new FakeDirectLink();
    const h = setup(direct);
    const key = readyWithData(h);
    expect(direct.opened.get(key)?.endpoint).toEqual({ address: 'unix:/tmp/x.sock', secret: 's3cret' });
    // Not connected yet: the first batch goes through the agent.
    h.submit(0);
    expect(h.batches().length).toBe(1);
    h.result(h.batches()[0]!.batchId);
    direct.connect(key);
    const t = h.submit(0);
    expect(h.batches().length).toBe(1);
    expect(direct.sent).toHaveLength(1);
    const header = direct.sent[0]!.header;
    expect(header).toMatchObject({
      v: WORKER_PROTOCOL_VERSION,
      type: 'batch',
      model: 'resnet50',
      size: 1,
      worker: h.desired()[0],
    });
    expect(direct.sent[0]!.bytes).toBe(602112);
    expect(direct.sent[0]!.bySlot).toBe(true); // one input: its samples may go by shared-memory slot
    // Its answer on the socket answers the task.
    direct.opened.get(key)!.events.frame(
      {
        v: 1,
        type: 'result',
        id: header.id,
        latencyMs: 2,
        outputs: [{ name: 'output', datatype: 'FP32', shape: [1, 1000], byteLength: 4000 }],
      },
      Buffer.alloc(4000),
    );
    expect(t.answer).toMatchObject({ ok: true });
  });

  it("a wrong-worker refusal on the socket puts tasks back; a closed one fails a wanted worker's batches", () => {
    const direct = new FakeDirectLink();
    const h = setup(direct);
    const key = readyWithData(h);
    direct.connect(key);
    const t = h.submit(0);
    const id = direct.sent[0]!.header.id;
    direct.opened
      .get(key)!
      .events.frame({ v: 1, type: 'error', id, reason: 'wrong-worker', message: 'not me' }, Buffer.alloc(0));
    expect(t.answer).toBeNull();
    expect(direct.has(key)).toBe(false); // closed: that process is not this worker
    // Reported ready again: the task goes at once, through the agent while the new connection opens.
    readyWithData(h);
    expect(h.batches()).toHaveLength(1);
    h.result(h.batches()[0]!.batchId);
    expect(t.answer).toMatchObject({ ok: true });
    // Connected: the next task goes on the socket and is in flight when the worker dies.
    direct.connect(key);
    const t2 = h.submit(0);
    expect(direct.sent).toHaveLength(2);
    direct.drop(key, 'the worker exited');
    expect(t2.answer).toMatchObject({ ok: false, reason: 'worker-failed' });
    if (t2.answer?.ok === false) expect(t2.answer.error).toMatch(/data connection closed \(the worker exited\)/);
  });
});

describe('late answers on the direct path', () => {
  // A worker may answer a batch the scheduler resolved already (it failed the batch, or the worker sent
  // two answers): the shared-memory slots of its tasks may be free and written again by then, so such an
  // answer must never reach a client.
  it('an answer to a batch already resolved is ignored: every task is answered exactly once', () => {
    const direct = new FakeDirectLink();
    const h = setup(direct);
    const key = readyWithData(h);
    direct.connect(key);
    const answers: TaskAnswer[][] = [[], []];
    const input = { name: 'input', datatype: 'FP32' as const, shape: [1, 3, 224, 224], data: Buffer.alloc(602112) };
    const result = (id: string) => ({
      v: 1,
      type: 'result',
      id,
      latencyMs: 2,
      outputs: [{ name: 'output', datatype: 'FP32', shape: [1, 1000], byteLength: 4000 }],
    });
    const events = () => direct.opened.get(key)!.events;
    h.control.submit(0, input, (a) => answers[0]!.push(a));
    const failedId = String(direct.sent[0]!.header.id);
    events().frame({ v: 1, type: 'error', id: failedId, message: 'boom' }, Buffer.alloc(0));
    events().frame(result(failedId), Buffer.alloc(4000)); // late: after the batch failed
    h.control.submit(0, input, (a) => answers[1]!.push(a));
    const okId = String(direct.sent[1]!.header.id);
    events().frame(result(okId), Buffer.alloc(4000));
    events().frame(result(okId), Buffer.alloc(4000)); // a second answer to the same batch
    expect(answers.map((xs) => xs.map((a) => (a.ok ? 'ok' : a.reason)))).toEqual([['worker-failed'], ['ok']]);
  });
});

describe('a worker let go on the direct path', () => {
  it('its batch unanswered when its connection closes (stopped after a swap) goes back, then to its successor', () => {
    const direct = new FakeDirectLink();
    const d2: Deployment = { placements: [{ model: 0, gpu: 0, pct: 60, batch: 1 }] };
    const h = setup(direct, () => new ScriptedPolicy([D, d2]));
    const oldKey = readyWithData(h);
    direct.connect(oldKey);
    const t = h.submit(0);
    expect(direct.sent).toHaveLength(1);
    // The next decision replaces w1 (50%) by w2 (60%); w2 comes up; w1 is let go with its batch in flight.
    h.control.epoch();
    const w2 = h.desired().find((w) => w.pct === 60)!;
    const w1 = h.desired().find((w) => w.pct === 50)!;
    h.control.workersReported('a1', [
      { ...w1, state: 'ready', pid: 1, data: { address: 'unix:/tmp/x.sock', secret: 's3cret' } },
      { ...w2, state: 'ready', pid: 2, data: { address: 'unix:/tmp/y.sock', secret: 'other' } },
    ]);
    expect(h.desired().map((w) => w.pct)).toEqual([60]);
    // w1 exits without answering it (SIGTERM: what it had not received never ran).
    direct.drop(oldKey, 'the worker exited');
    expect(t.answer).toBeNull();
    // It goes to w2 (through the agent until w2's connection is up), and is answered once.
    const relayed = h.batches().at(-1)!;
    expect(relayed).toMatchObject({ workerId: w2.workerId, size: 1 });
    h.result(relayed.batchId);
    expect(t.answer).toMatchObject({ ok: true });
  });
});

describe('pipelining', () => {
  it("the shared rule: free when idle; with transport, next once the last one's GPU time is over; depth bound", () => {
    expect(nextBatchAtMs(0, 100, 10, 5, false)).toBe(-Infinity);
    expect(nextBatchAtMs(1, 100, 10, 5, false)).toBe(110);
    // No transport to hide: one at a time (as the simulator runs).
    expect(nextBatchAtMs(1, 100, 10, 0, false)).toBe(Infinity);
    // A time-shared GPU runs one batch at a time.
    expect(nextBatchAtMs(1, 100, 10, 5, true)).toBe(Infinity);
    expect(nextBatchAtMs(PIPELINE_DEPTH, 100, 10, 5, false)).toBe(Infinity);
  });

  it('a worker gets its next batch while one is in flight once its transport is measured, two at most', () => {
    const h = setup();
    h.report('ready');
    h.submit(0);
    h.submit(0);
    // No transport measured yet: one batch at a time.
    expect(h.batches().length).toBe(1);
    h.now = 50;
    h.result(h.batches()[0]!.batchId, 1); // 49 ms beyond the GPU time: transport
    expect(h.batches().length).toBe(2); // the queued task went at once (nothing in flight)
    h.submit(0);
    expect(h.batches().length).toBe(2); // the batch sent at 50 is still within its predicted GPU time
    h.now = 50 + 200; // past any batch-1 prediction on this GPU
    h.submit(0);
    expect(h.batches().length).toBe(3); // pipelined: two in flight
    h.now = 1000;
    h.submit(0);
    expect(h.batches().length).toBe(3); // never a third
    h.result(h.batches()[1]!.batchId, 1);
    expect(h.batches().length).toBe(4);
  });
});

describe('per-worker batch latency on the direct path', () => {
  it('the scheduler publishes the mean GPU time of the epoch (the agent sees none of these batches)', async () => {
    const direct = new FakeDirectLink();
    const h = setup(direct);
    const key = readyWithData(h);
    direct.connect(key);
    for (const ms of [2, 4]) {
      h.submit(0);
      const id = direct.sent.at(-1)!.header.id;
      direct.opened.get(key)!.events.frame(
        {
          v: 1,
          type: 'result',
          id,
          latencyMs: ms,
          outputs: [{ name: 'output', datatype: 'FP32', shape: [1, 1000], byteLength: 4000 }],
        },
        Buffer.alloc(4000),
      );
    }
    h.control.epoch();
    const text = await h.metrics.registry.metrics();
    expect(text).toMatch(/^inss_worker_batch_latency_seconds\{worker="w1",model="resnet50",gpu="0"\} 0\.003$/m);
  });
});
