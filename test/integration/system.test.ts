// The running system end to end on this machine: the scheduler service, `inss agent` as a real
// process, simulated workers as real child processes, real sockets and a real SQLite file.
// - tasks are all answered, and their latencies agree with the simulator for the same placement;
// - a shadow swap under load loses and fails no task;
// - a model with replicas on two GPUs is served by both from its one queue;
// - SIGKILL of a worker: explicit errors for its batch in flight, a restarted worker, no lost task,
//   and the shared-memory slots its batches held freed with their tasks;
// - restarting the agent brings the cluster back to the desired state;
// - bad input gets a 4xx with a JSON error and changes nothing.
//
// Over 400 lines because each suite shares one running system (scheduler, agent and workers as
// processes) across its cases, and the system test list in vitest.config.ts names this one file.
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadScenario } from '../../cli/scenarios.js';
import { PolicyRegistry } from '../../cli/registry.js';
import { SchedulerService } from '../../scheduler/service.js';
import { Store } from '../../scheduler/store.js';
import { modelSignature } from '../../src/protocol/tensor.js';
import { loadShmAddon } from '../../src/protocol/shmMap.js';
import { initialRates, scenarioCluster, scenarioSettings, scenarioStreams } from '../../src/scenario/build.js';
import { simulate } from '../../src/sim/simulator.js';
import { TransportModelSchema, transportFields } from '../../src/serving/transport.js';
import type { ClusterInfo, Deployment, Observation, Policy } from '../../src/policy/types.js';
import { Rng } from '../../src/workload/random.js';
import { LoadgenReportSchema } from '../../tools/loadgen/report.js';
import { runCli } from '../support/cli.js';
import { FixedPolicy } from '../support/fakes.js';
import { writeScenario } from '../support/scenario.js';
import {
  binaryInferRequest,
  type Running,
  simForward,
  startInss,
  stopAll,
  waitFor,
  waitHttp200,
} from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-system-'));
const scenarioFile = writeScenario(join(dir, 'duo.json'), {
  name: 'duo',
  description: 'two models on one simulated RTX 2060 Super',
  gpus: { rtx2060s: 1 },
  models: [
    { name: 'resnet50', sloMs: 80, ratePerS: 40 },
    { name: 'mobilenet', sloMs: 60, ratePerS: 40 },
  ],
});

interface Sent {
  model: string;
  status: number;
  latencyMs: number;
  body: { error?: string; reason?: string };
  input: Float32Array;
  output?: Float32Array;
}

const INPUTS = Array.from({ length: 8 }, (_, i) =>
  new Float32Array(3 * 224 * 224).map((_, k) => ((k * 31 + i * 17) % 997) / 997),
);
const REQUESTS = INPUTS.map((x) => binaryInferRequest(x));

/** POST with node:http on a keep-alive agent (cheaper than fetch, so the client does not starve the system). */
function post(
  url: string,
  body: Buffer,
  headers: Record<string, string>,
  agent: http.Agent,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', agent, headers: { ...headers, 'content-length': String(body.length) } },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Open-loop Poisson sender: each request leaves on time whatever the earlier ones are doing. */
async function sendLoad(base: string, ratePerS: Record<string, number>, seconds: number, seed = 7): Promise<Sent[]> {
  const rng = new Rng(seed);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 512 });
  const schedule: { atMs: number; model: string }[] = [];
  for (const [model, r] of Object.entries(ratePerS)) {
    let t = 0;
    for (;;) {
      t += (rng.exponential() / r) * 1000;
      if (t >= seconds * 1000) break;
      schedule.push({ atMs: t, model });
    }
  }
  schedule.sort((a, b) => a.atMs - b.atMs);
  const t0 = performance.now();
  const pending: Promise<Sent>[] = [];
  for (const [i, s] of schedule.entries()) {
    const wait = s.atMs - (performance.now() - t0);
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    const input = INPUTS[i % INPUTS.length]!;
    const req = REQUESTS[i % REQUESTS.length]!;
    const sentAt = performance.now();
    pending.push(
      post(`${base}/v2/models/${s.model}/infer`, req.body, req.headers, agent).then((res) => {
        const latencyMs = performance.now() - sentAt;
        if (res.status !== 200)
          return {
            model: s.model,
            status: res.status,
            latencyMs,
            body: JSON.parse(res.body.toString()) as Sent['body'],
            input,
          };
        const bin = res.body.subarray(Number(res.headers['inference-header-content-length']));
        const output = new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length));
        return { model: s.model, status: 200, latencyMs, body: {}, input, output };
      }),
    );
  }
  const out = await Promise.all(pending);
  agent.destroy();
  return out;
}

async function cluster(base: string): Promise<{
  workers: {
    workerId: string;
    model: string;
    gpu: number;
    pct: number;
    state: string;
    role: string;
    pid: number | null;
    busy: boolean;
    overheadMs: number;
    data: string | null;
  }[];
}> {
  return (await (await fetch(`${base}/v2/inss/cluster`)).json()) as never;
}

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const t0 = Date.now();
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() - t0 > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}

afterEach(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('inss scheduler + inss agent as processes', () => {
  let sched: Running;
  let base: string;

  beforeEach(async () => {
    sched = startInss([
      'scheduler',
      '--port',
      '0',
      '--scenario',
      scenarioFile,
      '--policy',
      'static-even',
      '--state-dir',
      mkdtempSync(join(dir, 'state-')),
      '--token',
      'secret-1',
      '--log-level',
      'warn',
    ]);
    base = await waitFor(sched, /endpoint (http:\/\/[^ ]+)\/v2/);
  });

  it('answers every task, with the right output, and latencies that agree with the simulator', async () => {
    const agent = startInss([
      'agent',
      '--scheduler',
      base.replace('http', 'ws'),
      '--token',
      'secret-1',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'a1',
      '--log-level',
      'warn',
    ]);
    await waitHttp200(`${base}/v2/health/ready`);
    const sent = await sendLoad(base, { resnet50: 20, mobilenet: 20 }, 8);
    expect(sent.length).toBeGreaterThan(250);
    const ok = sent.filter((s) => s.status === 200);
    // Every request got an answer (Promise.all resolved them all): a result, or an explicit SLO drop.
    expect(
      sent
        .filter((x) => x.status !== 200)
        .map((x) => x.body.reason)
        .filter((r) => r !== 'slo'),
    ).toEqual([]);
    // How many meet the SLO depends on how loaded this 2-core machine is (the transport estimate the
    // dispatcher learns grows under load, and tasks that cannot make it are dropped, explicitly);
    // idle, it is all of them (docs/serving.md).
    expect(ok.length / sent.length).toBeGreaterThan(0.5);
    for (const s of ok.slice(0, 20)) expect(Array.from(s.output!)).toEqual(Array.from(simForward(s.input, s.model)));

    const loaded = loadScenario(scenarioFile);
    const c = scenarioCluster(loaded.scenario, loaded.profiles);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    const metric = (name: string, model: string) =>
      Number(new RegExp(`^${name}\\{model="${model}"\\} ([0-9.e+-]+)$`, 'm').exec(metrics)?.[1]);
    // The digital twin with the transport this run measured (scheduler -> agent -> worker and back,
    // per batch): it then predicts the task latencies the scheduler itself sees (arrival to answer).
    // The host's transport as the scheduler fitted it (fixed + per MB of a batch's inputs, the twin's model of the
    // path).
    // With the request's way in and the answer's way out the scheduler measured (docs/serving.md, "The path in the
    // twin").
    const transport = TransportModelSchema.parse(
      transportFields(
        ((await (await fetch(`${base}/v2/inss/cluster`)).json()) as { transport: Record<string, unknown> }).transport
          .a1,
      ),
    );
    expect(transport.wayIn, 'the way in is measured').toBeDefined();
    expect(transport.wayOutMs, 'the way out is measured').toBeDefined();
    const transportMs = transport.fixedMs + transport.perMbMs * 0.602112; // a batch of one, for the messages
    const sumOver = (name: string) => ['resnet50', 'mobilenet'].reduce((a, n) => a + metric(name, n), 0);
    const meanTransportMs =
      (sumOver('inss_batch_transport_seconds_sum') / sumOver('inss_batch_transport_seconds_count')) * 1000;
    // The load this test sent is half the scenario's rates (20/s a model against 40/s).
    const twin = simulate({
      cluster: c,
      streams: scenarioStreams(loaded.scenario, loaded.traces, 0.5),
      initialRatePerS: initialRates(loaded.scenario, loaded.traces, 0.5),
      policy: new PolicyRegistry().get('static-even').create(c, {}),
      settings: { ...scenarioSettings(loaded.scenario), durationMs: 60_000, transport },
    });
    for (const [m, name] of ['resnet50', 'mobilenet'].entries()) {
      const served =
        (metric('inss_task_latency_seconds_sum', name) / metric('inss_task_latency_seconds_count', name)) * 1000;
      // The scheduler's latency ends at its answer, before the way out the twin adds.
      const twinMs = twin.models[m]!.latencyMs.mean - transport.wayOutMs!;
      const msg =
        `${name}: scheduler-side mean ${served.toFixed(1)} ms, simulator with the measured transport ` +
        `(${transport.fixedMs} ms + ${transport.perMbMs} ms/MB; ${transportMs.toFixed(1)} ms for one image, ` +
        `${meanTransportMs.toFixed(1)} ms a batch on average) ${twinMs.toFixed(1)} ms`;
      // Within 15% + 5 ms, plus the mean transport the run measured per batch: the path's cost is what
      // varies with the machine's load (measured at load 7: 0.3% and 7.8% apart, 3-5 ms of transport;
      // at load 15-19: 22-27% apart, 25-30 ms). The bound before the direct path: 30% + 5 ms.
      expect(Math.abs(served - twinMs), msg).toBeLessThan(0.15 * twinMs + 5 + meanTransportMs);
    }
    for (const [m, name] of ['resnet50', 'mobilenet'].entries()) {
      // Batch execution: the simulated worker times batches with the simulator's ground truth, so the
      // mean batch time the workers report agrees with the twin's (the twin given the run's transport
      // follows the same dispatch rule, idle start included, so its batches are the live ones' sizes).
      const liveExec =
        (metric('inss_batch_compute_seconds_sum', name) / metric('inss_batch_compute_seconds_count', name)) * 1000;
      const simExec = twin.models[m]!.execMs.mean;
      expect(
        Math.abs(liveExec - simExec),
        `${name}: live batch ${liveExec.toFixed(1)} ms, simulator ${simExec.toFixed(1)} ms`,
      ).toBeLessThan(0.3 * simExec + 1);
      // Task latency at the client: at least the twin's (less its prediction error), and at least
      // what the scheduler itself measured (the 602 KB request's HTTP hop comes on top; how much depends
      // on the machine's load, so it is recorded in docs/serving.md, not bounded here).
      const live = mean(ok.filter((s) => s.model === name).map((s) => s.latencyMs));
      const predicted = twin.models[m]!.latencyMs.mean;
      expect(live, `${name}: live mean ${live.toFixed(1)} ms, simulator ${predicted.toFixed(1)} ms`).toBeGreaterThan(
        0.75 * predicted,
      );
      const schedulerSide =
        (metric('inss_task_latency_seconds_sum', name) / metric('inss_task_latency_seconds_count', name)) * 1000;
      expect(
        live,
        `${name}: client-side mean ${live.toFixed(1)} ms, scheduler-side ${schedulerSide.toFixed(1)} ms`,
      ).toBeGreaterThan(0.9 * schedulerSide);
    }

    // The same with `inss loadgen` as a client would run it: every request it sent got an answer
    // (no timeout, no network error, no malformed answer, no 4xx); the only errors are SLO drops.
    const lg = await runCli([
      'loadgen',
      '--url',
      base,
      '--model',
      'resnet50=20',
      '--model',
      'mobilenet=20',
      '--duration',
      '4',
      '--json',
    ]);
    expect(lg.code, lg.stderr).toBe(0);
    const report = LoadgenReportSchema.parse(JSON.parse(lg.stdout));
    const t = report.total;
    expect(t.sent).toBeGreaterThan(100);
    expect([t.errors.timeout, t.errors.network, t.errors['bad-response'], t.errors['http-4xx']]).toEqual([0, 0, 0, 0]);
    expect(t.ok + t.errors['http-5xx']).toBe(t.sent);
    for (const e of t.topErrors) expect(e.error).toMatch(/dropped/);
    // Every ok answer carried the scheduler's span of its task (Server-Timing), within what the client saw.
    expect(t.serverTimed).toBe(t.ok);
    expect(t.outsideServerMeanMs).toBeGreaterThan(0);
    expect(t.outsideServerMeanMs).toBeLessThan(t.latency.meanMs!);

    agent.child.kill('SIGTERM');
    expect((await agent.exited).code).toBe(0);
  });

  it('refuses an agent with a wrong token', async () => {
    const agent = startInss([
      'agent',
      '--scheduler',
      base.replace('http', 'ws'),
      '--token',
      'wrong',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'intruder',
    ]);
    await until('the refusal in the agent log', () => Promise.resolve(agent.stderr.includes('refused the token')));
    const c = (await (await fetch(`${base}/v2/inss/cluster`)).json()) as { agents: { agentId: string }[] };
    expect(c.agents.map((a) => a.agentId)).not.toContain('intruder');
  });

  it('restarting the agent brings the cluster back to the desired state', async () => {
    const args = [
      'agent',
      '--scheduler',
      base.replace('http', 'ws'),
      '--token',
      'secret-1',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'a1',
      '--log-level',
      'warn',
    ];
    let agent = startInss(args);
    await waitHttp200(`${base}/v2/health/ready`);
    const before = (await cluster(base)).workers
      .filter((w) => w.role === 'active')
      .map((w) => `${w.workerId}:${w.model}:${w.pct}`)
      .sort();
    agent.child.kill('SIGKILL');
    await agent.exited;
    await until('the model to be not ready', async () => (await fetch(`${base}/v2/health/ready`)).status === 503);
    agent = startInss(args);
    await waitHttp200(`${base}/v2/health/ready`);
    const after = (await cluster(base)).workers
      .filter((w) => w.role === 'active' && w.state === 'ready')
      .map((w) => `${w.workerId}:${w.model}:${w.pct}`)
      .sort();
    expect(after).toEqual(before);
    const sent = await sendLoad(base, { resnet50: 20, mobilenet: 20 }, 2);
    expect(
      sent
        .filter((s) => s.status !== 200)
        .map((s) => s.body.reason)
        .filter((r) => r !== 'slo'),
    ).toEqual([]);
    // Served, not only answered: how much of it meets the SLO right after fresh workers start depends
    // on the machine's speed (0.84-0.89 seen on a busy 2-core VM), so the bar is only that most is.
    expect(sent.filter((s) => s.status === 200).length / sent.length).toBeGreaterThan(0.5);
  });
});

/**
 * Plays one deployment until it has served tasks for `servedEpochs` epochs, then another: the swap
 * happens under load whatever the time the first workers took to start (on a loaded machine a switch
 * at a fixed epoch can come before they are ready, and then it abandons them instead of swapping).
 */
class SwitchWhenServingPolicy implements Policy {
  readonly name = 'switch-when-serving';
  private serving = 0;
  constructor(
    private readonly first: Deployment,
    private readonly second: Deployment,
    private readonly servedEpochs: number,
  ) {}
  decide(obs: Observation): Deployment {
    if (obs.lastEpoch.served.some((n) => n > 0)) this.serving++;
    return this.serving < this.servedEpochs ? this.first : this.second;
  }
}

describe('scheduler in process, agent and workers as processes', () => {
  let service: SchedulerService;
  let store: Store;
  let base: string;
  let policy: (c: ClusterInfo) => Policy;

  async function start(p: (c: ClusterInfo) => Policy): Promise<void> {
    const loaded = loadScenario(scenarioFile);
    policy = p;
    store = new Store(join(dir, `s-${Date.now()}.db`));
    service = await SchedulerService.start({
      host: '127.0.0.1',
      port: 0,
      token: 'tok',
      models: loaded.scenario.models.map((m) => ({
        name: m.name,
        sloMs: m.sloMs,
        signature: modelSignature(602112, 4000),
      })),
      profiles: loaded.profiles,
      policyName: 'test',
      createPolicy: (c) => policy(c),
      logger: pino({ level: 'warn' }),
      store,
      version: 'test',
      settings: { epochMs: 500 },
      bodyLimitBytes: 1_000_000,
      // Batches to the agent's workers (this host, Unix sockets) go by shared-memory descriptor.
      shmMb: 16,
    });
    base = service.url;
  }

  /** A series' value from the service's /metrics (0 when absent). */
  async function metric(series: string): Promise<number> {
    const line = (await (await fetch(`${base}/metrics`)).text()).split('\n').find((l) => l.startsWith(`${series} `));
    return line === undefined ? 0 : Number(line.slice(series.length + 1));
  }

  /** Every request body's slot freed (each task answered, each exchange ended). */
  async function slotsAllFreed(): Promise<number> {
    let held = -1;
    for (let i = 0; i < 200 && held !== 0; i++) {
      held = await metric('inss_shm_slots_in_use');
      if (held !== 0) await new Promise((r) => setTimeout(r, 50));
    }
    return held;
  }

  afterEach(async () => {
    await stopAll();
    await service.close();
    store.close();
  });

  it('a shadow swap that changes a share under load loses no task and fails none', async () => {
    const d1: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 40, batch: 4 },
        { model: 1, gpu: 0, pct: 40, batch: 4 },
      ],
    };
    const d2: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 60, batch: 4 },
        { model: 1, gpu: 0, pct: 40, batch: 4 },
      ],
    };
    await start(() => new SwitchWhenServingPolicy(d1, d2, 3));
    startInss([
      'agent',
      '--scheduler',
      service.agentUrl,
      '--token',
      'tok',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'a1',
      '--log-level',
      'warn',
    ]);
    await waitHttp200(`${base}/v2/health/ready`);
    // Load until the swap has happened (how long a new worker takes to start depends on the machine's
    // load: 2 s idle, over 6 s at a load average of 15), and 2 s more.
    const swaps = async () =>
      Number(/^inss_shadow_swaps_total (\d+)/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1]);
    const sent = await sendLoad(base, { resnet50: 20, mobilenet: 15 }, 6);
    for (let i = 0; i < 30 && (await swaps()) < 1; i++)
      sent.push(...(await sendLoad(base, { resnet50: 20, mobilenet: 15 }, 2)));
    sent.push(...(await sendLoad(base, { resnet50: 20, mobilenet: 15 }, 2)));
    // No task failed and none was lost (every request resolved): the only errors allowed are SLO drops
    // by the task buffer, which the swap does not cause (the old worker serves until the new is ready).
    const notOk = sent.filter((s) => s.status !== 200);
    expect(notOk.map((s) => s.body.reason).filter((r) => r !== 'slo')).toEqual([]);
    expect(await swaps()).toBeGreaterThanOrEqual(1);
    const resnet = (await cluster(base)).workers.filter((w) => w.model === 'resnet50');
    expect(resnet.map((w) => [w.pct, w.state, w.role])).toEqual([[60, 'ready', 'active']]);
    // Batches went by descriptor to the old worker and the new (each attaches with the region).
    if (loadShmAddon().ok) expect(await slotsAllFreed()).toBe(0);
  });

  it.each([
    { path: 'tcp', flags: ['--data-path', 'tcp', '--data-advertise', '127.0.0.1'], data: /^tcp:127\.0\.0\.1:\d+$/ },
    { path: 'off', flags: ['--data-path', 'off'], data: null },
  ])('batches over the data path $path: every task answered, by its own model', async ({ flags, data }) => {
    const d: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 4 },
        { model: 1, gpu: 0, pct: 40, batch: 4 },
      ],
    };
    await start(() => new FixedPolicy(d));
    startInss([
      'agent',
      '--scheduler',
      service.agentUrl,
      '--token',
      'tok',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'a1',
      '--log-level',
      'warn',
      ...flags,
    ]);
    await waitHttp200(`${base}/v2/health/ready`);
    // The scheduler knows where each worker's batches go (once the agent reports it ready with its socket).
    const workers = await until('workers with their data path', async () => {
      const ws = (await cluster(base)).workers;
      return ws.length === 2 &&
        ws.every((w) => w.state === 'ready' && (data === null ? w.data === null : data.test(w.data ?? '')))
        ? ws
        : null;
    });
    expect(workers).toHaveLength(2);
    const sent = await sendLoad(base, { resnet50: 20, mobilenet: 10 }, 4);
    expect(
      sent
        .filter((s) => s.status !== 200)
        .map((s) => s.body.reason)
        .filter((r) => r !== 'slo'),
    ).toEqual([]);
    const ok = sent.filter((x) => x.status === 200);
    expect(ok.length).toBeGreaterThan(0);
    for (const s of ok.slice(0, 20)) expect(Array.from(s.output!)).toEqual(Array.from(simForward(s.input, s.model)));
  });

  it('a model with replicas on two GPUs: both workers serve its one queue, every task is answered', async () => {
    // What inss emits when one GPU cannot carry a model (docs/inss.md): resnet50 on GPU 0 and GPU 1.
    const d: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 2 },
        { model: 0, gpu: 1, pct: 50, batch: 2 },
        { model: 1, gpu: 0, pct: 40, batch: 4 },
      ],
    };
    await start(() => new FixedPolicy(d));
    startInss([
      'agent',
      '--scheduler',
      service.agentUrl,
      '--token',
      'tok',
      '--simulate',
      'rtx2060s:2',
      '--agent-id',
      'a1',
      '--log-level',
      'warn',
    ]);
    await waitHttp200(`${base}/v2/health/ready`);
    const sent = await sendLoad(base, { resnet50: 40, mobilenet: 10 }, 6);
    expect(
      sent
        .filter((s) => s.status !== 200)
        .map((s) => s.body.reason)
        .filter((r) => r !== 'slo'),
    ).toEqual([]);
    for (const s of sent.filter((x) => x.status === 200).slice(0, 10))
      expect(Array.from(s.output!)).toEqual(Array.from(simForward(s.input, s.model)));
    const resnet = (await cluster(base)).workers.filter((w) => w.model === 'resnet50');
    expect(resnet.map((w) => w.gpu).sort()).toEqual([0, 1]);
    expect(resnet.every((w) => w.state === 'ready')).toBe(true);
    // Both took batches from the one queue (a worker that never ran a batch has no transport estimate).
    expect(resnet.every((w) => w.overheadMs > 0)).toBe(true);
  });

  it('SIGKILL of a worker: its tasks in flight get explicit errors, it restarts, no task is lost', async () => {
    const d: Deployment = {
      placements: [
        { model: 0, gpu: 0, pct: 50, batch: 8 },
        { model: 1, gpu: 0, pct: 50, batch: 8 },
      ],
    };
    await start(() => new FixedPolicy(d));
    startInss([
      'agent',
      '--scheduler',
      service.agentUrl,
      '--token',
      'tok',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'a1',
      '--log-level',
      'warn',
    ]);
    await waitHttp200(`${base}/v2/health/ready`);
    const load = sendLoad(base, { resnet50: 120, mobilenet: 20 }, 5);
    await new Promise((r) => setTimeout(r, 1500));
    type W = { workerId: string; model: string; busy: boolean; pid: number | null; state: string };
    const snapshot = () => (service.control.snapshot() as { workers: W[] }).workers;
    let victim: W | undefined;
    for (let i = 0; i < 5000 && !victim; i++) {
      victim = snapshot().find((w) => w.model === 'resnet50' && w.busy && w.pid !== null);
      if (!victim) await new Promise((r) => setTimeout(r, 1));
    }
    // On a loaded machine a batch may never be seen in flight; then the kill is between batches.
    victim ??= snapshot().find((w) => w.model === 'resnet50' && w.pid !== null)!;
    process.kill(victim.pid!, 'SIGKILL');
    const sent = await load;
    // A batch seen in flight may still finish before the signal lands, so how many tasks fail is
    // not asserted here (no test yet forces a batch to be lost with its worker); each failure must
    // name the worker.
    const failed = sent.filter((s) => s.body.reason === 'worker-failed');
    for (const f of failed) expect(f.body.error).toMatch(/worker w\d+ failed/);
    // Everything else is a result, an explicit SLO drop while the worker restarted, or (on a machine too
    // busy to read the bodies as fast as they come) an explicit refusal at admission: nothing unanswered.
    const admission = (x: Sent) => x.status === 503 && /^(server busy|too many connections)/.test(x.body.error ?? '');
    for (const s of sent.filter((x) => x.status !== 200 && !admission(x)))
      expect(['worker-failed', 'slo'], `${s.model}: ${s.status} ${JSON.stringify(s.body)}`).toContain(s.body.reason);
    const killed = victim;
    const back = await until('the restarted worker', () =>
      Promise.resolve(
        snapshot().find((w) => w.workerId === killed.workerId && w.state === 'ready' && w.pid !== killed.pid),
      ),
    );
    expect(back.pid).not.toBe(killed.pid);
    // The killed worker's batches held slots of the shared-memory region: freed with their tasks.
    if (loadShmAddon().ok) {
      expect(await metric('inss_direct_samples_total{path="shm"}')).toBeGreaterThan(0);
      expect(await slotsAllFreed()).toBe(0);
    }
  });

  it('bad input gets a 4xx with a JSON error and creates no task', async () => {
    await start((c) => new PolicyRegistry().get('static-even').create(c, {}));
    startInss([
      'agent',
      '--scheduler',
      service.agentUrl,
      '--token',
      'tok',
      '--simulate',
      'rtx2060s:1',
      '--agent-id',
      'a1',
      '--log-level',
      'warn',
    ]);
    await waitHttp200(`${base}/v2/health/ready`);
    const postJson = async (
      path: string,
      body: string | Buffer,
      headers: Record<string, string> = { 'content-type': 'application/json' },
    ) => {
      const res = await fetch(`${base}${path}`, { method: 'POST', headers, body });
      return { status: res.status, body: (await res.json()) as { error: string } };
    };
    const good = binaryInferRequest(new Float32Array(3 * 224 * 224));
    const post = postJson;
    const cases: [string, Promise<{ status: number; body: { error: string } }>, number, RegExp][] = [
      ['malformed JSON', post('/v2/models/resnet50/infer', '{"inputs": ['), 400, /malformed JSON/],
      ['unknown model', post('/v2/models/nope/infer', '{}'), 404, /unknown model 'nope'/],
      [
        'wrong tensor name',
        post(
          '/v2/models/resnet50/infer',
          JSON.stringify({ inputs: [{ name: 'x', shape: [1, 3, 224, 224], datatype: 'FP32', data: [] }] }),
        ),
        400,
        /input 'x' is not an input/,
      ],
      [
        'wrong shape',
        post(
          '/v2/models/resnet50/infer',
          JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 224], datatype: 'FP32', data: [] }] }),
        ),
        400,
        /shape: expected \[k,3,224,224\] with 1 <= k <= 8/,
      ],
      [
        'wrong datatype',
        post(
          '/v2/models/resnet50/infer',
          JSON.stringify({ inputs: [{ name: 'input', shape: [1, 3, 224, 224], datatype: 'INT64', data: [] }] }),
        ),
        400,
        /datatype: expected FP32, got INT64/,
      ],
      [
        'body over the limit',
        postJson('/v2/models/resnet50/infer', Buffer.alloc(1_200_000, 32)),
        413,
        /larger than the limit/,
      ],
      [
        'binary header that lies',
        post('/v2/models/resnet50/infer', good.body, {
          ...good.headers,
          'inference-header-content-length': String(good.body.length + 10),
        }),
        400,
        /larger than the body/,
      ],
      [
        'binary sizes that do not add up',
        post('/v2/models/resnet50/infer', good.body.subarray(0, good.body.length - 4), good.headers),
        400,
        /binary data/,
      ],
    ];
    for (const [what, p, status, error] of cases) {
      const r = await p;
      expect(r.status, what).toBe(status);
      expect(r.body.error, what).toMatch(error);
    }
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).not.toMatch(/^inss_requests_total\{/m);
    const ok = await fetch(`${base}/v2/models/resnet50/infer`, {
      method: 'POST',
      headers: good.headers,
      body: good.body,
    });
    expect(ok.status).toBe(200);
  });
});
