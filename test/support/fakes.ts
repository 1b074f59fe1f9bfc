// Small named fakes shared by the tests.
import type { DirectEvents, DirectLink } from '../../scheduler/workerLink.js';
import type { Deployment, Observation, Policy } from '../../src/policy/types.js';
import type { DataEndpoint } from '../../src/protocol/agent.js';

/** A policy that always returns the same deployment, recording what it observed. */
export class FixedPolicy implements Policy {
  readonly name = 'fixed';
  readonly observations: Observation[] = [];
  constructor(private readonly deployment: Deployment) {}
  decide(obs: Observation): Deployment {
    this.observations.push(obs);
    return this.deployment;
  }
}

/** A policy that plays a list of deployments, one per epoch, then repeats the last. */
export class ScriptedPolicy implements Policy {
  readonly name = 'scripted';
  private i = 0;
  constructor(private readonly script: readonly Deployment[]) {}
  decide(): Deployment {
    const d = this.script[Math.min(this.i, this.script.length - 1)]!;
    this.i++;
    return d;
  }
}

/**
 * The control plane's direct path to workers (scheduler/workerLink.ts `DirectLink`) without sockets:
 * a connection is open once the test calls `connect(key)`; sent frames are recorded; the test answers
 * through the events the control plane registered (`frame`, `closed`).
 */
export class FakeDirectLink implements DirectLink {
  readonly opened = new Map<string, { endpoint: DataEndpoint; events: DirectEvents; connected: boolean }>();
  /** `bySlot`: whether the batch's parts may go as shared-memory slots (DirectLink.send). */
  readonly sent: { key: string; header: Record<string, unknown>; bytes: number; bySlot: boolean }[] = [];

  open(key: string, endpoint: DataEndpoint, events: DirectEvents): void {
    if (!this.opened.has(key)) this.opened.set(key, { endpoint, events, connected: false });
  }
  has(key: string): boolean {
    return this.opened.has(key);
  }
  send(key: string, header: object, parts: readonly Uint8Array[], bySlot = true): boolean {
    if (!this.opened.get(key)?.connected) return false;
    const bytes = parts.reduce((n, p) => n + p.length, 0);
    this.sent.push({ key, header: header as Record<string, unknown>, bytes, bySlot });
    return true;
  }
  close(key: string): void {
    this.drop(key, 'closed by the scheduler');
  }
  /** The connection is established (batches may go on it from now). */
  connect(key: string): void {
    this.opened.get(key)!.connected = true;
  }
  /** The connection ends (the worker died, or close()): the control plane is told. */
  drop(key: string, why: string): void {
    const c = this.opened.get(key);
    if (!c) return;
    this.opened.delete(key);
    c.events.closed(why);
  }
}
