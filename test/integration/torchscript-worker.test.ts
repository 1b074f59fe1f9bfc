// The PyTorch worker serving TorchScript modules (--model-file, --signature): its answers equal what
// torch computes with the same module in Python, over stdin and over the data socket, for several inputs
// and outputs of every datatype torch has, a module without a batch dimension and a torchvision model at
// another input size; a batch or an output that differs from the signature is an `error` for that batch,
// and a bad signature or model file stops the worker at start with a `fatal` naming it. The modules are
// made here (torch.jit.script / torch.jit.trace, then torch.jit.save) by the Python below, which also
// writes each batch's input bytes and torch's own outputs for them. Skipped where the interpreter has no
// torch.
// Over 400 lines because the Python that makes the modules and torch's reference answers is part of the
// test: one file keeps each signature beside the module it describes and the cases that serve it.
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePython, torchAvailable, torchWorkerCommand } from '../../agent/torchWorker.js';
import type { WorkerIdentity } from '../../src/protocol/agent.js';
import { DATATYPE_BYTES, type Datatype, type TensorRef, type TensorSpec } from '../../src/protocol/tensor.js';
import { WORKER_ENV, WORKER_PROTOCOL_VERSION } from '../../src/protocol/worker.js';
import { decodeBatchInput } from '../../agent/decode.js';
import { encodePng, syntheticPicture, uint8Chw } from '../../tools/loadgen/images.js';
import type { WorkerSignature } from '../../src/repository/types.js';
import { DataClient, type WorkerMessage, WorkerUnderTest } from '../support/worker.js';

const run = promisify(execFile);
const python = resolvePython();
const torchOk = await torchAvailable(python);
/** Whether this torch has uint16/32/64 (torch 2.3 or newer; Debian's 1.13 has not). */
const torchUnsigned =
  torchOk && (await run(python, ['-c', 'import torch; print(hasattr(torch, "uint16"))'])).stdout.trim() === 'True';

const spec = (name: string, datatype: Datatype, shape: number[]): TensorSpec => ({ name, datatype, shape });
const KINDS: Datatype[] = ['BOOL', 'UINT8', 'INT8', 'INT16', 'INT32', 'INT64', 'FP16', 'FP32', 'FP64'];

/** The modules the Python below makes, each with the signature it is served by. */
const SIGNATURES: Record<string, WorkerSignature> = {
  // Two inputs, two outputs of mixed datatypes: (x @ W + b, k > 1).
  two: {
    inputs: [spec('x', 'FP32', [4]), spec('k', 'INT64', [3])],
    outputs: [spec('y', 'FP32', [5]), spec('big', 'BOOL', [3])],
    batchDim: true,
  },
  // resnet18 (seeded random weights) traced at 64 x 64; an image input (it also takes UINT8, JPEG and PNG).
  resnet: {
    inputs: [{ ...spec('pixels', 'FP32', [3, 64, 64]), image: true }],
    outputs: [spec('logits', 'FP32', [1000])],
    batchDim: true,
  },
  // max_batch_size 0: exactly [2, 3] and [3]; returns a dict in another order than the signature's.
  nobatch: {
    inputs: [spec('a', 'FP64', [2, 3]), spec('b', 'UINT8', [3])],
    outputs: [spec('total', 'INT32', [1]), spec('scaled', 'FP64', [2, 3])],
    batchDim: false,
  },
  // One input and one output of each datatype torch has: the input changed by a little arithmetic.
  kinds: {
    inputs: KINDS.map((d) => spec(`in_${d}`, d, [3])),
    outputs: KINDS.map((d) => spec(`out_${d}`, d, [3])),
    batchDim: true,
  },
};

/** The batches whose inputs and torch's outputs the Python writes (DIR/<id>.in, DIR/<id>.out). */
const BATCHES = [
  { id: 'two-3', model: 'two', size: 3 },
  { id: 'two-1', model: 'two', size: 1 },
  { id: 'two-socket', model: 'two', size: 4 },
  { id: 'resnet-2', model: 'resnet', size: 2 },
  { id: 'nobatch-1', model: 'nobatch', size: 1 },
  { id: 'kinds-2', model: 'kinds', size: 2 },
];

const MAKE = `
import json, sys
from typing import Dict, Tuple
import torch, torchvision

out, signatures, batches = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
DT = {"BOOL": torch.bool, "UINT8": torch.uint8, "INT8": torch.int8, "INT16": torch.int16, "INT32": torch.int32,
      "INT64": torch.int64, "FP16": torch.float16, "FP32": torch.float32, "FP64": torch.float64}


class Two(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.W = torch.nn.Parameter(torch.randn(4, 5))
        self.b = torch.nn.Parameter(torch.randn(5))

    def forward(self, x: torch.Tensor, k: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x @ self.W + self.b, k > 1


class NoBatch(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> Dict[str, torch.Tensor]:
        return {"scaled": a * b.to(torch.float64), "total": b.to(torch.int32).sum().to(torch.int32).reshape(1)}


class Kinds(torch.nn.Module):
    def forward(self, b: torch.Tensor, u8: torch.Tensor, i8: torch.Tensor, i16: torch.Tensor, i32: torch.Tensor,
                i64: torch.Tensor, f16: torch.Tensor, f32: torch.Tensor, f64: torch.Tensor):
        return (~b, u8 + 3, i8 - 2, i16 * 3, i32 * -7, i64 * 1000000007, f16 * 2, f32 / 3, f64 * 1e300)


class Wrong(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x[:, :3], x.to(torch.float64)


torch.manual_seed(5)
resnet = torchvision.models.resnet18(weights=None).eval()
modules = {
    "two": torch.jit.script(Two()),
    "resnet": torch.jit.trace(resnet, torch.zeros(1, 3, 64, 64)),
    "nobatch": torch.jit.script(NoBatch()),
    "kinds": torch.jit.script(Kinds()),
    "wrong": torch.jit.script(Wrong()),
}
for name, m in modules.items():
    torch.jit.save(m, f"{out}/{name}.pt")
open(f"{out}/garbage.pt", "wb").write(b"not a TorchScript archive")


def sample(d, shape):
    if d == "BOOL":
        return torch.randint(0, 2, shape).bool()
    if d.startswith("FP"):
        return (torch.randn(shape) * 3).to(DT[d])
    info = torch.iinfo(DT[d])
    return torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, shape, dtype=torch.int64).to(DT[d])


for b in batches:
    sig = signatures[b["model"]]
    m = torch.jit.load(f"{out}/{b['model']}.pt")
    lead = [b["size"]] if sig["batchDim"] else []
    xs = [sample(s["datatype"], lead + s["shape"]) for s in sig["inputs"]]
    with torch.inference_mode():
        y = m(*xs)
    names = [s["name"] for s in sig["outputs"]]
    ys = [y[n] for n in names] if isinstance(y, dict) else list(y) if isinstance(y, (tuple, list)) else [y]
    for path, ts in ((f"{out}/{b['id']}.in", xs), (f"{out}/{b['id']}.out", ys)):
        open(path, "wb").write(b"".join(t.contiguous().numpy().tobytes() for t in ts))
`;

/** The datatype's values in a little-endian buffer (INT64 as numbers: the test's values stay below 2^53). */
function values(b: Buffer, datatype: Datatype): number[] {
  const width = DATATYPE_BYTES[datatype];
  const read: Record<Datatype, (at: number) => number> = {
    BOOL: (at) => b.readUInt8(at),
    UINT8: (at) => b.readUInt8(at),
    UINT16: (at) => b.readUInt16LE(at),
    UINT32: (at) => b.readUInt32LE(at),
    UINT64: (at) => Number(b.readBigUInt64LE(at)),
    INT8: (at) => b.readInt8(at),
    INT16: (at) => b.readInt16LE(at),
    INT32: (at) => b.readInt32LE(at),
    INT64: (at) => Number(b.readBigInt64LE(at)),
    FP16: (at) => half(b.readUInt16LE(at)),
    FP32: (at) => b.readFloatLE(at),
    FP64: (at) => b.readDoubleLE(at),
  };
  return Array.from({ length: b.length / width }, (_, i) => read[datatype](i * width));
}

function half(u: number): number {
  const sign = u & 0x8000 ? -1 : 1;
  const e = (u >> 10) & 0x1f;
  const f = u & 0x3ff;
  if (e === 0) return sign * f * 2 ** -24;
  if (e === 31) return f ? NaN : sign * Infinity;
  return sign * (1 + f / 1024) * 2 ** (e - 15);
}

/** The batch tensors of a signature's inputs or outputs for `size` samples. */
function refs(sig: WorkerSignature, side: 'inputs' | 'outputs', size: number): TensorRef[] {
  return sig[side].map((s) => {
    const shape = sig.batchDim ? [size, ...s.shape] : [...s.shape];
    const byteLength = DATATYPE_BYTES[s.datatype] * shape.reduce((a, c) => a * c, 1);
    return { name: s.name, datatype: s.datatype, shape, byteLength };
  });
}

const batchFor = (id: string, model: string, size: number, inputs: TensorRef[]) => ({
  v: WORKER_PROTOCOL_VERSION,
  type: 'batch',
  id,
  model,
  size,
  inputs,
});

describe.skipIf(!torchOk)(
  `TorchScript in the torch worker (${python}${torchOk ? '' : ': skipped, cannot import torch and torchvision'})`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-torchscript-'));
    const started: WorkerUnderTest[] = [];
    const clients: DataClient[] = [];
    afterAll(async () => {
      for (const c of clients) c.close();
      await Promise.all(started.map((w) => w.dispose()));
      rmSync(dir, { recursive: true, force: true });
    });
    const launch = (model: string, sig: unknown, extra: Record<string, string> = {}, file = model): WorkerUnderTest => {
      const { command, args } = torchWorkerCommand({
        model,
        modelFile: join(dir, `${file}.pt`),
        signature: sig as WorkerSignature,
        device: 'cpu',
        warmupBatches: 1,
        maxBatch: 8,
        python,
      });
      const w = new WorkerUnderTest(command, args, extra);
      started.push(w);
      return w;
    };
    const input = (id: string) => readFileSync(join(dir, `${id}.in`));

    /** Every output equals torch's (floats within 1e-4 relative, the rest exactly). */
    function expectTorchOutputs(id: string, got: WorkerMessage, sig: WorkerSignature, size: number): void {
      const want = readFileSync(join(dir, `${id}.out`));
      expect(got.msg).toMatchObject({ type: 'result', id });
      if (got.msg.type !== 'result') return;
      const outs = refs(sig, 'outputs', size);
      expect(got.msg.outputs).toEqual(outs);
      expect(got.payload.length).toBe(want.length);
      let at = 0;
      for (const o of outs) {
        const g = values(got.payload.subarray(at, at + o.byteLength), o.datatype);
        const w = values(want.subarray(at, at + o.byteLength), o.datatype);
        at += o.byteLength;
        if (o.datatype.startsWith('FP')) {
          const worst = Math.max(...g.map((v, i) => Math.abs(v - w[i]!) / Math.max(1, Math.abs(w[i]!))));
          expect(worst, `output ${o.name}`).toBeLessThanOrEqual(1e-4);
        } else expect(g, `output ${o.name}`).toEqual(w);
      }
    }

    beforeAll(async () => {
      // A file, not -c: torch.jit.script reads the modules' source.
      const make = join(dir, 'make.py');
      writeFileSync(make, MAKE);
      await run(python, [make, dir, JSON.stringify(SIGNATURES), JSON.stringify(BATCHES)], { timeout: 110_000 });
    });

    describe('a two-input, two-output module (x FP32 [4], k INT64 [3]) -> (x @ W + b, k > 1)', () => {
      const sig = SIGNATURES['two']!;
      const identity: WorkerIdentity = { workerId: 'w3', model: 'two', gpu: 0, pct: 100, generation: 9 };
      let w: WorkerUnderTest;
      let address = '';
      beforeAll(async () => {
        w = launch('two', sig, {
          [WORKER_ENV.listen]: `unix:${join(dir, 'two.sock')}`,
          [WORKER_ENV.secret]: 's3cret',
          [WORKER_ENV.identity]: JSON.stringify(identity),
        });
        address = (await w.expect('ready', 60_000)).msg.listen ?? '';
      });

      it('answers batches over stdin with what torch computes', async () => {
        for (const [id, size] of [
          ['two-3', 3],
          ['two-1', 1],
        ] as const) {
          w.send(batchFor(id, 'two', size, refs(sig, 'inputs', size)), input(id));
          expectTorchOutputs(id, await w.expect('result'), sig, size);
        }
      });

      it('answers a batch over the data socket with what torch computes', async () => {
        const c = new DataClient(address, 's3cret');
        clients.push(c);
        c.send({ ...batchFor('two-socket', 'two', 4, refs(sig, 'inputs', 4)), worker: identity }, input('two-socket'));
        expectTorchOutputs('two-socket', await c.next(), sig, 4);
      });

      it('answers a wrong datatype, byte length, order or slots with an error naming it, keeps serving', async () => {
        const ok = refs(sig, 'inputs', 3);
        const bad: [string, TensorRef[], Buffer, RegExp][] = [
          [
            'dtype',
            [ok[0]!, { ...ok[1]!, datatype: 'INT32' }],
            input('two-3'),
            /^input 'k': datatype INT32, expected INT64$/,
          ],
          [
            'length',
            [ok[0]!, { ...ok[1]!, byteLength: 40 }],
            input('two-3'),
            /^input 'k': byteLength 40, expected 72$/,
          ],
          [
            'short',
            ok,
            input('two-3').subarray(8),
            /^the payload has 112 bytes, the inputs' byteLengths add up to 120$/,
          ],
          ['order', [ok[1]!, ok[0]!], input('two-3'), /^inputs\.0: 'k', expected 'x' \(the inputs in the signature/],
          ['missing', [ok[0]!], input('two-3'), /^expected 2 inputs \(x, k\), got 1$/],
          ['big', refs(sig, 'inputs', 9), Buffer.alloc(9 * 40), /^size: 9 is over this worker's --max-batch 8$/],
        ];
        for (const [id, inputs, payload] of bad) w.send(batchFor(id, 'two', inputs[0]!.shape[0]!, inputs), payload);
        w.send({ ...batchFor('slots', 'two', 3, ok), slots: [null, null, null] }, input('two-3'));
        w.send(batchFor('two-3', 'two', 3, ok), input('two-3'));
        for (const [id, , , message] of bad) {
          const { msg } = await w.expect('error');
          expect(msg.id).toBe(id);
          if (msg.type === 'error') expect(msg.message).toMatch(message);
        }
        const slots = (await w.expect('error')).msg;
        expect(slots).toMatchObject({
          id: 'slots',
          message: "slots: only for a model with one image input; 'two' has none",
        });
        expectTorchOutputs('two-3', await w.expect('result'), sig, 3);
      });
    });

    it('serves resnet18 traced at [3, 64, 64] with what torch computes, its images preprocessed at 64', async () => {
      const sig = SIGNATURES['resnet']!;
      const w = launch('resnet', sig);
      await w.expect('ready', 60_000);
      w.send(batchFor('resnet-2', 'resnet', 2, refs(sig, 'inputs', 2)), input('resnet-2'));
      expectTorchOutputs('resnet-2', await w.expect('result'), sig, 2);
      // An image of the zoo's size is not this model's.
      w.send(batchFor('zoo', 'resnet', 1, [{ ...refs(sig, 'inputs', 1)[0]!, shape: [1, 3, 224, 224] }]));
      expect((await w.expect('error')).msg).toMatchObject({
        message: "input 'pixels': shape [1,3,224,224], expected [1,3,64,64]",
      });
      // UINT8 pixels and a PNG to resize and crop: each answer is that of the FP32 tensor the one rule
      // (agent/decode.ts) makes of its image at side 64.
      const samples = [uint8Chw(syntheticPicture(64, 64, 3)), encodePng(syntheticPicture(90, 70, 4))];
      const payload = Buffer.concat(samples);
      const ref: TensorRef = {
        ...refs(sig, 'inputs', 2)[0]!,
        byteLength: payload.length,
        samples: [
          { encoding: 'UINT8', byteLength: samples[0]!.length },
          { encoding: 'PNG', byteLength: samples[1]!.length },
        ],
      };
      w.send(batchFor('encoded', 'resnet', 2, [ref]), payload);
      const x = decodeBatchInput(ref, payload, 2, sig.inputs[0]!).x;
      w.send(
        batchFor('as-fp32', 'resnet', 2, refs(sig, 'inputs', 2)),
        Buffer.from(x.buffer, x.byteOffset, x.byteLength),
      );
      const [got, want] = [await w.expect('result'), await w.expect('result')];
      expect([got.msg.id, want.msg.id]).toEqual(['encoded', 'as-fp32']);
      const [g, f] = [values(got.payload, 'FP32'), values(want.payload, 'FP32')];
      const worst = Math.max(...g.map((v, i) => Math.abs(v - f[i]!))) / Math.max(...f.map(Math.abs));
      expect(worst).toBeLessThan(1e-3);
    });

    it('serves a module without a batch dimension (shapes as the signature, size 1), outputs by dict key', async () => {
      const sig = SIGNATURES['nobatch']!;
      const w = launch('nobatch', sig);
      await w.expect('ready', 60_000);
      w.send(batchFor('two-rows', 'nobatch', 2, refs(sig, 'inputs', 1)), input('nobatch-1'));
      const withBatch = refs({ ...sig, batchDim: true }, 'inputs', 1);
      w.send(batchFor('batched', 'nobatch', 1, withBatch), input('nobatch-1'));
      w.send(batchFor('nobatch-1', 'nobatch', 1, refs(sig, 'inputs', 1)), input('nobatch-1'));
      expect((await w.expect('error')).msg).toMatchObject({
        message: "size: 2, expected 1: model 'nobatch' takes no batch dimension",
      });
      expect((await w.expect('error')).msg).toMatchObject({ message: "input 'a': shape [1,2,3], expected [2,3]" });
      expectTorchOutputs('nobatch-1', await w.expect('result'), sig, 1);
    });

    it('takes and answers every datatype torch has (BOOL .. FP64), bytes little-endian', async () => {
      const sig = SIGNATURES['kinds']!;
      const w = launch('kinds', sig);
      await w.expect('ready', 60_000);
      w.send(batchFor('kinds-2', 'kinds', 2, refs(sig, 'inputs', 2)), input('kinds-2'));
      expectTorchOutputs('kinds-2', await w.expect('result'), sig, 2);
    });

    it('answers a batch whose output differs from the signature (shape, dtype) with an error naming it', async () => {
      const x = [spec('x', 'FP32', [4])];
      const payload = Buffer.alloc(2 * 16);
      const cases = [
        {
          outputs: [spec('y', 'FP32', [4]), spec('z', 'FP64', [4])],
          message: "output 'y': shape [2,3], the signature says [2,4]",
        },
        {
          outputs: [spec('y', 'FP32', [3]), spec('z', 'FP32', [4])],
          message: "output 'z': dtype float64, the signature says FP32 (float32)",
        },
        { outputs: [spec('y', 'FP32', [3])], message: 'the model returned 2 outputs, the signature has 1 (y)' },
      ];
      // Started together: each start imports torch.
      const workers = cases.map((c) => launch('wrong', { inputs: x, outputs: c.outputs, batchDim: true }));
      for (const [i, c] of cases.entries()) {
        const w = workers[i]!;
        await w.expect('ready', 60_000);
        for (const id of ['first', 'again'])
          w.send(batchFor(id, 'wrong', 2, refs({ inputs: x, outputs: [], batchDim: true }, 'inputs', 2)), payload);
        for (const id of ['first', 'again'])
          expect((await w.expect('error')).msg).toEqual({ v: 1, type: 'error', id, message: c.message });
      }
    });

    describe('refuses at start, with a fatal naming the field', () => {
      const two = SIGNATURES['two']!;
      const cases: [string, () => WorkerUnderTest, RegExp][] = [
        [
          'a signature without batchDim',
          () => launch('two', { inputs: two.inputs, outputs: two.outputs }),
          /^--signature\.batchDim: expected true or false, got null$/,
        ],
        [
          'an output with a variable dim',
          () => launch('two', { ...two, outputs: [spec('y', 'FP32', [-1]), two.outputs[1]] }),
          /^--signature\.outputs\.0\.shape: expected an array of positive integers \(fixed dims\)/,
        ],
        [
          'an unknown datatype',
          () => launch('two', { ...two, outputs: [spec('y', 'BF16' as Datatype, [5])] }),
          /^--signature\.outputs\.0\.datatype: "BF16" is not one of BOOL, UINT8/,
        ],
        [
          'a file that is not TorchScript, with torch’s message',
          () => launch('two', two, {}, 'garbage'),
          /^--model-file \S+garbage\.pt: not a TorchScript model torch\.jit\.load can read: \S/,
        ],
        [
          'a module that cannot take the signature’s inputs (one input of its two)',
          () => launch('two', { ...two, inputs: [two.inputs[0]] }),
          /^--model-file \S+two\.pt cannot run on --signature's inputs \(zeros\): forward\(\) is missing .* 'k'/,
        ],
        [
          'a file that is not there',
          () => launch('two', two, {}, 'absent'),
          /^--model-file \S+absent\.pt: no such file$/,
        ],
      ];
      it.each(cases)('%s', async (_what, start, message) => {
        const w = start();
        const { msg } = await w.expect('fatal', 60_000);
        if (msg.type === 'fatal') expect(msg.message).toMatch(message);
        expect(await w.exited).toEqual({ code: 1, signal: null });
      });

      it.skipIf(torchUnsigned)(
        `UINT16 (also UINT32, UINT64): no torch dtype${torchUnsigned ? ' (skipped: this torch has them)' : ''}`,
        async () => {
          const w = launch('two', { ...two, inputs: [two.inputs[0], spec('k', 'UINT16', [3])] });
          const { msg } = await w.expect('fatal', 60_000);
          if (msg.type === 'fatal')
            expect(msg.message).toMatch(
              /^--signature\.inputs\.1\.datatype: UINT16 \('k'\) has no torch dtype in torch \d/,
            );
        },
      );
    });
  },
);
