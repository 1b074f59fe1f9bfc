// A lost agent re-placed (scheduler/control.ts `agentLostMs`, scheduler/control/agents.ts), the control plane
// driven by hand under static-even on two agents with one GPU each: resnet50 on a1's GPU, mobilenet on a2's.
// Away longer than `agentLostMs`, an agent's GPUs leave the plan and its model is placed on the other agent,
// where its queued tasks are served; back, it is planned again. With no agent left, nothing is re-placed.
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { MAX_AGENT_LOST_MS, parseAgentLostMs } from '../../cli/serve/options.js';
import { staticEvenFactory } from '../../src/policy/policies/static-even.js';
import { AGENT_PROTOCOL_VERSION, type WorkerStatus } from '../../src/protocol/agent.js';
import { loadProfileFile } from '../support/clusters.js';
import { controlHarness, type Harness, simGpus } from '../support/control.js';

const rtx = loadProfileFile('rtx2060s');

function twoAgents(agentLostMs: number | undefined): Harness {
  const h = controlHarness({
    models: [
      { name: 'resnet50', sloMs: 1000 },
      { name: 'mobilenet', sloMs: 1000 },
    ],
    profiles: new Map([[rtx.id, rtx]]),
    policy: (c) => staticEvenFactory.create(c, {}),
    gpus: simGpus('rtx2060s', 1),
    ...(agentLostMs !== undefined ? { agentLostMs } : {}),
  });
  hello(h, 'a2');
  return h;
}

function hello(h: Harness, agentId: string, workers: WorkerStatus[] = []): void {
  h.control.agentConnected({
    v: AGENT_PROTOCOL_VERSION,
    type: 'hello',
    agentId,
    hostname: agentId,
    workerKind: 'sim',
    gpus: simGpus('rtx2060s', 1),
    workers,
  });
}

/** The last desired set sent to `agentId`. */
function desired(h: Harness, agentId: string) {
  return h.sent.flatMap((s) => (s.agentId === agentId && s.msg.type === 'desired' ? [s.msg] : [])).at(-1)?.workers;
}

/** `agentId` reports every worker it was last asked for as ready. */
function ready(h: Harness, agentId: string): void {
  h.control.workersReported(
    agentId,
    (desired(h, agentId) ?? []).map((w) => ({ ...w, state: 'ready' as const, pid: 1 })),
  );
}

/** The models `agentId` is asked to run (a model whose share changed runs twice while its worker is swapped). */
const models = (h: Harness, agentId: string) => [...new Set((desired(h, agentId) ?? []).map((w) => w.model))].sort();

describe('an agent lost for longer than agentLostMs', () => {
  it('has its model re-placed on the other agent, which serves the queued tasks; back, it is planned again', () => {
    const h = twoAgents(5000);
    expect(models(h, 'a1')).toEqual(['resnet50']);
    expect(models(h, 'a2')).toEqual(['mobilenet']);
    ready(h, 'a1');
    ready(h, 'a2');
    h.control.agentDisconnected('a1');
    const task = h.submit(0);
    h.now += 4000;
    h.control.epoch();
    expect(models(h, 'a2')).toEqual(['mobilenet']); // not yet: a host away briefly keeps its placements
    expect(task.answer).toBeNull();
    h.now += 1000;
    h.control.epoch();
    expect(models(h, 'a2')).toEqual(['mobilenet', 'resnet50']);
    ready(h, 'a2');
    const batch = h.batches().at(-1)!;
    expect(batch.workerId).toBe(desired(h, 'a2')!.find((w) => w.model === 'resnet50')!.workerId);
    h.control.batchResult(
      'a2',
      {
        v: AGENT_PROTOCOL_VERSION,
        type: 'result',
        batchId: batch.batchId,
        workerId: batch.workerId,
        latencyMs: 1,
        outputs: [{ name: 'output', datatype: 'FP32', shape: [1, 1000], byteLength: 4000 }],
      },
      Buffer.alloc(4000),
    );
    expect(task.answer).toMatchObject({ ok: true });
    const { agents } = h.control.snapshot() as { agents: { agentId: string }[] };
    expect(agents.find((a) => a.agentId === 'a1')).toMatchObject({ connected: false, replaced: true });

    // Back with no workers (the host restarted): its GPU is in the plan again and resnet50 goes back there.
    hello(h, 'a1');
    expect(models(h, 'a1')).toEqual(['resnet50']);
    // a2's resnet50 worker is released once its replacement on a1 is ready (make before break).
    ready(h, 'a1');
    ready(h, 'a2');
    expect(models(h, 'a2')).toEqual(['mobilenet']);
    h.control.stop();
  });

  it('keeps the placements while no other agent is connected, and with agentLostMs absent', () => {
    for (const lostMs of [5000, undefined]) {
      const h = twoAgents(lostMs);
      h.control.agentDisconnected('a1');
      if (lostMs !== undefined) h.control.agentDisconnected('a2');
      h.now += 60_000;
      h.control.epoch();
      expect(models(h, 'a2')).toEqual(['mobilenet']);
      expect(h.submit(0).answer).toBeNull(); // queued for a1's return, not refused
      h.control.stop();
    }
  });
});

describe('--agent-lost-ms', () => {
  it('takes 0 (never) to an hour in whole ms, and refuses anything else naming what it wants', () => {
    expect(parseAgentLostMs('0')).toBe(0);
    expect(parseAgentLostMs('5000')).toBe(5000);
    expect(parseAgentLostMs(String(MAX_AGENT_LOST_MS))).toBe(MAX_AGENT_LOST_MS);
    for (const bad of ['', ' ', '-1', '1.5', 'x', String(MAX_AGENT_LOST_MS + 1)])
      expect(() => parseAgentLostMs(bad)).toThrow(InvalidArgumentError);
    expect(() => parseAgentLostMs('x')).toThrow(/integer number of ms from 0 \(never\) to 3600000/);
  });
});
