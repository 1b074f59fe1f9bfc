// Read-only views of the control plane for operators, Triton's model configuration and the metrics:
// GET /v2/inss/cluster's snapshot, the workers with the share and batch in force, a deployment named.
import type { Deployment } from '../../src/policy/types.js';
import type { DoorTable } from '../../src/protocol/door.js';
import { gpuIndex } from '../clusterView.js';
import type { WorkerView } from '../metrics.js';
import type { AgentRegistry } from './agents.js';
import type { PathMeter } from './pathMeter.js';
import type { NamedDeployment } from './policyLoop.js';
import { identity } from './records.js';
import type { TaskBuffer } from './taskBuffer.js';
import type { ControlSettings, ServedModelConfig } from './types.js';
import type { WorkerSet } from './workerSet.js';

/** The workers with the share and batch in force. */
export function workerViews(set: WorkerSet, models: readonly ServedModelConfig[]): WorkerView[] {
  return set.workers.map((w) => ({
    workerId: w.workerId,
    model: models[w.model]!.name,
    gpu: w.gpu,
    pct: set.timeshared(w.gpu) ? 100 : w.pct,
    batch: w.batch,
    timeoutMs: w.timeoutMs,
    role: w.role,
    state: w.state,
    serving: set.serving(w),
  }));
}

/** A deployment with model names and GPUs as `agent:local`. */
export function namedDeployment(d: Deployment, set: WorkerSet, models: readonly ServedModelConfig[]): NamedDeployment {
  const refs = set.gpuRefs;
  return {
    placements: d.placements.map((p) => ({
      ...p,
      model: models[p.model]!.name,
      gpu: `${refs[p.gpu]?.agentId}:${refs[p.gpu]?.local}`,
    })),
    ...(d.gpuModes ? { gpuModes: d.gpuModes } : {}),
    ...(d.pipelineBudgetsMs ? { pipelineBudgetsMs: d.pipelineBudgetsMs } : {}),
  };
}

export interface SnapshotParts {
  readonly policyName: string;
  readonly policyError: string | null;
  readonly settings: ControlSettings;
  readonly models: readonly ServedModelConfig[];
  readonly agents: AgentRegistry;
  readonly set: WorkerSet;
  readonly buffer: TaskBuffer;
  readonly meter: PathMeter;
  readonly dispatchMarginMs: number;
}

/** The snapshot GET /v2/inss/cluster returns. */
export function snapshot(p: SnapshotParts): unknown {
  const { set, models, buffer } = p;
  const cluster = set.cluster;
  return {
    policy: p.policyName,
    policyError: p.policyError,
    settings: p.settings,
    agents: p.agents.snapshot(),
    gpus: set.gpuRefs.map((r, g) => ({
      index: g,
      agentId: r.agentId,
      local: r.local,
      profile: cluster?.gpus[g]?.profileId,
      mode: set.gpuModes[g] ?? 'mps',
      pooled: cluster?.gpus[g]?.pooled,
    })),
    workers: set.workers.map((w) => ({
      workerId: w.workerId,
      generation: w.generation,
      agentId: w.agentId,
      gpu: w.gpu,
      localGpu: w.localGpu,
      model: models[w.model]!.name,
      pct: w.pct,
      batch: w.batch,
      role: w.role,
      state: w.state,
      pid: w.pid,
      busy: w.inFlight.length > 0,
      // Where its batches go: its data socket (the secret is not shown), or null (through its agent).
      data: w.data?.address ?? null,
      overheadMs: Number(w.overheadMs.toFixed(3)),
    })),
    queued: Object.fromEntries(models.map((m, i) => [m.name, buffer.onTime(i).length])),
    delayed: Object.fromEntries(models.map((m, i) => [m.name, buffer.delayed(i).length])),
    dispatchMarginMs: Number(p.dispatchMarginMs.toFixed(3)),
    deployment: set.current,
    // What `inss bench --transport FILE` takes (one agent's entry): docs/serving.md, "The path in the twin".
    transport: p.meter.snapshot(),
  };
}

/** Why a task of model `name` finds it not deployed: the policy cannot run, no GPU is planned, or none placed it. */
export function notDeployed(name: string, policyError: string | null, gpus: number): string {
  if (policyError) return `model '${name}' is not deployed: the policy cannot run on this cluster (${policyError})`;
  if (gpus === 0) return `model '${name}' is not deployed: no agent with GPUs is connected`;
  return `model '${name}' is not deployed: the policy placed it on no GPU`;
}

/** The agents and workers as a front door's table gives them (src/protocol/door.ts); `doorOf`: a GPU's door. */
export function doorRows(
  agents: AgentRegistry,
  set: WorkerSet,
  models: readonly ServedModelConfig[],
  doorOf: (agentId: string, localGpu: number) => number,
): Omit<DoorTable, 'v' | 'type' | 'door' | 'doors'> {
  const mode = (agentId: string, local: number) => set.gpuModes[gpuIndex(set.gpuRefs, agentId, local)] ?? 'mps';
  return {
    agents: [...agents.all()].map((a) => ({
      agentId: a.agentId,
      hostname: a.hostname,
      workerKind: a.workerKind,
      connected: a.connected,
      gpus: a.gpus,
      modes: a.gpus.map((g) => mode(a.agentId, g.index)),
    })),
    workers: set.workers.map((w) => ({
      ...identity(w, models),
      agentId: w.agentId,
      state: w.state,
      ...(w.data ? { data: w.data } : {}),
      batch: w.batch,
      timeoutMs: Number.isNaN(w.timeoutMs) ? null : w.timeoutMs,
      role: w.role,
      wanted: w.wanted,
      door: doorOf(w.agentId, w.localGpu),
      ...(w.padBatch ? { padBatch: true } : {}),
    })),
    ...(set.learned ? { learned: set.learned } : {}),
  };
}
