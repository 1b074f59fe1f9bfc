// `inss up --worker torch` on a machine with Debian's PyTorch and no GPU: PyTorch workers on the CPU
// serve real model outputs end to end; an answer equals the same seeded model run directly in Python.
// Skipped where the interpreter has no torch (docs/worker-protocol.md says how to install it).
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { resolvePython, torchAvailable } from '../../agent/torchWorker.js';
import { binaryInferRequest, stopAll, startUp } from '../support/system.js';
import { writeScenario } from '../support/scenario.js';

const python = resolvePython();
const torchOk = await torchAvailable(python);
const dir = mkdtempSync(join(tmpdir(), 'inss-up-torch-'));
afterAll(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

const REFERENCE = `
import json, sys, torch, torchvision
torch.manual_seed(0)
model = torchvision.models.resnet18(weights=None).eval()
x = torch.frombuffer(bytearray(open(sys.argv[1], 'rb').read()), dtype=torch.float32).view(-1, 3, 224, 224)
with torch.inference_mode():
    y = model(x)
print(json.dumps(y.flatten().tolist()))
`;

describe.skipIf(!torchOk)(`inss up --worker torch (${python})`, () => {
  it('serves resnet18 outputs that equal the model run directly', async () => {
    const scenario = join(dir, 'torch.json');
    writeScenario(scenario, {
      name: 'torch-cpu',
      description: 'resnet18 on the CPU behind one simulated GPU',
      gpus: { rtx2060s: 1 },
      models: [{ name: 'resnet18', sloMs: 2000, ratePerS: 1 }],
      swapS: 3,
    });
    // A 2 s SLO: PyTorch on the CPU takes tens of ms a batch here, and a lone request waits for its
    // batch to fill for up to half the SLO (static-even). The reference is computed while inss starts.
    const x = new Float32Array(3 * 224 * 224).map((_, i) => Math.sin(i) * 0.5);
    const inputFile = join(dir, 'x.f32');
    writeFileSync(inputFile, Buffer.from(x.buffer));
    const reference = promisify(execFile)(python, ['-c', REFERENCE, inputFile], { maxBuffer: 16 << 20 });
    // Checking for torch imports it: slow on a busy machine.
    const { up, base } = await startUp(join(dir, 'state'), [
      '--worker',
      'torch',
      '--scenario',
      scenario,
      '--policy',
      'static-even',
    ]);
    const req = binaryInferRequest(x);
    const res = await fetch(`${base}/v2/models/resnet18/infer`, {
      method: 'POST',
      headers: req.headers,
      body: req.body,
    });
    expect(res.status).toBe(200);
    const buf = Buffer.from(await res.arrayBuffer());
    const bin = buf.subarray(Number(res.headers.get('inference-header-content-length')));
    const got = new Float32Array(bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length));
    const ref = await reference;
    const want = JSON.parse(ref.stdout) as number[];
    expect(got).toHaveLength(1000);
    let worst = 0;
    for (let i = 0; i < 1000; i++)
      worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / Math.max(1, Math.abs(want[i]!)));
    expect(worst).toBeLessThanOrEqual(1e-4);
    up.child.kill('SIGINT');
    expect((await up.exited).code).toBe(0);
  }, 180_000);
});
