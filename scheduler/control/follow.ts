// A front door's worker set follows its scheduler's table (scheduler/frontDoor.ts, docs/front-doors.md): the
// agents and their GPUs as the scheduler knows them, the GPUs' modes, and the workers of the GPUs the table gives
// this door, each with its whole identity, state, data socket, batch size and timeout. The door runs no policy:
// a worker the table no longer gives it is let go (its batches in flight finish), one it gives is adopted by its
// identity (scheduler/control/workerSet.ts `adopt`), and the table's word on each worker wins.
import type { Profile } from '../../src/profile/schema.js';
import { AGENT_PROTOCOL_VERSION, type FromAgent, workerKey, type WorkerStatus } from '../../src/protocol/agent.js';
import type { DoorTable, DoorWorker } from '../../src/protocol/door.js';
import { clusterView, gpuIndex } from '../clusterView.js';
import type { AgentRegistry } from './agents.js';
import { identity } from './records.js';
import type { ServedModelConfig } from './types.js';
import type { WorkerSet } from './workerSet.js';

type Hello = Extract<FromAgent, { type: 'hello' }>;

export interface FollowDeps {
  readonly models: readonly ServedModelConfig[];
  readonly profiles: ReadonlyMap<string, Profile>;
  readonly agents: AgentRegistry;
  readonly set: WorkerSet;
  readonly nowMs: number;
}

/** Moves the door's agents and worker set to table `t`. */
export function followTable(d: FollowDeps, t: DoorTable): void {
  const { agents, set, models } = d;
  let gpusChanged = false;
  for (const a of t.agents) {
    const { agentId, hostname, workerKind, gpus } = a;
    const hello: Hello = { v: AGENT_PROTOCOL_VERSION, type: 'hello', agentId, hostname, workerKind, gpus, workers: [] };
    gpusChanged = agents.hello(hello) || gpusChanged;
    if (!a.connected) agents.disconnected(a.agentId, d.nowMs);
  }
  for (const a of agents.all())
    if (!t.agents.some((x) => x.agentId === a.agentId)) agents.disconnected(a.agentId, d.nowMs);
  const view = clusterView(agents.planned(), d.profiles, models);
  const modes = view.refs.map((r) => {
    const a = t.agents.find((x) => x.agentId === r.agentId);
    return a?.modes[a.gpus.findIndex((g) => g.index === r.local)] ?? 'mps';
  });
  if (gpusChanged || set.cluster === null) set.rebuild(view, null, modes);
  else set.rebuild({ ...view, unprofiled: [], missingModels: [] }, null, modes);

  const mine = t.workers.filter((w) => w.door === t.door && models.some((m) => m.name === w.model));
  const key = (agentId: string, w: Parameters<typeof workerKey>[0]) => `${agentId}|${workerKey(w)}`;
  const rows = new Map(mine.map((w) => [key(w.agentId, w), w]));
  const rowOf = (w: (typeof set.workers)[number]) => rows.get(key(w.agentId, identity(w, models)));
  for (const w of set.workers) if (!rowOf(w)) w.wanted = false;
  set.keep((w) => w.wanted || w.inFlight.length > 0);
  const byAgent = new Map<string, DoorWorker[]>();
  for (const w of mine) byAgent.set(w.agentId, [...(byAgent.get(w.agentId) ?? []), w]);
  for (const [agentId, ws] of byAgent) {
    set.adopt(agentId, ws.filter((w) => gpuIndex(set.gpuRefs, agentId, w.gpu) >= 0).map(status));
    set.reported(agentId, ws.filter((w) => w.state !== 'unknown').map(status));
  }
  for (const w of set.workers) {
    const r = rowOf(w);
    if (!r) continue;
    w.wanted = r.wanted;
    w.role = r.role;
    w.batch = r.batch;
    w.timeoutMs = r.timeoutMs ?? NaN;
    w.padBatch = r.padBatch === true;
  }
  set.learn(t.learned);
  set.rebuilt();
}

/** A table row as its agent would report it. */
function status(w: DoorWorker): WorkerStatus {
  const { workerId, model, gpu, pct, generation, data } = w;
  const state = w.state === 'unknown' ? 'starting' : w.state;
  return { workerId, model, gpu, pct, generation, state, ...(data ? { data } : {}) };
}
