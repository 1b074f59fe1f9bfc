// The agents' WebSocket hub (scheduler/hub.ts) on a real HTTP server and real WebSocket clients: it
// hands validated messages to the events it was attached with, and refuses what is not a protocol message.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { AGENT_PATH, type AgentEvents, AgentHub } from '../../scheduler/hub.js';
import { AGENT_PROTOCOL_VERSION } from '../../src/protocol/agent.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/frames.js';

const servers: Server[] = [];
const hubs: AgentHub[] = [];
afterEach(async () => {
  for (const h of hubs.splice(0)) h.close();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A hub on a fresh server, attached with events that record what they are told. */
async function hubWithEvents(heartbeatMs?: number): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const events: AgentEvents = {
    agentConnected: (h) => seen.push(`connected ${h.agentId}`),
    agentDisconnected: (id) => seen.push(`disconnected ${id}`),
    workersReported: (id, ws) => seen.push(`workers ${id} ${ws.length}`),
    telemetry: (id) => seen.push(`telemetry ${id}`),
    batchResult: (id, m) => seen.push(`result ${id} ${m.batchId}`),
    batchError: (id, m) => seen.push(`batchError ${id} ${m.batchId}`),
  };
  const server = createServer();
  servers.push(server);
  const hub = new AgentHub('tok', pino({ level: 'silent' }), new Map(), heartbeatMs);
  hubs.push(hub);
  hub.attach(server, events);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}${AGENT_PATH}`, seen };
}

/** `autoPong` false: the client never answers the hub's pings (a host cut off, as the hub sees it). */
function connect(url: string, autoPong = true): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers: { authorization: 'Bearer tok' }, autoPong });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

const until = async (f: () => boolean) => {
  while (!f()) await new Promise((r) => setTimeout(r, 10));
};

const hello = {
  v: AGENT_PROTOCOL_VERSION,
  type: 'hello',
  agentId: 'a1',
  hostname: 'h',
  workerKind: 'sim',
  gpus: [],
  workers: [],
};

describe('AgentHub: agents in, events out', () => {
  it('tells the events it was attached with of each validated message, and of the agent leaving', async () => {
    const { url, seen } = await hubWithEvents();
    const ws = await connect(url);
    ws.send(encodeFrame(hello));
    ws.send(encodeFrame({ v: AGENT_PROTOCOL_VERSION, type: 'workers', workers: [] }));
    ws.send(
      encodeFrame({
        v: AGENT_PROTOCOL_VERSION,
        type: 'batchError',
        batchId: 'b1',
        workerId: 'w1',
        reason: 'worker-failed',
        message: 'exited',
      }),
    );
    await until(() => seen.length === 3);
    ws.close();
    await until(() => seen.length === 4);
    expect(seen).toEqual(['connected a1', 'workers a1 0', 'batchError a1 b1', 'disconnected a1']);
  });

  it('closes a connection whose first message is not hello, telling the events nothing', async () => {
    const { url, seen } = await hubWithEvents();
    const ws = await connect(url);
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.send(encodeFrame({ v: AGENT_PROTOCOL_VERSION, type: 'workers', workers: [] }));
    expect(await closed).toBe(1008);
    expect(seen).toEqual([]);
  });

  it('welcomes an agent with the beat, and drops one that answers no ping for 3 beats', async () => {
    const { url, seen } = await hubWithEvents(100);
    const live = await connect(url);
    const silent = await connect(url, false);
    const welcomes: unknown[] = [];
    live.on('message', (d: Buffer) => welcomes.push(decodeFrame(d).header));
    live.send(encodeFrame(hello));
    silent.send(encodeFrame({ ...hello, agentId: 'a2' }));
    await until(() => seen.includes('disconnected a2'));
    expect(welcomes).toEqual([{ v: AGENT_PROTOCOL_VERSION, type: 'welcome', heartbeatMs: 100 }]);
    // The agent that answers its pings stays, well past the beats that dropped the other.
    await new Promise((r) => setTimeout(r, 600));
    expect(seen).toEqual(['connected a1', 'connected a2', 'disconnected a2']);
    expect(live.readyState).toBe(WebSocket.OPEN);
    live.close();
  });
});
