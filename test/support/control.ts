// The scheduler's control plane (scheduler/control.ts) driven by hand: a manual clock, a fake agent
// link that records every message, a silent logger and real Prometheus metrics (or the observers
// given). Tests play the agent: they connect it (hello), report its workers, answer batches. Nothing
// runs by itself: the epoch runs when the test calls `control.epoch()` (start() is never called).
import type { QueuePolicyConfig } from '../../src/serving/queuePolicy.js';
import { pino } from 'pino';
import { afterEach } from 'vitest';
import type { PooledGpuMode } from '../../src/model/pooledGpu.js';
import { Control, type ControlSettings, type TaskAnswer } from '../../scheduler/control.js';
import { Metrics } from '../../scheduler/metrics.js';
import type { ControlObserver } from '../../scheduler/observer.js';
import type { ClusterInfo, Deployment, Policy } from '../../src/policy/types.js';
import type { Profile } from '../../src/profile/schema.js';
import {
  AGENT_PROTOCOL_VERSION,
  type AgentGpu,
  type FromAgent,
  type ToAgent,
  type WorkerStatus,
} from '../../src/protocol/agent.js';
import { type ModelSignature, modelSignature } from '../../src/protocol/tensor.js';
import type { DirectLink } from '../../scheduler/workerLink.js';
import { loadProfileFile } from './clusters.js';
import { FixedPolicy } from './fakes.js';

export interface Sent {
  readonly agentId: string;
  readonly msg: ToAgent;
  /** The frame's payload parts as the control plane handed them over (not copied). */
  readonly payload?: readonly Uint8Array[];
}

export interface Harness {
  readonly control: Control;
  /** The control plane's metrics (real prom-client registry). */
  readonly metrics: Metrics;
  readonly sent: Sent[];
  /** The manual clock (ms); tests move it. */
  now: number;
  /** Batches sent so far, in order. */
  batches(): Extract<ToAgent, { type: 'batch' }>[];
  /** Batch `batchId`'s payload, its parts joined. */
  payloadOf(batchId: string): Buffer;
  /** The last desired set sent to the agent. */
  desired(): Extract<ToAgent, { type: 'desired' }>['workers'];
  /** The agent reports every desired worker in `state`. */
  report(state: WorkerStatus['state']): void;
  /** Submits a task of model m; its answer lands in `answers`. */
  submit(m: number): { answer: TaskAnswer | null };
  /** The agent answers batch `batchId` with one FP32 [n,1000] output after `latencyMs` of GPU time. */
  /** Batch `batchId` answered by its worker, which says it ran in `latencyMs` using `memoryMb` of GPU memory. */
  result(batchId: string, latencyMs?: number, memoryMb?: number): void;
}

export function simGpus(profile: string, count: number, pooled: PooledGpuMode = 'overlap'): AgentGpu[] {
  return Array.from({ length: count }, (_, i) => ({
    index: i,
    uuid: `SIM-${profile}-${i}`,
    name: profile,
    memMb: 8000,
    profile,
    simulated: true,
    pooled,
  }));
}

/** A model of the harness: the zoo's signature (one image in, 1000 FP32 out) unless it names its own. */
export interface HarnessModel {
  readonly name: string;
  readonly sloMs: number;
  /** A shared SLO tier's network (ServedModelConfig.profileModel). */
  readonly profileModel?: string;
  readonly queuePolicy?: QueuePolicyConfig;
  readonly signature?: ModelSignature;
  readonly maxBatchSize?: number;
}

export function controlHarness(opts: {
  models: readonly HarnessModel[];
  profiles: ReadonlyMap<string, Profile>;
  policy: (c: ClusterInfo) => Policy;
  gpus: AgentGpu[];
  settings?: Partial<ControlSettings>;
  initialRatePerS?: Record<string, number>;
  /** Workers the agent says it still runs when it connects (a scheduler restart). */
  running?: WorkerStatus[];
  /** Who records the control plane's events (default: real Prometheus metrics). */
  observers?: readonly Partial<ControlObserver>[];
  /** The direct path to workers' data sockets (a fake: test/support/fakes.ts `FakeDirectLink`). */
  direct?: DirectLink;
  /** ControlOptions.agentLostMs: an agent away this long is re-placed (absent: never). */
  agentLostMs?: number;
}): Harness {
  const sent: Sent[] = [];
  const metrics = new Metrics();
  const h = {
    now: 0,
    sent,
    metrics,
  } as Harness;
  const control = new Control({
    models: opts.models.map((m) => ({ ...m, signature: m.signature ?? modelSignature(602112, 4000) })),
    profiles: opts.profiles,
    policyName: 'test',
    createPolicy: opts.policy,
    link: { send: (agentId, msg, payload) => (sent.push({ agentId, msg, ...(payload ? { payload } : {}) }), true) },
    clock: () => h.now,
    wallClock: () => new Date(0),
    logger: pino({ level: 'silent' }),
    observers: opts.observers ?? [metrics],
    firstGeneration: 1,
    ...(opts.direct ? { direct: opts.direct } : {}),
    ...(opts.agentLostMs !== undefined ? { agentLostMs: opts.agentLostMs } : {}),
    ...(opts.settings ? { settings: opts.settings } : {}),
    ...(opts.initialRatePerS ? { initialRatePerS: opts.initialRatePerS } : {}),
  });
  Object.assign(h, {
    control,
    batches: () => sent.flatMap((s) => (s.msg.type === 'batch' ? [s.msg] : [])),
    payloadOf: (batchId: string) =>
      Buffer.concat(sent.find((s) => s.msg.type === 'batch' && s.msg.batchId === batchId)?.payload ?? []),
    desired: () => sent.flatMap((s) => (s.msg.type === 'desired' ? [s.msg] : [])).at(-1)?.workers ?? [],
    report: (state: WorkerStatus['state']) =>
      control.workersReported(
        'a1',
        h.desired().map((w) => ({ ...w, state, pid: 1 })),
      ),
    submit: (m: number) => {
      const box: { answer: TaskAnswer | null } = { answer: null };
      control.submit(
        m,
        { name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], data: Buffer.alloc(602112) },
        (a) => (box.answer = a),
      );
      return box;
    },
    result: (batchId: string, latencyMs = 1, memoryMb?: number) => {
      const b = h.batches().find((x) => x.batchId === batchId)!;
      const msg: Extract<FromAgent, { type: 'result' }> = {
        v: AGENT_PROTOCOL_VERSION,
        type: 'result',
        batchId,
        workerId: b.workerId,
        latencyMs,
        outputs: [{ name: 'output', datatype: 'FP32', shape: [b.size, 1000], byteLength: b.size * 4000 }],
        ...(memoryMb !== undefined ? { memoryMb } : {}),
      };
      control.batchResult('a1', msg, Buffer.alloc(b.size * 4000));
    },
  });
  control.agentConnected({
    v: AGENT_PROTOCOL_VERSION,
    type: 'hello',
    agentId: 'a1',
    hostname: 'test',
    workerKind: 'sim',
    gpus: opts.gpus,
    workers: opts.running ?? [],
  });
  return h;
}

/**
 * The smallest cluster the data-path and lost-agent suites drive by hand: resnet50 (SLO 1 s) on one simulated
 * rtx2060s at 50%, batch 1 (`deployment`). `setup(direct?, policy?)` makes a harness under a fixed policy of
 * that deployment (or `policy`); each one made is stopped after its test (registers vitest's afterEach).
 */
export function oneGpuHarnesses(): {
  readonly deployment: Deployment;
  readonly setup: (direct?: DirectLink, policy?: (c: ClusterInfo) => Policy) => Harness;
} {
  const rtx = loadProfileFile('rtx2060s');
  const profiles = new Map([[rtx.id, rtx]]);
  const deployment: Deployment = { placements: [{ model: 0, gpu: 0, pct: 50, batch: 1 }] };
  const harnesses: Harness[] = [];
  afterEach(() => {
    for (const h of harnesses.splice(0)) h.control.stop();
  });
  return {
    deployment,
    setup: (direct, policy = () => new FixedPolicy(deployment)) => {
      const h = controlHarness({
        models: [{ name: 'resnet50', sloMs: 1000 }],
        profiles,
        policy,
        gpus: simGpus('rtx2060s', 1),
        ...(direct ? { direct } : {}),
      });
      harnesses.push(h);
      return h;
    },
  };
}
