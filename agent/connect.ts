// How an agent connects to the scheduler: why a connection failed, in words an operator can
// act on, and the TLS settings of a wss:// connection.
// Contract: every failed connection or upgrade is retried by the agent with backoff; this module only
// names the reason and how loudly to say it. A refusal of the token is an error (the operator must fix a
// credential; the agent keeps trying so it joins once the scheduler accepts it); anything else is a
// warning (a scheduler restarting, a proxy in front of it not ready yet). A connection that goes silent
// (a partition: nothing closes) is dropped after missed heartbeats and retried the same way.
import type WebSocket from 'ws';
import { Silence } from '../src/protocol/heartbeat.js';

export interface UpgradeRefusal {
  readonly level: 'error' | 'warn';
  readonly reason: string;
}

/** The reason for a non-101 answer to the agent's WebSocket upgrade, by HTTP status code. */
export function upgradeRefusal(statusCode: number | undefined): UpgradeRefusal {
  if (statusCode === 401 || statusCode === 403) {
    return {
      level: 'error',
      reason:
        `the scheduler refused the token (HTTP ${statusCode}): check the agent's token against the ` +
        `scheduler's; retrying`,
    };
  }
  if (statusCode === 404)
    return { level: 'warn', reason: 'no agent hub at this URL (HTTP 404): check --scheduler; retrying' };
  if (statusCode !== undefined && statusCode >= 500)
    return { level: 'warn', reason: `the scheduler or a proxy failed the upgrade (HTTP ${statusCode}); retrying` };
  return { level: 'warn', reason: `the scheduler refused the connection (HTTP ${statusCode ?? 'unknown'}); retrying` };
}

/**
 * TLS settings of the agent's wss:// connection: `ca`, the PEM certificate(s) to trust
 * besides the system's (`inss agent --ca`, for a self-signed or private-CA scheduler certificate).
 * `checkServerIdentity` replaces the host-name check; only `inss up`'s own agent uses it, to trust
 * exactly the certificate its scheduler serves on 127.0.0.1 whatever names that certificate carries.
 */
export interface AgentTls {
  readonly ca?: Buffer;
  readonly checkServerIdentity?: () => undefined;
}

/**
 * How long one connection attempt may take, upgrade included: to a host cut off, a TCP connect would
 * hang for minutes instead of failing, and the agent must try again soon after the link is back.
 */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/**
 * Watches the connection to the scheduler for silence once its `welcome` gave the beat
 * (src/protocol/heartbeat.ts): each ping or message is a sign of life; `LOST_AFTER_BEATS` beats in a
 * row without one call `lost` with how long it was silent (the agent drops the connection and
 * reconnects). Stops when the connection closes.
 */
export function watchScheduler(ws: WebSocket, beatMs: number, lost: (silentMs: number) => void): void {
  const silence = new Silence();
  const heard = () => silence.heard();
  const stop = () => {
    clearInterval(timer);
    ws.off('ping', heard);
    ws.off('message', heard);
  };
  const timer = setInterval(() => {
    if (!silence.beat()) return;
    stop();
    lost(silence.missedBeats * beatMs);
  }, beatMs);
  ws.on('ping', heard);
  ws.on('message', heard);
  ws.once('close', stop);
}
