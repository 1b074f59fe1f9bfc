// Heartbeats on the agent link (src/protocol/heartbeat.ts, agent/connect.ts): when a link counts as lost,
// and the agent's watch of a silent scheduler on a real WebSocket.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket, WebSocketServer } from 'ws';
import { watchScheduler } from '../../agent/connect.js';
import { LOST_AFTER_BEATS, Silence, validHeartbeatMs } from '../../src/protocol/heartbeat.js';

describe('Silence', () => {
  it('is lost only after LOST_AFTER_BEATS beats in a row with nothing heard', () => {
    const s = new Silence();
    const beats = (n: number) => Array.from({ length: n }, () => s.beat());
    // The first beat follows the connection (a sign of life): it counts no miss.
    expect(beats(LOST_AFTER_BEATS)).toEqual([false, false, false]);
    expect(s.missedBeats).toBe(LOST_AFTER_BEATS - 1);
    s.heard();
    expect(beats(LOST_AFTER_BEATS)).toEqual([false, false, false]);
    expect(s.beat()).toBe(true);
    expect(s.missedBeats).toBe(LOST_AFTER_BEATS);
  });

  it('one sign of life per beat keeps the link, however late within the beat', () => {
    const s = new Silence();
    for (let i = 0; i < 20; i++) {
      s.heard();
      expect(s.beat()).toBe(false);
    }
    expect(s.missedBeats).toBe(0);
  });
});

describe('validHeartbeatMs', () => {
  it('takes an integer number of ms in 100..60000', () => {
    expect([100, 1000, 60_000].map(validHeartbeatMs)).toEqual([true, true, true]);
    expect([99, 60_001, 1.5, Number.NaN, -1000].map(validHeartbeatMs)).toEqual([false, false, false, false, false]);
  });
});

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A WebSocket server that pings each connection every `pingMs` while `pinging()` holds. */
async function pinger(pingMs: number, pinging: () => boolean): Promise<{ url: string; wss: WebSocketServer }> {
  const server = createServer();
  servers.push(server);
  const wss = new WebSocketServer({ server });
  wss.on('connection', (ws) => {
    const t = setInterval(() => pinging() && ws.ping(), pingMs);
    ws.on('close', () => clearInterval(t));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}`, wss };
}

describe('watchScheduler', () => {
  it('keeps a pinged connection and calls lost once the pings stop', async () => {
    let pinging = true;
    const { url, wss } = await pinger(50, () => pinging);
    const ws = new WebSocket(url);
    await new Promise((r) => ws.once('open', r));
    const lost: number[] = [];
    watchScheduler(ws, 50, (silentMs) => lost.push(silentMs));
    await new Promise((r) => setTimeout(r, 500));
    expect(lost).toEqual([]);
    pinging = false;
    const t0 = Date.now();
    while (lost.length === 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20));
    expect(lost).toEqual([LOST_AFTER_BEATS * 50]);
    ws.terminate();
    wss.close();
  });
});
