// The agents the scheduler has heard from: their GPUs as last reported and whether each is connected.
// An agent that disconnects stays known, its placements kept for its return; one away longer than the
// control plane's `agentLostMs` is *replaced*: its GPUs leave the plan (the policy re-places its models
// on the other agents' GPUs) until it says hello again, which brings its GPUs back into the plan.
import type { AgentGpu, FromAgent } from '../../src/protocol/agent.js';

export interface AgentEntry {
  readonly agentId: string;
  gpus: AgentGpu[];
  connected: boolean;
  hostname: string;
  workerKind: string;
  /** When it disconnected (the control plane's clock); null while connected. */
  lostSinceMs: number | null;
  /** Its GPUs are out of the plan: it was away too long (`replaceLost`). */
  replaced: boolean;
}

export class AgentRegistry {
  private readonly agents = new Map<string, AgentEntry>();

  /**
   * An agent said hello; returns whether the planned GPUs change: it is new, its GPUs differ from those
   * it reported before, or it was replaced (its GPUs come back into the plan).
   */
  hello(hello: Extract<FromAgent, { type: 'hello' }>): boolean {
    const prev = this.agents.get(hello.agentId);
    const gpusChanged = !prev || prev.replaced || JSON.stringify(prev.gpus) !== JSON.stringify(hello.gpus);
    this.agents.set(hello.agentId, {
      agentId: hello.agentId,
      gpus: hello.gpus,
      connected: true,
      hostname: hello.hostname,
      workerKind: hello.workerKind,
      lostSinceMs: null,
      replaced: false,
    });
    return gpusChanged;
  }

  /** The agent's connection closed at `nowMs`; false when it was never known or already away. */
  disconnected(agentId: string, nowMs: number): boolean {
    const a = this.agents.get(agentId);
    if (!a || !a.connected) return false;
    a.connected = false;
    a.lostSinceMs = nowMs;
    return true;
  }

  /**
   * Marks replaced, and returns, the agents away for at least `afterMs` at `nowMs`, when a connected agent
   * with GPUs remains to take their models (with none, re-placing has nowhere to go: the placements wait
   * for the agents' return, tasks queued meanwhile).
   */
  replaceLost(nowMs: number, afterMs: number): AgentEntry[] {
    if (![...this.agents.values()].some((a) => a.connected && a.gpus.length > 0)) return [];
    const lost = [...this.agents.values()].filter(
      (a) => !a.connected && !a.replaced && a.lostSinceMs !== null && nowMs - a.lostSinceMs >= afterMs,
    );
    for (const a of lost) a.replaced = true;
    return lost;
  }

  /** The agents whose GPUs are in the plan: every known agent but those replaced. */
  planned(): AgentEntry[] {
    return [...this.agents.values()].filter((a) => !a.replaced);
  }

  known(agentId: string): boolean {
    return this.agents.has(agentId);
  }

  connected(agentId: string): boolean {
    return this.agents.get(agentId)?.connected ?? false;
  }

  connectedCount(): number {
    return [...this.agents.values()].filter((a) => a.connected).length;
  }

  /** Every known agent, connected or not. */
  all(): IterableIterator<AgentEntry> {
    return this.agents.values();
  }

  /** Whether the agent's GPU `localGpu` is simulated (its batches must name the batches beside them). */
  simulatedGpu(agentId: string, localGpu: number): boolean {
    return this.agents.get(agentId)?.gpus.find((g) => g.index === localGpu)?.simulated ?? false;
  }

  /** For GET /v2/inss/cluster. */
  snapshot(): unknown[] {
    return [...this.agents.values()].map((a) => ({
      agentId: a.agentId,
      connected: a.connected,
      replaced: a.replaced,
      hostname: a.hostname,
      workerKind: a.workerKind,
      gpus: a.gpus,
    }));
  }
}
