// The ONNX Runtime worker (agent/onnxWorker.ts) as a real process on real onnxruntime: models written
// on the spot (test/support/onnxModel.ts), every answer held to onnxruntime's own output on the same
// file in this process (within 1e-4 of the reference's magnitude; integers and BOOL exactly), for
// batches of several sizes, over stdin and over the data socket; its start-up checks (flags, the model
// against --signature) and the batches it refuses. The protocol cases every worker passes are the
// worker contract suite's (worker-contract.test.ts).
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onnxAvailable, onnxWorkerCommand, onnxWorkerScript, type OnnxWorkerOptions } from '../../agent/onnxWorker.js';
import { resolvePython, torchAvailable } from '../../agent/torchWorker.js';
import type { WorkerIdentity } from '../../src/protocol/agent.js';
import { WORKER_ENV } from '../../src/protocol/worker.js';
import type { WorkerSignature } from '../../src/repository/types.js';
import { batchHeader, difference, reference, testBatch } from '../support/onnxData.js';
import { everyDatatype, oneInOneOut, type TestModel, twoInTwoOut, writeOnnxModel } from '../support/onnxModel.js';
import { DataClient, WorkerUnderTest, type WorkerMessage } from '../support/worker.js';

const onnxOk = await onnxAvailable();
const script = onnxWorkerScript();
const skip = !onnxOk
  ? 'onnxruntime-node does not load here'
  : existsSync(script)
    ? null
    : `${script} is not built (run npm run build)`;
const torchOk = await torchAvailable();

describe.skipIf(skip !== null)(skip === null ? 'the ONNX Runtime worker' : `skipped: ${skip}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'inss-onnx-'));
  const started: WorkerUnderTest[] = [];
  const clients: DataClient[] = [];
  function start(
    name: string,
    file: string,
    signature: WorkerSignature,
    more: Partial<OnnxWorkerOptions> = {},
    env: Record<string, string> = {},
  ): WorkerUnderTest {
    const { command, args } = onnxWorkerCommand({
      model: name,
      modelFile: file,
      signature,
      device: 'cpu',
      threads: 1,
      warmupBatches: 1,
      ...more,
    });
    const w = new WorkerUnderTest(command, args, env);
    started.push(w);
    return w;
  }
  afterAll(async () => {
    for (const c of clients) c.close();
    await Promise.all(started.map((w) => w.dispose()));
    rmSync(dir, { recursive: true, force: true });
  });

  /** Each output of the answer against onnxruntime's own, for the batch sent. */
  async function expectReference(
    m: WorkerMessage,
    inference: ort.InferenceSession,
    sig: WorkerSignature,
    size: number,
    b: ReturnType<typeof testBatch>,
  ): Promise<void> {
    expect(m.msg.type, JSON.stringify(m.msg)).toBe('result');
    if (m.msg.type !== 'result') return;
    const want = await reference(inference, sig, size, b);
    expect(m.msg.outputs.map((o) => o.name)).toEqual(sig.outputs.map((o) => o.name));
    let at = 0;
    m.msg.outputs.forEach((o, k) => {
      const spec = sig.outputs[k]!;
      expect(o).toEqual({
        name: spec.name,
        datatype: spec.datatype,
        shape: sig.batchDim ? [size, ...spec.shape] : spec.shape,
        byteLength: want[k]!.length,
      });
      const got = m.payload.subarray(at, at + o.byteLength);
      at += o.byteLength;
      expect(difference(spec.datatype, got, want[k]!), `output ${spec.name}`).toBeLessThanOrEqual(1e-4);
    });
    expect(at).toBe(m.payload.length);
  }

  describe.each([
    { label: 'two inputs, two outputs (FP32, INT64 -> FP32, BOOL)', make: twoInTwoOut },
    { label: 'one FP32 input, one FP32 output, an unnamed batch dim', make: oneInOneOut },
    { label: 'every datatype (FP16 and FP64 among them)', make: () => everyDatatype(true) },
    { label: 'every datatype, no batch dimension', make: () => everyDatatype(false) },
  ])('$label', ({ make }) => {
    const m: TestModel = make();
    const file = writeOnnxModel(
      join(dir, `${m.graph.inputs.map((i) => i.name).join('-')}-${m.signature.batchDim}.onnx`),
      m.graph,
    );
    const sig = m.signature;
    // 3000 samples make frames over 64 KB, read in pieces into a buffer of their own (moved to the inference
    // thread); the small ones come whole in one chunk (copied).
    const sizes = sig.batchDim ? [1, 3, 3000, 8, 2] : [1, 1];
    let inference: ort.InferenceSession;
    beforeAll(async () => {
      inference = await ort.InferenceSession.create(file);
    });

    it("answers batches of several sizes over stdin, each equal to onnxruntime's own", async () => {
      const w = start('m', file, sig, { maxBatch: 4096 });
      const ready = (await w.expect('ready', 60_000)).msg;
      expect(ready.device).toMatch(/^cpu \(onnxruntime \d/);
      const batches = sizes.map((size, i) => testBatch(sig, size, i + 1));
      // Sent back to back: read while the one before runs.
      batches.forEach((b, i) => w.send(batchHeader(`b${i}`, 'm', sizes[i]!, b), b.payload));
      for (const [i, b] of batches.entries()) {
        const got = await w.next();
        expect(got.msg).toMatchObject({ id: `b${i}` });
        await expectReference(got, inference, sig, sizes[i]!, b);
      }
    });

    it("answers over its data socket (the direct path) the same, and refuses another worker's batch", async () => {
      const identity: WorkerIdentity = { workerId: 'w1', model: 'm', gpu: 0, pct: 50, generation: 7 };
      const w = start(
        'm',
        file,
        sig,
        { maxBatch: 4096 },
        {
          [WORKER_ENV.listen]: 'tcp:127.0.0.1:0',
          [WORKER_ENV.secret]: 's3cret',
          [WORKER_ENV.identity]: JSON.stringify(identity),
        },
      );
      const address = (await w.expect('ready', 60_000)).msg.listen!;
      const c = new DataClient(address, 's3cret');
      clients.push(c);
      const batches = sizes.map((size, i) => testBatch(sig, size, i + 20));
      c.send(
        { ...batchHeader('other', 'm', sizes[0]!, batches[0]!), worker: { ...identity, gpu: 1 } },
        batches[0]!.payload,
      );
      batches.forEach((b, i) => c.send({ ...batchHeader(`d${i}`, 'm', sizes[i]!, b), worker: identity }, b.payload));
      expect((await c.next()).msg).toMatchObject({ type: 'error', id: 'other', reason: 'wrong-worker' });
      for (const [i, b] of batches.entries()) {
        const got = await c.next();
        expect(got.msg).toMatchObject({ id: `d${i}` });
        await expectReference(got, inference, sig, sizes[i]!, b);
      }
    });
  });

  describe('refuses batches that do not fit its signature, and goes on serving', () => {
    const m = twoInTwoOut();
    const file = writeOnnxModel(join(dir, 'refuse.onnx'), m.graph);
    it('another model, an input missing, a wrong datatype or shape, too few bytes, over --max-batch', async () => {
      const w = start('m', file, m.signature, { maxBatch: 4 });
      await w.expect('ready', 60_000);
      const b = testBatch(m.signature, 2, 5);
      const [k, x] = b.refs as [(typeof b.refs)[0], (typeof b.refs)[0]];
      const cases: [string, object, Buffer, RegExp][] = [
        ['other-model', batchHeader('other-model', 'n', 2, b), b.payload, /refused: this worker runs 'm'/],
        ['one-input', { ...batchHeader('one-input', 'm', 2, b), inputs: [k] }, b.parts[0]!, /expected 2 inputs, got 1/],
        ['swapped', { ...batchHeader('swapped', 'm', 2, b), inputs: [x, k] }, b.payload, /input 'x': expected 'k'/],
        [
          'datatype',
          { ...batchHeader('datatype', 'm', 2, b), inputs: [{ ...k, datatype: 'INT32', byteLength: 24 }, x] },
          Buffer.concat([Buffer.alloc(24), b.parts[1]!]),
          /input 'k': datatype INT32, expected INT64/,
        ],
        [
          'shape',
          { ...batchHeader('shape', 'm', 2, b), inputs: [k, { ...x, shape: [2, 5], byteLength: 40 }] },
          Buffer.concat([b.parts[0]!, Buffer.alloc(40)]),
          /input 'x': shape \[2,5\], expected \[2,4\]/,
        ],
        ['short', batchHeader('short', 'm', 2, b), b.payload.subarray(8), /payload bytes/],
        [
          'big',
          batchHeader('big', 'm', 5, testBatch(m.signature, 5, 1)),
          testBatch(m.signature, 5, 1).payload,
          /--max-batch 4/,
        ],
      ];
      for (const [, header, payload] of cases) w.send(header, payload);
      w.send(batchHeader('fine', 'm', 2, b), b.payload);
      for (const [id, , , why] of cases) {
        const { msg } = await w.expect('error');
        expect(msg.id).toBe(id);
        expect(msg.message).toMatch(why);
      }
      expect((await w.expect('result')).msg.id).toBe('fine');
    });
  });

  describe('checks its flags and the model against --signature at start: a fatal naming what differs', () => {
    const m = twoInTwoOut();
    const file = writeOnnxModel(join(dir, 'check.onnx'), m.graph);
    const sig = m.signature;
    const [k, x] = sig.inputs as [WorkerSignature['inputs'][0], WorkerSignature['inputs'][0]];
    it.each([
      [
        'a datatype',
        { ...sig, inputs: [{ ...k, datatype: 'INT32' }, x] },
        /input 'k': the model's element type is int64, the signature's INT32/,
      ],
      [
        'a dim',
        { ...sig, inputs: [k, { ...x, shape: [5] }] },
        /input 'x': dim 1 is 4 in the model's shape \[N,4\], 5 in/,
      ],
      [
        'a rank',
        { ...sig, outputs: [{ ...sig.outputs[0]!, shape: [2, 1] }, sig.outputs[1]!] },
        /output 'y': the model's shape \[N,2\] has rank 2/,
      ],
      [
        'a name',
        { ...sig, inputs: [k, { ...x, name: 'xx' }] },
        /input 'xx': the model has no input of that name \(it has x, k\)/,
      ],
      ['no batch dim', { ...sig, batchDim: false }, /input 'k': the model's shape \[N,3\] has rank 2/],
    ] as [string, WorkerSignature, RegExp][])('%s that differs', async (_what, bad, why) => {
      const w = start('m', file, bad);
      const { msg } = await w.expect('fatal', 60_000);
      expect(msg.message).toMatch(/does not fit --signature/);
      expect(msg.message).toMatch(why);
      expect((await w.exited).code).toBe(1);
    });

    it.each([
      ['--device gpu', ['--device', 'gpu'], /--device: expected cpu, cuda or auto, got 'gpu'/],
      ['--threads 0', ['--threads', '0'], /--threads: expected an integer in \[1, 1024\], got '0'/],
      ['a signature not JSON', ['--signature', '{'], /--signature: not JSON/],
      [
        'a signature field wrong',
        ['--signature', JSON.stringify({ ...sig, inputs: [{ ...k, shape: [-1] }] })],
        /--signature inputs\.0\.shape\.0: /,
      ],
      ['no model file', ['--model-file', join(dir, 'none.onnx')], /--model-file \S+none\.onnx: no such file/],
    ])('%s', async (_what, extra, why) => {
      const { command, args } = onnxWorkerCommand({ model: 'm', modelFile: file, signature: sig, device: 'cpu' });
      const w = new WorkerUnderTest(command, [...args, ...extra]);
      started.push(w);
      const { msg } = await w.expect('fatal', 60_000);
      expect(msg.message).toMatch(why);
      expect((await w.exited).code).toBe(1);
    });

    it('--device cuda without the CUDA execution provider is a fatal naming the install step', async () => {
      const w = start('m', file, sig, { device: 'cuda' });
      const m2 = (await w.next(60_000)).msg;
      // Where the provider is installed and a GPU is there, it serves: then `ready` names cuda.
      if (m2.type === 'ready') expect(m2.device).toMatch(/^cuda:0/);
      else
        expect(m2).toMatchObject({
          type: 'fatal',
          message: expect.stringMatching(/ONNXRUNTIME_NODE_INSTALL=cuda12|CUDA/) as unknown,
        });
    });

    it('--device auto falls back to the CPU with the reason in ready', async () => {
      const w = start('m', file, sig, { device: 'auto' });
      const { msg } = await w.expect('ready', 60_000);
      expect(msg.device).toMatch(/^cuda:0|^cpu \(.*not cuda: the CUDA execution provider/);
    });
  });

  describe.skipIf(!torchOk)(
    torchOk ? 'a torchvision model exported by torch.onnx.export' : `skipped: ${resolvePython()} has no torch`,
    () => {
      const file = join(dir, 'resnet18.onnx');
      const sig: WorkerSignature = {
        inputs: [{ name: 'images', datatype: 'FP32', shape: [3, 64, 64] }],
        outputs: [{ name: 'logits', datatype: 'FP32', shape: [1000] }],
        batchDim: true,
      };
      let inference: ort.InferenceSession;
      beforeAll(async () => {
        const py =
          'import sys, torch, torchvision\n' +
          'torch.manual_seed(0)\n' +
          'm = torchvision.models.resnet18().eval()\n' +
          "torch.onnx.export(m, torch.zeros(1, 3, 64, 64), sys.argv[1], input_names=['images'], " +
          "output_names=['logits'], dynamic_axes={'images': {0: 'batch'}, 'logits': {0: 'batch'}}, opset_version=13)\n";
        await promisify(execFile)(resolvePython(), ['-c', py, file], { timeout: 170_000 });
        inference = await ort.InferenceSession.create(file);
      }, 180_000);

      it("serves resnet18 (random weights, dynamic batch axis): answers equal onnxruntime's own", async () => {
        const w = start('resnet18', file, sig, { threads: 2 });
        await w.expect('ready', 120_000);
        for (const [i, size] of [1, 3].entries()) {
          const b = testBatch(sig, size, 40 + i);
          w.send(batchHeader(`r${i}`, 'resnet18', size, b), b.payload);
          await expectReference(await w.next(60_000), inference, sig, size, b);
        }
      });
    },
  );
});
