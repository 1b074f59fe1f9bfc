// The agents the scheduler has heard from: their GPUs as last reported and whether each is connected.
// An agent that disconnects stays known, its placements kept for its return.
import type { AgentGpu, FromAgent } from '../../src/protocol/agent.js';

export interface AgentEntry {
  readonly agentId: string;
  gpus: AgentGpu[];
  connected: boolean;
  hostname: string;
  workerKind: string;
}

export class AgentRegistry {
  private readonly agents = new Map<string, AgentEntry>();

  /** An agent said hello; returns whether its GPUs differ from those it reported before (or it is new). */
  hello(hello: Extract<FromAgent, { type: 'hello' }>): boolean {
    const prev = this.agents.get(hello.agentId);
    const gpusChanged = !prev || JSON.stringify(prev.gpus) !== JSON.stringify(hello.gpus);
    this.agents.set(hello.agentId, {
      agentId: hello.agentId,
      gpus: hello.gpus,
      connected: true,
      hostname: hello.hostname,
      workerKind: hello.workerKind,
    });
    return gpusChanged;
  }

  /** The agent's connection closed; false when it was never known. */
  disconnected(agentId: string): boolean {
    const a = this.agents.get(agentId);
    if (!a) return false;
    a.connected = false;
    return true;
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
      hostname: a.hostname,
      workerKind: a.workerKind,
      gpus: a.gpus,
    }));
  }
}
