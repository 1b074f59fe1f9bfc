// The front doors' link and routing on real sockets (docs/front-doors.md): the door hub (scheduler/linkHub.ts on
// the scheduler's /doors path) admits a door only with a token, refuses a message that fails its schema naming the
// field, and hands a door's hello and load to its events; a door's routes (scheduler/doorRoute.ts) keep a model's
// requests where the door holds its workers and otherwise send them to the doors holding serving ones, by their
// shares.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { DoorRoutes } from '../../scheduler/doorRoute.js';
import { LinkHub, linkSpec, routeUpgrades } from '../../scheduler/linkHub.js';
import { DOOR_PROTOCOL_VERSION, type DoorWorker, type FromDoor, FromDoorSchema } from '../../src/protocol/door.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/frames.js';

const servers: Server[] = [];
const hubs: LinkHub<FromDoor>[] = [];
afterEach(async () => {
  for (const h of hubs.splice(0)) h.close('done');
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function doorHub(): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const spec = linkSpec<FromDoor>(
    '/doors',
    'front door',
    'doorId',
    DOOR_PROTOCOL_VERSION,
    FromDoorSchema,
    (h) => h.doorId,
  );
  const hub = new LinkHub(spec, 'tok', pino({ level: 'silent' }), new Map([['d9', 'own-token']]));
  hubs.push(hub);
  hub.start({
    hello: (id, m) => seen.push(`hello ${id} ${m.url}`),
    message: (id, m) => seen.push(`${m.type} ${id} ${m.type === 'load' ? m.models[0]!.arrivals : ''}`),
    closed: (id) => seen.push(`closed ${id}`),
  });
  const server = createServer();
  servers.push(server);
  routeUpgrades(server, [hub]);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/doors`, seen };
}

function connect(url: string, token: string): Promise<WebSocket> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

const until = async (f: () => boolean) => {
  while (!f()) await new Promise((r) => setTimeout(r, 10));
};

const hello = { v: DOOR_PROTOCOL_VERSION, type: 'hello', doorId: 'd1', url: 'http://10.0.0.6:8000' };
const row = (model: string, arrivals: number) => ({
  model,
  arrivals,
  served: arrivals,
  violated: 0,
  dropped: 0,
  latencySumMs: 1,
});

describe('the front doors link', () => {
  it('takes a door with the token, its hello and its load reports, and tells when it leaves', async () => {
    const { url, seen } = await doorHub();
    const ws = await connect(url, 'tok');
    ws.send(encodeFrame(hello));
    ws.send(encodeFrame({ v: DOOR_PROTOCOL_VERSION, type: 'load', models: [row('resnet50', 7)], batches: [] }));
    await until(() => seen.length === 2);
    ws.close();
    await until(() => seen.length === 3);
    expect(seen).toEqual(['hello d1 http://10.0.0.6:8000', 'load d1 7', 'closed d1']);
  });

  it('refuses a door without a good token, and a door token used for another id', async () => {
    const { url, seen } = await doorHub();
    await expect(connect(url, 'wrong')).rejects.toThrow(/HTTP 401/);
    const ws = await connect(url, 'own-token');
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.send(encodeFrame(hello));
    expect(await closed).toBe(1008);
    expect(seen).toEqual([]);
  });

  it('refuses a message that fails its schema, naming the field', async () => {
    const { url, seen } = await doorHub();
    const ws = await connect(url, 'tok');
    const said: string[] = [];
    ws.on('message', (d: Buffer) => said.push(JSON.stringify(decodeFrame(d).header)));
    const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
    ws.send(encodeFrame(hello));
    ws.send(encodeFrame({ v: DOOR_PROTOCOL_VERSION, type: 'load', models: [row('resnet50', -1)], batches: [] }));
    expect(await closed).toBe(1008);
    expect(said.find((s) => s.includes('"error"'))).toMatch(/models\.0\.arrivals/);
    await until(() => seen.length === 2);
    expect(seen).toEqual(['hello d1 http://10.0.0.6:8000', 'closed d1']);
  });
});

const worker = (model: string, door: number, workerId: string, state: DoorWorker['state'] = 'ready'): DoorWorker => ({
  workerId,
  model,
  gpu: 0,
  pct: 50,
  generation: 1,
  agentId: 'a1',
  state,
  batch: 4,
  timeoutMs: null,
  role: 'active',
  wanted: true,
  door,
});

describe("a door's routes", () => {
  const doors = [
    { index: 0, url: 'http://s:8000' },
    { index: 1, url: 'http://d1:8000' },
    { index: 2, url: 'http://d2:8000' },
  ];

  it("serves a model here where this door holds its worker, else sends it by the doors' shares of serving ones", () => {
    const routes = new DoorRoutes(['resnet50', 'mobilenet', 'bert']);
    const workers = [
      worker('resnet50', 0, 'w1'),
      worker('mobilenet', 1, 'w2'),
      worker('mobilenet', 2, 'w3'),
      worker('mobilenet', 2, 'w4'),
      worker('bert', 1, 'w5', 'starting'),
    ];
    routes.update(0, doors, workers);
    expect(routes.target('resnet50')).toBeNull();
    // mobilenet: one worker at door 1, two at door 2: a third of its requests to door 1.
    const to = Array.from({ length: 6 }, () => routes.target('mobilenet'));
    expect(to.filter((u) => u === 'http://d1:8000')).toHaveLength(2);
    expect(to.filter((u) => u === 'http://d2:8000')).toHaveLength(4);
    // bert's only worker is starting: nowhere to send it yet, so it waits here.
    expect(routes.target('bert')).toBeNull();
    expect(routes.elsewhere('mobilenet')).toBe(true);
    expect(routes.elsewhere('bert')).toBe(false);
    expect(routes.target('unknown')).toBeNull();
    // Door 2 gone: its workers no longer count.
    routes.update(0, doors.slice(0, 2), workers);
    expect(Array.from({ length: 3 }, () => routes.target('mobilenet'))).toEqual(Array(3).fill('http://d1:8000'));
  });
});
