// The real-GPU path of `inss up --worker torch`, on this machine through stand-ins that behave as
// nvidia-smi and nvidia-cuda-mps-control do (test/support/bin/): the agent finds the GPU, starts an
// MPS daemon for it with inss's own directories, runs PyTorch workers as its clients (on the CPU here,
// the worker's `auto` device), and when the MPS server fails it kills that GPU's workers, restarts the
// daemon and the workers, and serves again. Skipped where the interpreter has no torch.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { torchAvailable } from '../../agent/torchWorker.js';
import { REPO_ROOT } from '../support/paths.js';
import { binaryInferRequest, startInss, stopAll, waitFor, waitHttp200 } from '../support/system.js';
import { writeScenario } from '../support/scenario.js';

const torchOk = await torchAvailable();
const dir = mkdtempSync(join(tmpdir(), 'inss-gpu-agent-'));
afterAll(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

type W = { workerId: string; model: string; state: string; pid: number | null };

describe('inss agent on a (stand-in) GPU server', () => {
  it('refuses --pooled-gpu serial: real GPUs run under MPS, so they pool as overlap', async () => {
    const bin = join(REPO_ROOT, 'test', 'support', 'bin');
    const agent = startInss(
      [
        'agent',
        '--scheduler',
        'ws://127.0.0.1:9',
        '--token',
        't',
        '--worker',
        'torch',
        '--pooled-gpu',
        'serial',
        '--state-dir',
        join(dir, 'refused'),
        '--log-level',
        'warn',
      ],
      {
        INSS_NVIDIA_SMI: join(bin, 'fake-nvidia-smi'),
        FAKE_SMI_FIXTURE: 'rtx2060s.csv',
        INSS_MPS_CONTROL: join(bin, 'fake-nvidia-cuda-mps-control'),
      },
    );
    const exit = await agent.exited;
    expect(exit.code).toBe(2);
    expect(agent.stderr).toMatch(
      /--pooled-gpu serial: only for simulated GPUs; real GPUs run under an MPS server, so they pool as overlap/,
    );
  });
});

describe.skipIf(!torchOk)('inss up --worker torch on a (stand-in) GPU server', () => {
  it('serves through MPS, and recovers from a failed MPS server by restarting the daemon and the workers', async () => {
    const scenario = join(dir, 'one.json');
    // A 2 s SLO: PyTorch on the CPU takes tens of ms a batch here, and a lone request waits for its batch to
    // fill for up to half the SLO (static-even), so a longer SLO only makes the test wait.
    writeScenario(scenario, {
      name: 'one-gpu',
      description: 'resnet18 on one RTX 2060 Super',
      gpus: { rtx2060s: 1 },
      models: [{ name: 'resnet18', sloMs: 2000, ratePerS: 1 }],
      swapS: 3,
    });
    const state = join(dir, 'state');
    const bin = join(REPO_ROOT, 'test', 'support', 'bin');
    const up = startInss(
      [
        'up',
        '--port',
        '0',
        '--worker',
        'torch',
        '--scenario',
        scenario,
        '--policy',
        'static-even',
        '--state-dir',
        state,
        '--log-level',
        'warn',
      ],
      {
        INSS_NVIDIA_SMI: join(bin, 'fake-nvidia-smi'),
        FAKE_SMI_FIXTURE: 'rtx2060s.csv',
        INSS_MPS_CONTROL: join(bin, 'fake-nvidia-cuda-mps-control'),
      },
    );
    const base = await waitFor(up, /endpoint (http:\/\/[^ ]+)\/v2/, 60_000);
    await waitHttp200(`${base}/v2/health/ready`, 90_000);
    const pipe = join(state, 'mps', 'gpu0', 'pipe');
    expect(existsSync(join(pipe, 'control'))).toBe(true);
    const req = binaryInferRequest(new Float32Array(3 * 224 * 224).fill(0.1));
    const infer = () =>
      fetch(`${base}/v2/models/resnet18/infer`, { method: 'POST', headers: req.headers, body: req.body });
    expect((await infer()).status).toBe(200);
    // Telemetry: the agent reads the GPU's utilisation and memory with nvidia-smi (the fixture: 3%, 12 MiB),
    // every second; wait for the first reading rather than a fixed time.
    let metrics = await (await fetch(`${base}/metrics`)).text();
    const since = Date.now();
    while (!/^inss_gpu_utilisation_percent\{/m.test(metrics) && Date.now() - since < 30_000) {
      await new Promise((r) => setTimeout(r, 100));
      metrics = await (await fetch(`${base}/metrics`)).text();
    }
    expect(metrics).toMatch(/^inss_gpu_utilisation_percent\{gpu="0"\} 3$/m);
    expect(metrics).toMatch(/^inss_gpu_memory_mb\{gpu="0",source="measured"\} 12$/m);
    const workers = async () => ((await (await fetch(`${base}/v2/inss/cluster`)).json()) as { workers: W[] }).workers;
    const before = (await workers()).find((w) => w.model === 'resnet18')!;

    // A client fault: the daemon logs a failed server.
    writeFileSync(join(pipe, 'fault'), '');
    const t0 = Date.now();
    let after: W | undefined;
    while (Date.now() - t0 < 60_000) {
      after = (await workers()).find(
        (w) => w.workerId === before.workerId && w.state === 'ready' && w.pid !== before.pid,
      );
      if (after) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(after, `worker never came back:\n${up.stderr.slice(-2000)}`).toBeDefined();
    expect(up.stderr).toMatch(/MPS failed on this GPU/);
    expect(existsSync(join(pipe, 'fault'))).toBe(false); // the daemon was restarted
    expect((await infer()).status).toBe(200);

    up.child.kill('SIGINT');
    expect((await up.exited).code).toBe(0);
    expect(existsSync(join(pipe, 'control'))).toBe(false); // the daemon was stopped
  }, 240_000);
});
