// The node agent keeps worker identity (docs/worker-protocol.md, "Worker identity"): the real Agent
// class with real simulated-worker processes, talking frames over a real WebSocket to a stand-in hub
// that this test drives as the scheduler would.
// - a batch naming a worker's id with another model, share or generation is refused (`wrong-worker`)
//   and never reaches the process; the right identity is answered by that model;
// - a desired set that reuses an id for another model drains the old process and starts a new one.
import { resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { Agent } from '../../agent/agent.js';
import {
  AGENT_PROTOCOL_VERSION,
  type FromAgent,
  FromAgentSchema,
  type ToAgent,
  type WorkerIdentity,
  type WorkerStatus,
} from '../../src/protocol/agent.js';
import { decodeFrame, encodeFrame } from '../../src/protocol/frames.js';
import { tensorBytes } from '../../src/protocol/tensor.js';
import { standInForward } from '../../src/serving/standIn.js';
import { REPO_ROOT } from '../support/paths.js';
import { floats, imageBatch } from '../support/worker.js';

const SIM_WORKER = resolve(REPO_ROOT, 'dist', 'agent', 'simWorker.js');
const PROFILE = resolve(REPO_ROOT, 'profiles', 'rtx2060s.json');

const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
const inbox: { msg: FromAgent; payload: Buffer }[] = [];
let socket: WebSocket | null = null;
wss.on('connection', (ws) => {
  socket = ws;
  ws.on('message', (data: Buffer) => {
    const f = decodeFrame(data);
    inbox.push({ msg: FromAgentSchema.parse(f.header), payload: f.payload });
  });
});
await new Promise<void>((r) => wss.once('listening', () => r()));

const agent = new Agent({
  schedulerUrl: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
  token: 't',
  agentId: 'a1',
  gpus: [
    { index: 0, uuid: 'SIM-0', name: 'sim', memMb: 8000, profile: 'rtx2060s', simulated: true, pooled: 'overlap' },
  ],
  workerKind: 'sim',
  launch: (w) => ({
    command: process.execPath,
    args: [
      SIM_WORKER,
      '--model',
      w.model,
      '--profile',
      PROFILE,
      '--pct',
      String(w.pct),
      '--zero-time',
      '--warmup-ms',
      '0',
    ],
    env: {},
  }),
  logger: pino({ level: 'silent' }),
});
agent.start();

afterAll(async () => {
  await agent.stop();
  wss.close();
});

function send(msg: ToAgent, payload?: Buffer): void {
  socket!.send(encodeFrame(msg, payload));
}

async function until<T>(what: string, f: () => T | undefined | null | false, timeoutMs = 30_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = f();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

const lastWorkers = (): WorkerStatus[] =>
  inbox.flatMap((x) => (x.msg.type === 'workers' || x.msg.type === 'hello' ? [x.msg.workers] : [])).at(-1) ?? [];
const answerTo = (batchId: string) =>
  until(`an answer to ${batchId}`, () =>
    inbox.find((x) => (x.msg.type === 'result' || x.msg.type === 'batchError') && x.msg.batchId === batchId),
  );

function batch(batchId: string, id: WorkerIdentity): void {
  const input = imageBatch(1, 5);
  send(
    {
      v: AGENT_PROTOCOL_VERSION,
      type: 'batch',
      batchId,
      ...id,
      size: 1,
      inputs: [
        { name: 'input', datatype: 'FP32', shape: [1, 3, 224, 224], byteLength: tensorBytes('FP32', [1, 3, 224, 224]) },
      ],
    },
    input,
  );
}

describe('the agent and worker identity', () => {
  const w1: WorkerIdentity = { workerId: 'w1', model: 'resnet50', gpu: 0, pct: 50, generation: 7 };

  it("refuses a batch that is not its worker's, and answers the right one from that model", async () => {
    await until('the agent to connect', () => socket !== null && inbox.some((x) => x.msg.type === 'hello'));
    send({ v: AGENT_PROTOCOL_VERSION, type: 'desired', generation: 1, workers: [w1] });
    await until('w1 ready', () => lastWorkers().find((s) => s.workerId === 'w1' && s.state === 'ready'));
    for (const [i, wrong] of [
      { ...w1, model: 'mobilenet' },
      { ...w1, pct: 60 },
      { ...w1, generation: 6 },
    ].entries()) {
      batch(`bad${i}`, wrong);
      const a = await answerTo(`bad${i}`);
      expect(a.msg).toMatchObject({ type: 'batchError', reason: 'wrong-worker', workerId: 'w1' });
      if (a.msg.type === 'batchError')
        expect(a.msg.message).toMatch(/refused: worker w1 here is w1 \(resnet50 on GPU 0 at 50%, generation 7\)/);
    }
    batch('good', w1);
    const ok = await answerTo('good');
    expect(ok.msg.type).toBe('result');
    const x = floats(imageBatch(1, 5));
    expect(Array.from(floats(ok.payload))).toEqual(Array.from(standInForward('resnet50', x, 1, x.length, 1000)));
  });

  it('a desired set reusing the id for another model replaces the process, never reuses it', async () => {
    const before = lastWorkers().find((s) => s.workerId === 'w1' && s.state === 'ready')!;
    const w1b: WorkerIdentity = { workerId: 'w1', model: 'mobilenet', gpu: 0, pct: 50, generation: 8 };
    send({ v: AGENT_PROTOCOL_VERSION, type: 'desired', generation: 2, workers: [w1b] });
    const after = await until('the new w1 ready and the old one gone', () => {
      const ws = lastWorkers();
      return ws.length === 1 && ws[0]!.model === 'mobilenet' && ws[0]!.state === 'ready' ? ws[0] : null;
    });
    expect(after.pid).not.toBe(before.pid);
    expect(after.generation).toBe(8);
    batch('old-identity', w1);
    expect((await answerTo('old-identity')).msg).toMatchObject({ type: 'batchError', reason: 'wrong-worker' });
  });
});
