// The PyTorch worker computes what the model computes: its answer to a fixed input equals running the
// same seeded torchvision model directly in Python. Skipped where the interpreter has no torch.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { resolvePython, torchAvailable, torchWorkerCommand } from '../../agent/torchWorker.js';
import { floats, WorkerUnderTest } from '../support/worker.js';

const run = promisify(execFile);
const python = resolvePython();
const torchOk = await torchAvailable(python);

// Builds the model as the worker does (seed, then the torchvision builder with no weights, eval mode,
// inference mode) and prints its outputs for the FP32 input in the file argv[1].
const REFERENCE = `
import json, sys, torch, torchvision
torch.manual_seed(int(sys.argv[2]))
model = torchvision.models.resnet18(weights=None).eval()
x = torch.frombuffer(bytearray(open(sys.argv[1], 'rb').read()), dtype=torch.float32).view(-1, 3, 224, 224)
with torch.inference_mode():
    y = model(x)
print(json.dumps(y.flatten().tolist()))
`;

describe.skipIf(!torchOk)(
  `torch worker (${python}${torchOk ? '' : ': skipped, cannot import torch and torchvision'})`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-torch-'));
    const workers: WorkerUnderTest[] = [];
    afterAll(async () => {
      await Promise.all(workers.map((w) => w.dispose()));
      rmSync(dir, { recursive: true, force: true });
    });

    it('answers a fixed seeded input with what the same resnet18 computes in Python (within 1e-4)', async () => {
      const seed = 3;
      const { command, args } = torchWorkerCommand({ model: 'resnet18', device: 'cpu', seed, python });
      const w = new WorkerUnderTest(command, args);
      workers.push(w);
      const ready = await w.expect('ready', 60_000);
      expect(ready.msg.device).toBe('cpu');

      const input = w.sendBatch('fixed', 2, 42);
      const inputFile = join(dir, 'input.f32');
      writeFileSync(inputFile, input);
      const [{ msg, payload }, reference] = await Promise.all([
        w.expect('result'),
        run(python, ['-c', REFERENCE, inputFile, String(seed)], { maxBuffer: 16 << 20 }),
      ]);

      expect(msg.outputs).toEqual([{ name: 'output', datatype: 'FP32', shape: [2, 1000], byteLength: 8000 }]);
      const got = floats(payload);
      const want = JSON.parse(reference.stdout) as number[];
      expect(want).toHaveLength(2000);
      let worst = 0;
      for (let i = 0; i < want.length; i++)
        worst = Math.max(worst, Math.abs(got[i]! - want[i]!) / Math.max(1, Math.abs(want[i]!)));
      expect(worst).toBeLessThanOrEqual(1e-4);
      // The two samples differ, so the comparison is not between constants.
      expect(got.subarray(0, 1000)).not.toEqual(got.subarray(1000));
    });
  },
);
