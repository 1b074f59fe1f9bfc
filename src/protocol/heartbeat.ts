// Heartbeats on the agent link (docs/reliability.md, "A silent partition"). A link can go silent without
// closing: a cable pulled, a host's network down, a firewall dropping packets. TCP then reports nothing
// for minutes, and a scheduler would keep sending batches into it. So the scheduler pings each agent
// every beat (a WebSocket ping; the agent's WebSocket answers with a pong by itself) and each side
// counts the beats that passed with nothing heard from the other: after `LOST_AFTER_BEATS` in a row the
// link is lost, the scheduler drops the agent (its tasks go to other workers of their models) and the
// agent reconnects. The beat is the scheduler's `--heartbeat-ms`; its `welcome` tells the agent.
// Beats are counted, not wall time: a process whose event loop stalled past a beat counts one missed
// beat, not several, so a busy machine does not lose a link that is alive.

/** The scheduler's beat when none is set (ms). */
export const DEFAULT_HEARTBEAT_MS = 1000;
/** Beats in a row with nothing heard after which a link is lost. */
export const LOST_AFTER_BEATS = 3;
/**
 * The bounds of `--heartbeat-ms`: a beat under 100 ms costs pings for nothing (and a loaded machine may
 * miss three); one over a minute detects a partition too late to matter.
 */
export const HEARTBEAT_MS_RANGE = { min: 100, max: 60_000 } as const;

/** Whether `ms` is a beat inss takes (an integer in HEARTBEAT_MS_RANGE). */
export function validHeartbeatMs(ms: number): boolean {
  return Number.isInteger(ms) && ms >= HEARTBEAT_MS_RANGE.min && ms <= HEARTBEAT_MS_RANGE.max;
}

/** One side's count of the other's silence: `heard` on every sign of life, `beat` once per beat. */
export class Silence {
  private heardSinceBeat = true;
  private missed = 0;

  heard(): void {
    this.heardSinceBeat = true;
  }

  /** One beat passed; true once `LOST_AFTER_BEATS` beats in a row passed with nothing heard. */
  beat(): boolean {
    this.missed = this.heardSinceBeat ? 0 : this.missed + 1;
    this.heardSinceBeat = false;
    return this.missed >= LOST_AFTER_BEATS;
  }

  /** Beats in a row that passed with nothing heard. */
  get missedBeats(): number {
    return this.missed;
  }
}
