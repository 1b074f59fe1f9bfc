// An agent lost (its connection closed, or dropped after missed heartbeats: scheduler/hub.ts) in the
// control plane driven by hand: whether its batches in flight ran is unknown, so their tasks go back to
// their queue, relayed or on a worker's data socket (dropped at once), and are answered exactly once,
// by another worker of the model or by the same one once its agent is back.
import { describe, expect, it } from 'vitest';
import { AGENT_PROTOCOL_VERSION, workerKey, type WorkerStatus } from '../../src/protocol/agent.js';
import type { TaskAnswer } from '../../scheduler/control.js';
import { type Harness, oneGpuHarnesses, simGpus } from '../support/control.js';
import { FakeDirectLink } from '../support/fakes.js';

const { setup } = oneGpuHarnesses();

/** Submits a task of model 0 and records every answer it gets. */
function submit(h: Harness): TaskAnswer[] {
  const answers: TaskAnswer[] = [];
  h.control.submit(0, { name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: Buffer.alloc(602112) }, (a) =>
    answers.push(a),
  );
  return answers;
}

/** The agent's workers as it reports them: ready, with a data socket when `data`. */
function statuses(h: Harness, data: boolean): WorkerStatus[] {
  return h.desired().map((w) => ({
    ...w,
    state: 'ready' as const,
    pid: 1,
    ...(data ? { data: { address: 'tcp:10.0.0.2:4000', secret: 's3cret' } } : {}),
  }));
}

/** The agent comes back, still running its workers. */
function reconnect(h: Harness, workers: WorkerStatus[]): void {
  h.control.agentConnected({
    v: AGENT_PROTOCOL_VERSION,
    type: 'hello',
    agentId: 'a1',
    hostname: 'test',
    workerKind: 'sim',
    gpus: simGpus('rtx2060s', 1),
    workers,
  });
}

describe('an agent lost with batches in flight', () => {
  it('puts its relayed batches back in their queue; its worker takes none until it is back', () => {
    const h = setup();
    h.control.workersReported('a1', statuses(h, false));
    const answers = submit(h);
    expect(h.batches()).toHaveLength(1);
    h.control.agentDisconnected('a1');
    expect(answers).toEqual([]);
    expect(h.batches()).toHaveLength(1); // nowhere to go: the model's only worker is unreachable
    // A late answer of the lost batch (the agent was cut off, not dead) is ignored.
    h.result(h.batches()[0]!.batchId);
    expect(answers).toEqual([]);
    reconnect(h, statuses(h, false));
    expect(h.batches()).toHaveLength(2);
    h.result(h.batches()[1]!.batchId);
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ ok: true });
  });

  it("drops its workers' data connections at once and puts their batches back", () => {
    const direct = new FakeDirectLink();
    const h = setup(direct);
    h.control.workersReported('a1', statuses(h, true));
    const key = workerKey(h.desired()[0]!);
    direct.connect(key);
    const answers = submit(h);
    expect(direct.sent).toHaveLength(1);
    h.control.agentDisconnected('a1');
    expect(direct.has(key)).toBe(false);
    expect(answers).toEqual([]);
    // Back: the connection is opened again; until it is up, the task goes through the agent.
    reconnect(h, statuses(h, true));
    expect(direct.has(key)).toBe(true);
    expect(h.batches()).toHaveLength(1);
    h.result(h.batches()[0]!.batchId);
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ ok: true });
  });
});
