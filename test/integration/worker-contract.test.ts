// The worker contract suite: every implementation of the worker protocol (docs/worker-protocol.md)
// passes the same tests, so the simulated worker, the PyTorch worker and the ONNX Runtime worker cannot
// drift apart. Each starts real worker processes and talks frames to them over pipes, and over their
// data sockets (the direct path: a Unix socket and TCP, as the scheduler connects to them). Every
// implementation serves an image model of the zoo's signature (one FP32 input [3,224,224], one FP32
// output [1000]), so every case applies to each; batches of other signatures are the ONNX worker's own
// tests (onnx-worker.test.ts).
// Over 400 lines because it is one contract suite run against every worker implementation: its cases
// share each implementation's running worker and data-socket fixtures, and one file keeps them in step.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onnxAvailable, onnxWorkerCommand, onnxWorkerScript } from '../../agent/onnxWorker.js';
import { resolvePython, torchAvailable, torchWorkerCommand } from '../../agent/torchWorker.js';
import type { WorkerIdentity } from '../../src/protocol/agent.js';
import { type FromWorker, WORKER_ENV } from '../../src/protocol/worker.js';
import { loadShmAddon } from '../../src/protocol/shmMap.js';
import { REPO_ROOT } from '../support/paths.js';
import { decodeBatchInput } from '../../agent/decode.js';
import { modelSignature, type SampleEncoding, type TensorRef } from '../../src/protocol/tensor.js';
import { WORKER_PROTOCOL_VERSION } from '../../src/protocol/worker.js';
import { encodeJpeg, encodePng, syntheticPicture, uint8Chw } from '../../tools/loadgen/images.js';
import { imageClassifier, writeOnnxModel } from '../support/onnxModel.js';
import { batchMessage, DataClient, floats, imageBatch, WorkerUnderTest } from '../support/worker.js';

const IMAGE_SPEC = modelSignature(4 * 3 * 224 * 224, 4000).inputs[0]!;

/** A batch input of samples in their own encodings (TensorRef.samples) and its payload. */
function encodedBatch(samples: readonly { encoding: SampleEncoding; bytes: Buffer }[]): {
  ref: TensorRef;
  payload: Buffer;
} {
  const payload = Buffer.concat(samples.map((x) => x.bytes));
  const ref: TensorRef = {
    name: 'input',
    datatype: 'FP32',
    shape: [samples.length, 3, 224, 224],
    byteLength: payload.length,
    samples: samples.map((x) => ({ encoding: x.encoding, byteLength: x.bytes.length })),
  };
  return { ref, payload };
}

/** Largest difference between two rows of answers, relative to the reference row's largest magnitude. */
function relDiff(a: Float32Array, b: Float32Array): number {
  let d = 0;
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    d = Math.max(d, Math.abs(a[i]! - b[i]!));
    m = Math.max(m, Math.abs(b[i]!));
  }
  return d / m;
}

const SIM_WORKER = resolve(REPO_ROOT, 'dist', 'agent', 'simWorker.js');
const PROFILE = resolve(REPO_ROOT, 'profiles', 'rtx2060s.json');
const torchOk = await torchAvailable();
const onnxOk = await onnxAvailable();
const ONNX_WORKER = onnxWorkerScript();
// The ONNX worker's model, written on the spot (test/support/onnxModel.ts) the first time it is launched.
const onnxDir = mkdtempSync(join(tmpdir(), 'inss-contract-onnx-'));
const onnxImageModel = imageClassifier();
let onnxModelFile: string | null = null;
afterAll(() => rmSync(onnxDir, { recursive: true, force: true }));

interface Implementation {
  readonly name: string;
  /** Why it cannot run here, or null. */
  readonly skip: string | null;
  readonly model: string;
  readonly launch: () => { command: string; args: string[] };
  /** A batch size that keeps this worker busy for hundreds of ms, for the SIGTERM test. */
  readonly longBatch: number;
  /** Why it cannot map a shared-memory region here (it then says so in `attached` and takes bytes), or null. */
  readonly cannotMap: string | null;
}

const shmAddon = loadShmAddon();

/** resnet18 (seeded random weights) scripted and saved with torch.jit.save, made on the first launch. */
let scripted: { dir: string; file: string } | undefined;
function scriptedResnet18(): string {
  if (!scripted) {
    const dir = mkdtempSync(join(tmpdir(), 'inss-contract-ts-'));
    const file = join(dir, 'resnet18.pt');
    const make =
      'import sys, torch, torchvision; torch.manual_seed(4); ' +
      'torch.jit.save(torch.jit.script(torchvision.models.resnet18(weights=None).eval()), sys.argv[1])';
    execFileSync(resolvePython(), ['-c', make, file], { timeout: 110_000 });
    scripted = { dir, file };
  }
  return scripted.file;
}
afterAll(() => {
  if (scripted) rmSync(scripted.dir, { recursive: true, force: true });
});

const implementations: Implementation[] = [
  {
    name: 'simulated',
    skip: existsSync(SIM_WORKER) ? null : `${SIM_WORKER} is not built (run npm run build)`,
    model: 'resnet50',
    // A small share makes a batch of 32 take hundreds of simulated milliseconds.
    launch: () => ({
      command: process.execPath,
      args: [SIM_WORKER, '--model', 'resnet50', '--profile', PROFILE, '--pct', '10', '--seed', '1'],
    }),
    longBatch: 32,
    // The simulated worker maps through inss's addon, built at install where a C compiler is.
    cannotMap: shmAddon.ok ? null : `the shared-memory addon is ${shmAddon.why}`,
  },
  {
    // A TorchScript module (--model-file) with the zoo's image signature passes every case the torchvision
    // model does, its per-sample encodings and shared-memory slots included.
    name: 'torchscript',
    skip: torchOk ? null : `${resolvePython()} cannot import torch and torchvision (as for torch)`,
    model: 'resnet18-scripted',
    launch: () =>
      torchWorkerCommand({
        model: 'resnet18-scripted',
        modelFile: scriptedResnet18(),
        signature: { ...modelSignature(4 * 3 * 224 * 224, 4000), batchDim: true },
        device: 'cpu',
        warmupBatches: 1,
      }),
    longBatch: 4,
    cannotMap: null,
  },
  {
    name: 'torch',
    skip: torchOk
      ? null
      : `${resolvePython()} cannot import torch and torchvision (apt-get install python3-torch ` +
        `python3-torchvision, or set INSS_PYTHON)`,
    model: 'resnet18',
    launch: () => torchWorkerCommand({ model: 'resnet18', device: 'cpu', warmupBatches: 1 }),
    longBatch: 4,
    // Python's own mmap module.
    cannotMap: null,
  },
  {
    name: 'onnx',
    skip: !onnxOk
      ? 'onnxruntime-node does not load here'
      : existsSync(ONNX_WORKER)
        ? null
        : `${ONNX_WORKER} is not built (run npm run build)`,
    // An image model of the zoo's signature, so every case applies (test/support/onnxModel.ts imageClassifier).
    model: 'tinynet',
    launch: () => {
      onnxModelFile ??= writeOnnxModel(join(onnxDir, 'tinynet.onnx'), onnxImageModel.graph);
      return onnxWorkerCommand({
        model: 'tinynet',
        modelFile: onnxModelFile,
        signature: onnxImageModel.signature,
        device: 'cpu',
        threads: 1,
        warmupBatches: 1,
      });
    },
    // Its 3x3 convolution over 32 images takes a few hundred ms on one thread.
    longBatch: 32,
    // It maps through inss's addon, as the simulated worker does.
    cannotMap: shmAddon.ok ? null : `the shared-memory addon is ${shmAddon.why}`,
  },
];

describe.each(implementations)('worker contract: $name', (impl) => {
  const started: WorkerUnderTest[] = [];
  function start(env: Record<string, string> = {}): WorkerUnderTest {
    const { command, args } = impl.launch();
    const w = new WorkerUnderTest(command, args, env);
    started.push(w);
    return w;
  }
  const dir = mkdtempSync(join(tmpdir(), 'inss-contract-'));
  afterAll(async () => {
    await Promise.all(started.map((w) => w.dispose()));
    rmSync(dir, { recursive: true, force: true });
  });

  // The reason goes in a title built here: vitest shortens long `$name`-style interpolations.
  describe.skipIf(impl.skip !== null)(impl.skip === null ? `model ${impl.model}` : `skipped: ${impl.skip}`, () => {
    describe('one worker serving', () => {
      let worker: WorkerUnderTest;
      let ready: FromWorker | undefined;
      beforeAll(async () => {
        worker = start();
        ready = (await worker.next(60_000)).msg;
      });

      it('sends ready first, naming its model, pid and device', () => {
        expect(ready).toMatchObject({ v: 1, type: 'ready', model: impl.model, pid: worker.pid });
        if (ready?.type !== 'ready') return;
        expect(ready.warmupMs).toBeGreaterThanOrEqual(0);
        expect(ready.device.length).toBeGreaterThan(0);
      });

      it('answers a batch of 2 with one FP32 [2,1000] output of the right byte length', async () => {
        worker.sendBatch('two', 2);
        const { msg, payload } = await worker.expect('result');
        expect(msg.id).toBe('two');
        expect(msg.latencyMs).toBeGreaterThanOrEqual(0);
        expect(msg.outputs).toEqual([{ name: 'output', datatype: 'FP32', shape: [2, 1000], byteLength: 8000 }]);
        expect(payload.length).toBe(8000);
        expect(floats(payload).every(Number.isFinite)).toBe(true);
      });

      it('answers batches in the order sent, echoing their ids', async () => {
        const sizes = [1, 3, 1];
        sizes.forEach((size, i) => worker.sendBatch(`order-${i}`, size, i + 10));
        for (const [i, size] of sizes.entries()) {
          const { msg, payload } = await worker.expect('result');
          expect(msg.id).toBe(`order-${i}`);
          expect(msg.outputs[0]?.shape).toEqual([size, 1000]);
          expect(payload.length).toBe(size * 4000);
        }
      });

      it('answers a malformed batch with an error for its id and keeps serving', async () => {
        // Wrong shape (a consistent byte length for that shape).
        worker.send(
          batchMessage('bad-shape', impl.model, 1, { shape: [1, 3, 224, 225] }),
          Buffer.alloc(4 * 3 * 224 * 225),
        );
        // Right shape, payload and byteLength one image short.
        const short = imageBatch(1);
        worker.send(batchMessage('bad-bytes', impl.model, 2, { byteLength: short.length }), short);
        worker.sendBatch('after', 1);
        const shapeErr = await worker.expect('error');
        expect(shapeErr.msg.id).toBe('bad-shape');
        expect(shapeErr.msg.message).toMatch(/shape/);
        const bytesErr = await worker.expect('error');
        expect(bytesErr.msg.id).toBe('bad-bytes');
        expect(bytesErr.msg.message).toMatch(/bytes|byteLength/);
        const ok = await worker.expect('result');
        expect(ok.msg.id).toBe('after');
        expect(ok.msg.outputs[0]?.shape).toEqual([1, 1000]);
      });

      it(
        'decodes UINT8, PNG and JPEG samples beside FP32 ones: each answer is that of its image preprocessed by ' +
          'the one rule',
        async () => {
          const pic = syntheticPicture(224, 224, 21);
          const wide = syntheticPicture(320, 240, 22); // resized and cropped
          const { ref, payload } = encodedBatch([
            { encoding: 'FP32', bytes: imageBatch(1, 7) },
            { encoding: 'UINT8', bytes: uint8Chw(pic) },
            { encoding: 'PNG', bytes: encodePng(wide) },
            { encoding: 'JPEG', bytes: encodeJpeg(pic, 95) },
          ]);
          worker.send(
            { v: WORKER_PROTOCOL_VERSION, type: 'batch', id: 'encoded', model: impl.model, size: 4, inputs: [ref] },
            payload,
          );
          // The same four images as the FP32 tensors the rule makes of them (agent/decode.ts: jpeg-js, pngjs).
          const tensors = decodeBatchInput(ref, payload, 4, IMAGE_SPEC).x;
          worker.send(
            batchMessage('reference', impl.model, 4),
            Buffer.from(tensors.buffer, tensors.byteOffset, tensors.byteLength),
          );
          const got = await worker.expect('result');
          const want = await worker.expect('result');
          expect(got.msg.id).toBe('encoded');
          expect(got.msg.outputs).toEqual([{ name: 'output', datatype: 'FP32', shape: [4, 1000], byteLength: 16000 }]);
          const row = (p: Buffer, k: number) => floats(p).subarray(k * 1000, (k + 1) * 1000);
          for (const k of [0, 1, 2])
            expect(relDiff(row(got.payload, k), row(want.payload, k)), `sample ${k}`).toBeLessThan(1e-3);
          // JPEG decoders differ by a level or two of 255 (libjpeg-turbo in torchvision, jpeg-js here).
          expect(relDiff(row(got.payload, 3), row(want.payload, 3))).toBeLessThan(0.1);
        },
      );

      it(
        'answers a batch with an image that does not decode: that sample is ' + 'listed as failed, the others answered',
        async () => {
          const pic = syntheticPicture(224, 224, 23);
          const broken = Buffer.from(encodePng(pic));
          broken.fill(0x55, 40, 400); // the header reads; the image data does not
          const { ref, payload } = encodedBatch([
            { encoding: 'UINT8', bytes: uint8Chw(pic) },
            { encoding: 'PNG', bytes: broken },
          ]);
          worker.send(
            { v: WORKER_PROTOCOL_VERSION, type: 'batch', id: 'one-broken', model: impl.model, size: 2, inputs: [ref] },
            payload,
          );
          const { msg, payload: out } = await worker.expect('result');
          expect(msg.id).toBe('one-broken');
          expect(msg.outputs[0]).toMatchObject({
            shape: [2, 1000],
            byteLength: 8000,
            failed: [
              {
                index: 1,
                message: expect.stringMatching(/^input 'input': the PNG image could not be decoded: \S/) as unknown,
              },
            ],
          });
          expect(floats(out).subarray(0, 1000).every(Number.isFinite)).toBe(true);
        },
      );

      it('refuses a batch for another model with an error for its id, and keeps serving its own', async () => {
        worker.send(batchMessage('other-model', 'not-' + impl.model, 1), imageBatch(1));
        worker.sendBatch('own', 1);
        const err = await worker.expect('error');
        expect(err.msg.id).toBe('other-model');
        expect(err.msg.message).toMatch(new RegExp(`refused: this worker runs '${impl.model}'`));
        const ok = await worker.expect('result');
        expect(ok.msg.id).toBe('own');
      });
    });

    it('on SIGTERM, answers the batch in hand, then exits 0', async () => {
      const w = start();
      await w.expect('ready', 60_000);
      // `long` keeps the worker busy for hundreds of ms, in which it reads `inHand` (written right after
      // it; a worker reads the next frame while it computes). So when `long` is answered, `inHand` has
      // been received and is running, and SIGTERM lands then. (A big batch sent just before SIGTERM
      // could still be in the pipe, and a batch not yet received is not owed an answer.)
      w.sendBatch('long', impl.longBatch);
      w.sendBatch('inHand', 2);
      expect((await w.expect('result')).msg.id).toBe('long');
      w.signal('SIGTERM');
      const { msg, payload } = await w.expect('result');
      expect(msg.id).toBe('inHand');
      expect(payload.length).toBe(2 * 4000);
      expect(await w.exited).toEqual({ code: 0, signal: null });
    });

    it('when stdin closes, answers what it received, then exits 0', async () => {
      const w = start();
      await w.expect('ready', 60_000);
      w.sendBatch('last', 1);
      w.closeStdin();
      expect((await w.expect('result')).msg.id).toBe('last');
      expect(await w.exited).toEqual({ code: 0, signal: null });
    });

    describe.each([
      { kind: 'unix', listen: () => `unix:${join(dir, `${impl.name}.sock`)}` },
      { kind: 'tcp', listen: () => 'tcp:127.0.0.1:0' },
    ])('the data socket over $kind (the direct path)', ({ kind, listen }) => {
      const secret = 'c0ffee' + kind;
      const identity: WorkerIdentity = { workerId: 'w7', model: impl.model, gpu: 1, pct: 40, generation: 1234 };
      let worker: WorkerUnderTest;
      let address = '';
      const clients: DataClient[] = [];
      const client = (s: string | null, shm?: { path: string; bytes: number }) => {
        const c = new DataClient(address, s, shm);
        clients.push(c);
        return c;
      };
      const directBatch = (id: string, size: number, who: WorkerIdentity = identity) => ({
        ...batchMessage(id, impl.model, size),
        worker: who,
      });
      beforeAll(async () => {
        worker = start({
          [WORKER_ENV.listen]: listen(),
          [WORKER_ENV.secret]: secret,
          [WORKER_ENV.identity]: JSON.stringify(identity),
        });
        const ready = (await worker.expect('ready', 60_000)).msg;
        address = ready.listen ?? '';
      });
      afterAll(() => {
        for (const c of clients) c.close();
      });

      it('reports where it listens in ready', () => {
        expect(address).toMatch(kind === 'unix' ? /^unix:\// : /^tcp:127\.0\.0\.1:[1-9]\d*$/);
      });

      it(
        'answers batches on the connection they came on, in order, with ' + 'per-hop timestamps, and nothing on stdout',
        async () => {
          const c = client(secret);
          const inputs = [imageBatch(2, 5), imageBatch(1, 6)];
          // Sent back to back: the second is received while the first runs (pipelining).
          c.send(directBatch('d1', 2), inputs[0]);
          c.send(directBatch('d2', 1), inputs[1]);
          for (const [i, size] of [2, 1].entries()) {
            const { msg, payload } = await c.next();
            expect(msg).toMatchObject({ type: 'result', id: `d${i + 1}` });
            if (msg.type !== 'result') return;
            expect(msg.outputs).toEqual([
              { name: 'output', datatype: 'FP32', shape: [size, 1000], byteLength: size * 4000 },
            ]);
            expect(payload.length).toBe(size * 4000);
            expect(msg.answeredAtMs! - msg.receivedAtMs!).toBeGreaterThanOrEqual(0);
          }
          // stdin still works beside it, and its answer comes on stdout (the first message there since ready).
          worker.sendBatch('stdin-after', 1);
          expect((await worker.expect('result')).msg.id).toBe('stdin-after');
        },
      );

      it('refuses a batch naming another worker identity (wrong-worker), then serves its own', async () => {
        const c = client(secret);
        c.send(directBatch('other-gen', 1, { ...identity, generation: identity.generation + 1 }), imageBatch(1));
        c.send(directBatch('other-pct', 1, { ...identity, pct: 60 }), imageBatch(1));
        c.send(directBatch('mine', 1), imageBatch(1));
        for (const id of ['other-gen', 'other-pct']) {
          const { msg } = await c.next();
          expect(msg).toMatchObject({ type: 'error', id, reason: 'wrong-worker' });
          if (msg.type === 'error') expect(msg.message).toMatch(/refused: this worker is w7/);
        }
        expect((await c.next()).msg).toMatchObject({ type: 'result', id: 'mine' });
      });

      it(
        'closes a connection whose first frame is not an attach with ' + 'its secret, and answers nothing on it',
        async () => {
          const wrong = client('not-the-secret');
          wrong.send(directBatch('sneaky', 1), imageBatch(1));
          await wrong.closed;
          await expect(wrong.next(100)).rejects.toThrow(/closed/);
          const none = client(null);
          none.send(directBatch('sneaky2', 1), imageBatch(1));
          await none.closed;
          // Still serving the right one.
          const c = client(secret);
          c.send(directBatch('still', 1), imageBatch(1));
          expect((await c.next()).msg).toMatchObject({ type: 'result', id: 'still' });
        },
      );

      // Shared memory (docs/worker-protocol.md): only for a worker on the scheduler's host, over a Unix socket.
      describe.runIf(kind === 'unix')('shared memory named in attach', () => {
        const IMAGE = 4 * 3 * 224 * 224;
        // Three images in a region: one at a cache line, one at an odd offset (read by a copy), one unused.
        const images = [imageBatch(1, 31), imageBatch(1, 32), imageBatch(1, 33)];
        const offsets = [64, 2 * IMAGE + 129, 4 * IMAGE];
        const regionPath = join(dir, 'region.shm');
        const regionBytes = 5 * IMAGE + 4096;
        beforeAll(() => {
          const region = Buffer.alloc(regionBytes);
          images.forEach((im, k) => im.copy(region, offsets[k]));
          writeFileSync(regionPath, region, { mode: 0o600 });
        });

        // Where the worker cannot map at all (the simulated worker without the addon), the three
        // cases that read slots do not apply; the next one checks it says why and serves bytes.
        describe.skipIf(impl.cannotMap !== null)(
          impl.cannotMap === null ? 'reading slots' : `reading slots: skipped, ${impl.cannotMap}`,
          () => {
            it(
              'maps the region, answers attached, and reads samples given as slots in place, beside inline ones: ' +
                "the answers are the bytes' answers",
              async () => {
                const c = client(secret, { path: regionPath, bytes: regionBytes });
                expect((await c.next()).msg).toEqual({ v: 1, type: 'attached', shm: true });
                // Samples 0 and 2 in the region, sample 1 inline; then the same three images as bytes.
                c.send(
                  { ...directBatch('by-slot', 3), slots: [[offsets[0], IMAGE], null, [offsets[1], IMAGE]] },
                  images[2],
                );
                c.send(directBatch('by-bytes', 3), Buffer.concat([images[0]!, images[2]!, images[1]!]));
                const got = await c.next();
                const want = await c.next();
                expect(got.msg).toMatchObject({
                  type: 'result',
                  id: 'by-slot',
                  outputs: [{ shape: [3, 1000], byteLength: 12000 }],
                });
                expect(want.msg).toMatchObject({ type: 'result', id: 'by-bytes' });
                expect(relDiff(floats(got.payload), floats(want.payload))).toBeLessThan(1e-6);
              },
            );

            it(
              "reads encoded samples (UINT8) from slots beside inline ones (PNG): the answers are the bytes' " +
                'answers',
              async () => {
                const pic = syntheticPicture(224, 224, 41);
                const u8 = uint8Chw(pic);
                const png = encodePng(syntheticPicture(200, 180, 42));
                const at = 4 * IMAGE + 64; // a cache line past the third image
                const withU8 = join(dir, 'region-u8.shm');
                const bytes = at + u8.length + 4096;
                const region = Buffer.alloc(bytes);
                u8.copy(region, at);
                writeFileSync(withU8, region, { mode: 0o600 });
                const c = client(secret, { path: withU8, bytes });
                expect((await c.next()).msg).toMatchObject({ type: 'attached', shm: true });
                const { ref, payload } = encodedBatch([
                  { encoding: 'UINT8', bytes: u8 },
                  { encoding: 'PNG', bytes: png },
                ]);
                c.send(
                  {
                    v: WORKER_PROTOCOL_VERSION,
                    type: 'batch',
                    id: 'enc-slot',
                    model: impl.model,
                    size: 2,
                    inputs: [ref],
                    worker: identity,
                    slots: [[at, u8.length], null],
                  },
                  png,
                );
                c.send(
                  {
                    v: WORKER_PROTOCOL_VERSION,
                    type: 'batch',
                    id: 'enc-bytes',
                    model: impl.model,
                    size: 2,
                    inputs: [ref],
                    worker: identity,
                  },
                  payload,
                );
                const got = await c.next();
                const want = await c.next();
                expect(got.msg).toMatchObject({ type: 'result', id: 'enc-slot', outputs: [{ shape: [2, 1000] }] });
                expect(want.msg).toMatchObject({ type: 'result', id: 'enc-bytes' });
                expect(relDiff(floats(got.payload), floats(want.payload))).toBeLessThan(1e-6);
              },
            );

            it(
              'refuses a batch whose slot lies outside the region, or does not match its sample, and keeps ' +
                'serving',
              async () => {
                const c = client(secret, { path: regionPath, bytes: regionBytes });
                expect((await c.next()).msg).toMatchObject({ type: 'attached', shm: true });
                c.send({ ...directBatch('outside', 1), slots: [[regionBytes - 100, IMAGE]] });
                c.send({ ...directBatch('short', 1), slots: [[offsets[0], IMAGE - 4]] });
                c.send({ ...directBatch('fine', 1), slots: [[offsets[2], IMAGE]] });
                expect((await c.next()).msg).toMatchObject({ type: 'error', id: 'outside' });
                expect((await c.next()).msg).toMatchObject({ type: 'error', id: 'short' });
                expect((await c.next()).msg).toMatchObject({ type: 'result', id: 'fine' });
              },
            );
          },
        );

        it(
          'says it cannot map a region that is not there, and takes its ' + 'batches as bytes; slots there are refused',
          async () => {
            const c = client(secret, { path: join(dir, 'no-such-region.shm'), bytes: regionBytes });
            const m = (await c.next()).msg;
            expect(m).toMatchObject({ type: 'attached', shm: false });
            if (m.type === 'attached')
              expect(m.message).toMatch(impl.cannotMap === null ? /no-such-region|No such file/ : impl.cannotMap);
            c.send({ ...directBatch('slot-unmapped', 1), slots: [[offsets[0], IMAGE]] });
            c.send(directBatch('bytes', 1), images[0]);
            expect((await c.next()).msg).toMatchObject({ type: 'error', id: 'slot-unmapped' });
            expect((await c.next()).msg).toMatchObject({ type: 'result', id: 'bytes' });
          },
        );

        it(`with ${WORKER_ENV.shm}=off, does not map it, and serves bytes`, async () => {
          const off = start({
            [WORKER_ENV.listen]: `unix:${join(dir, `${impl.name}-off.sock`)}`,
            [WORKER_ENV.secret]: secret,
            [WORKER_ENV.identity]: JSON.stringify(identity),
            [WORKER_ENV.shm]: 'off',
          });
          const at = (await off.expect('ready', 60_000)).msg.listen ?? '';
          const c = new DataClient(at, secret, { path: regionPath, bytes: regionBytes });
          clients.push(c);
          expect((await c.next()).msg).toMatchObject({
            type: 'attached',
            shm: false,
            message: `${WORKER_ENV.shm}=off`,
          });
          c.send(directBatch('bytes-off', 1), images[1]);
          expect((await c.next()).msg).toMatchObject({ type: 'result', id: 'bytes-off' });
        });
      });
    });
  });
});
