// The PyTorch worker serving a text classifier of variable length (tools/textmodel/text_classifier.py:
// token ids and an attention mask, INT64 [-1]): a batch of sequences of different lengths, laid out by
// the scheduler's own batchInputs (each sample padded with zeros to the batch's longest), is answered
// row by row as torch answers each sequence run alone, within 1e-4; a batch whose shape or byte length
// the signature does not allow is an `error` naming the input, and the worker keeps serving. Skipped
// where the interpreter has no torch.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePython, torchAvailable, torchWorkerCommand } from '../../agent/torchWorker.js';
import { batchInputs, taskShapes } from '../../scheduler/control/batchInputs.js';
import type { Task } from '../../scheduler/control/records.js';
import type { ServedModelConfig } from '../../scheduler/control/types.js';
import { WORKER_PROTOCOL_VERSION } from '../../src/protocol/worker.js';
import type { WorkerSignature } from '../../src/repository/types.js';
import { REPO_ROOT } from '../support/paths.js';
import { WorkerUnderTest } from '../support/worker.js';

const run = promisify(execFile);
const python = resolvePython();
const torchOk = await torchAvailable(python);
const SCRIPT = join(REPO_ROOT, 'tools', 'textmodel', 'text_classifier.py');

const SIGNATURE: WorkerSignature = {
  inputs: [
    { name: 'input_ids', datatype: 'INT64', shape: [-1] },
    { name: 'attention_mask', datatype: 'INT64', shape: [-1] },
  ],
  outputs: [{ name: 'logits', datatype: 'FP32', shape: [4] }],
  batchDim: true,
};
const MODEL: ServedModelConfig = { name: 'text', sloMs: 1000, signature: SIGNATURE, maxBatchSize: 8 };

const i64 = (xs: readonly number[]) => Buffer.from(BigInt64Array.from(xs.map(BigInt)).buffer);

/** A task of one sequence, as the control plane holds it (Control.submit). */
function task(seq: readonly number[]): Task {
  const input = [
    { name: 'input_ids', datatype: 'INT64' as const, shape: [1, seq.length], data: i64(seq) },
    { name: 'attention_mask', datatype: 'INT64' as const, shape: [1, seq.length], data: i64(seq.map(() => 1)) },
  ];
  return {
    model: 0,
    arrivalMs: 0,
    inputs: input.map((i) => i.data),
    ...taskShapes(MODEL, input),
    encoding: undefined,
    answer: () => {},
    submittedMs: 0,
    dispatchedMs: NaN,
  };
}

describe.skipIf(!torchOk)(
  `the PyTorch worker: a text classifier of variable length (${python}${torchOk ? '' : ': skipped, no torch'})`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-text-worker-'));
    const seqs = [[7, 8, 9, 10, 11], [3, 141, 59, 26, 535, 89, 79, 323, 846], [999], [4, 5]];
    let want: number[][] = [];
    let w: WorkerUnderTest;

    beforeAll(async () => {
      const file = join(dir, 'text.pt');
      await run(python, [SCRIPT, 'save', file], { timeout: 110_000 });
      writeFileSync(join(dir, 'seqs.json'), JSON.stringify(seqs));
      want = JSON.parse((await run(python, [SCRIPT, 'ref', file, join(dir, 'seqs.json')])).stdout) as number[][];
      const c = torchWorkerCommand({
        model: 'text',
        modelFile: file,
        signature: SIGNATURE,
        device: 'cpu',
        warmupBatches: 1,
        maxBatch: 8,
        python,
      });
      w = new WorkerUnderTest(c.command, c.args);
      await w.expect('ready', 60_000);
    }, 180_000);

    afterAll(async () => {
      await w?.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    const send = (id: string, inputs: object[], payload: Buffer) =>
      w.send({ v: WORKER_PROTOCOL_VERSION, type: 'batch', id, model: 'text', size: seqs.length, inputs }, payload);

    it('answers a padded batch of four lengths row by row as torch answers each alone', async () => {
      const b = batchInputs(MODEL, seqs.map(task));
      expect(b.inputs.map((i) => i.shape)).toEqual([
        [4, 9],
        [4, 9],
      ]);
      send('mixed', b.inputs, Buffer.concat(b.parts));
      const got = await w.expect('result');
      expect(got.msg).toMatchObject({ id: 'mixed', outputs: [{ name: 'logits', shape: [4, 4], byteLength: 64 }] });
      const rows = new Float32Array(got.payload.buffer.slice(got.payload.byteOffset, got.payload.byteOffset + 64));
      want.forEach((row, i) =>
        row.forEach((v, j) => expect(Math.abs(rows[i * 4 + j]! - v), `row ${i}`).toBeLessThanOrEqual(1e-4)),
      );
    });

    it('refuses a batch of the wrong rank or byte length, naming the input, and keeps serving', async () => {
      const b = batchInputs(MODEL, seqs.map(task));
      const payload = Buffer.concat(b.parts);
      send('rank', [{ ...b.inputs[0]!, shape: [4, 9, 1] }, b.inputs[1]!], payload);
      expect((await w.expect('error')).msg).toMatchObject({
        id: 'rank',
        message: "input 'input_ids': shape [4,9,1], expected [4,-1]",
      });
      send('bytes', [b.inputs[0]!, { ...b.inputs[1]!, byteLength: 280 }], payload);
      expect((await w.expect('error')).msg).toMatchObject({
        id: 'bytes',
        message: "input 'attention_mask': byteLength 280, expected 288",
      });
      send('again', b.inputs, payload);
      expect((await w.expect('result')).msg).toMatchObject({ id: 'again' });
    });
  },
);
