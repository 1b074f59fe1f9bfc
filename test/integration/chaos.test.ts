// Faults under load, with `inss scheduler` and `inss agent` as real processes and
// workers as their children: a worker SIGKILLed, and an agent SIGKILLed and started again (simulated
// workers); and an MPS server failure on a (stand-in) GPU server, with PyTorch workers as MPS clients
// (skipped where the interpreter has no torch). A scheduler SIGKILL and restart under load is
// test/integration/restart.test.ts.
// Each asserts that every request got one answer (no hang, no client error), that each accepted task
// was answered exactly once (the scheduler's count of answered tasks equals the answers the client
// got), that every result came from the model asked for, and that errors carry a reason; and it
// measures the recovery time (printed; docs/reliability.md has the figures).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { torchAvailable } from '../../agent/torchWorker.js';
import { REPO_ROOT } from '../support/paths.js';
import { type Running, startInss, stopAll, waitFor, waitHttp200 } from '../support/system.js';
import {
  checkAnswers,
  type Load,
  load,
  readAnswer,
  REQUEST,
  servesEveryModel,
  tasksAnswered,
  until,
  workers,
} from '../support/chaosLoad.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-chaos15-'));
const scenarioFile = join(dir, 'duo.json');
writeFileSync(
  scenarioFile,
  JSON.stringify({
    name: 'duo',
    description: 'two models on one simulated RTX 2060 Super',
    gpus: [{ profile: 'rtx2060s', count: 1 }],
    models: [
      { name: 'resnet50', sloMs: 300, arrival: { process: 'poisson' }, rate: { kind: 'constant', ratePerS: 40 } },
      { name: 'mobilenet', sloMs: 300, arrival: { process: 'poisson' }, rate: { kind: 'constant', ratePerS: 20 } },
    ],
    durationS: 10,
    epochS: 1,
    swapS: 1,
    monitorWindowS: 3,
    seed: 1,
  }),
);

afterAll(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// One cluster for both tests (starting it takes ~10 s on the loaded VM); they run in order.
describe('faults under load, every task answered exactly once', () => {
  let base: string;
  let agent: Running;
  const agentArgs = [
    'agent',
    '--scheduler',
    '',
    '--token',
    'chaos-token-0123456789',
    '--simulate',
    'rtx2060s:1',
    '--agent-id',
    'a1',
    '--log-level',
    'warn',
  ];

  beforeAll(async () => {
    const sched = startInss([
      'scheduler',
      '--port',
      '0',
      '--scenario',
      scenarioFile,
      '--policy',
      'static-even',
      '--state-dir',
      join(dir, 'state'),
      '--token',
      'chaos-token-0123456789',
      '--log-level',
      'warn',
    ]);
    base = await waitFor(sched, /endpoint (http:\/\/[^ ]+)\/v2/);
    agentArgs[2] = base.replace(/^http/, 'ws');
    agent = startInss(agentArgs);
    await waitHttp200(`${base}/v2/health/ready`, 40_000);
  });

  it('worker SIGKILL: a batch in flight gets worker-failed, the worker restarts, nothing else is lost', async () => {
    const before = await tasksAnswered(base);
    const t0 = performance.now();
    const sent = load(base, 3);
    await new Promise((r) => setTimeout(r, 1000));
    const victim = (await workers(base)).find((w) => w.model === 'resnet50' && w.pid !== null)!;
    const killedAt = performance.now();
    process.kill(victim.pid!, 'SIGKILL');
    await until('the restarted worker', async () =>
      (await workers(base)).find((w) => w.workerId === victim.workerId && w.state === 'ready' && w.pid !== victim.pid),
    );
    const readyMs = performance.now() - killedAt;
    const out = await sent;
    const byReason = await checkAnswers(base, out, ['worker-failed', 'slo'], before);
    await servesEveryModel(base);
    console.log(
      `chaos worker-SIGKILL: sent ${out.length}, answered 200 ${out.filter((o) => o.status === 200).length}, ` +
        `errors ${JSON.stringify(byReason)}, worker ready again after ${readyMs.toFixed(0)} ms; test ` +
        `${(performance.now() - t0).toFixed(0)} ms`,
    );
  });

  it(
    'agent SIGKILL and restart 0.5 s later: every task answered (errors with reasons), serving again after the ' +
      'restart',
    async () => {
      const before = await tasksAnswered(base);
      const t0 = performance.now();
      const sent = load(base, 3);
      await new Promise((r) => setTimeout(r, 1000));
      agent.child.kill('SIGKILL');
      await agent.exited;
      await new Promise((r) => setTimeout(r, 500));
      const restartedAt = performance.now();
      agent = startInss(agentArgs);
      await until('ready again', async () => (await fetch(`${base}/v2/health/ready`)).status === 200);
      const readyMs = performance.now() - restartedAt;
      const out = await sent;
      const byReason = await checkAnswers(base, out, ['worker-failed', 'slo', 'not-deployed'], before);
      await servesEveryModel(base);
      console.log(
        `chaos agent-SIGKILL+restart: sent ${out.length}, answered 200 ` +
          `${out.filter((o) => o.status === 200).length}, errors ${JSON.stringify(byReason)}, ready ` +
          `${readyMs.toFixed(0)} ms after the restart; test ${(performance.now() - t0).toFixed(0)} ms`,
      );
    },
  );
});

// An MPS server failure under load, on the real-GPU path of `inss agent --worker torch`: stand-ins that
// behave as nvidia-smi and nvidia-cuda-mps-control do (test/support/bin/; the daemon is a real
// process with its control socket), PyTorch workers as the daemon's clients (on the CPU here). A
// client fault (the stand-in's `fault` file) puts the GPU's MPS server in the failed state; the agent's
// supervisor kills that GPU's workers (their tasks in flight get worker-failed), restarts the daemon
// and the workers. Each model's output is its seeded random-init network's, taken before the fault.
const torchOk = await torchAvailable();
describe.skipIf(!torchOk)('an MPS server failure under load (stand-in daemon, PyTorch workers)', () => {
  it(
    'every task answered exactly once, from its own model; the GPU ' + 'serves again after the daemon restarts',
    async () => {
      writeFileSync(
        join(dir, 'mps-duo.json'),
        JSON.stringify({
          name: 'mps-duo',
          description: 'two models on one RTX 2060 Super (stand-in GPU, PyTorch on the CPU)',
          gpus: [{ profile: 'rtx2060s', count: 1 }],
          // A 2 s SLO: PyTorch on the CPU takes tens of ms a batch here, and the SLO bounds how long a batch
          // waits to fill (static-even: half the SLO), so a longer one only makes the test wait.
          models: ['resnet18', 'mobilenet'].map((name) => ({
            name,
            sloMs: 2000,
            arrival: { process: 'poisson' },
            rate: { kind: 'constant', ratePerS: 2 },
          })),
          durationS: 10,
          epochS: 1,
          swapS: 3,
          monitorWindowS: 3,
          seed: 1,
        }),
      );
      const bin = join(REPO_ROOT, 'test', 'support', 'bin');
      const env = {
        INSS_TOKEN: 'chaos-mps-token-0123456789',
        INSS_NVIDIA_SMI: join(bin, 'fake-nvidia-smi'),
        FAKE_SMI_FIXTURE: 'rtx2060s.csv',
        INSS_MPS_CONTROL: join(bin, 'fake-nvidia-cuda-mps-control'),
      };
      const sched = startInss(
        [
          'scheduler',
          '--port',
          '0',
          '--scenario',
          join(dir, 'mps-duo.json'),
          '--policy',
          'static-even',
          '--state-dir',
          join(dir, 'mps-sched'),
          '--log-level',
          'warn',
        ],
        env,
      );
      const base = await waitFor(sched, /endpoint (http:\/\/[^ ]+)\/v2/);
      const state = join(dir, 'mps-agent');
      const agent = startInss(
        [
          'agent',
          '--scheduler',
          base.replace(/^http/, 'ws'),
          '--worker',
          'torch',
          '--state-dir',
          state,
          '--agent-id',
          'gpu1',
          '--log-level',
          'warn',
        ],
        env,
      );
      await waitHttp200(`${base}/v2/health/ready`, 150_000);
      // Each model's answer for INPUT, before the fault; the two differ, so an answer names its network.
      const expected = new Map<string, Float32Array>();
      await Promise.all(
        ['resnet18', 'mobilenet'].map(async (model) => {
          const res = await fetch(`${base}/v2/models/${model}/infer`, {
            method: 'POST',
            headers: REQUEST.headers,
            body: REQUEST.body,
          });
          expect(res.status, await res.clone().text()).toBe(200);
          expected.set(
            model,
            readAnswer(Buffer.from(await res.arrayBuffer()), Number(res.headers.get('inference-header-content-length')))
              .output,
          );
        }),
      );
      expect(Array.from(expected.get('resnet18')!)).not.toEqual(Array.from(expected.get('mobilenet')!));
      // CPU kernels may sum in another order for another batch size: within 1e-3 of outputs of order 1.
      const spec: Load = { rates: { resnet18: 2, mobilenet: 2 }, expected, tolerance: 1e-3 };

      const before = await tasksAnswered(base);
      const t0 = performance.now();
      const sent = load(base, 6, spec);
      await new Promise((r) => setTimeout(r, 1500));
      const old = (await workers(base)).filter((w) => w.pid !== null);
      const faultAt = performance.now();
      writeFileSync(join(state, 'mps', 'gpu0', 'pipe', 'fault'), ''); // a client fault: the server fails
      await until(
        'every worker of the GPU restarted',
        async () => {
          const now = await workers(base);
          return old.every((o) =>
            now.some((w) => w.workerId === o.workerId && w.state === 'ready' && w.pid !== null && w.pid !== o.pid),
          );
        },
        150_000,
      );
      const readyMs = performance.now() - faultAt;
      const out = await sent;
      expect(agent.stderr).toMatch(/MPS failed on this GPU/);
      const byReason = await checkAnswers(base, out, ['worker-failed', 'slo', 'not-deployed'], before);
      await servesEveryModel(base, spec, 60_000);
      console.log(
        `chaos MPS-server-failure: sent ${out.length}, answered 200 ` +
          `${out.filter((o) => o.status === 200).length}, errors ${JSON.stringify(byReason)}, workers ready ` +
          `again ${readyMs.toFixed(0)} ms after the fault; test ${(performance.now() - t0).toFixed(0)} ms`,
      );
      // Its own limit: PyTorch workers start twice on the CPU, which on a loaded machine takes minutes;
      // its waits (150 s + 150 s + 60 s) fit inside this one.
    },
    600_000,
  );
});
