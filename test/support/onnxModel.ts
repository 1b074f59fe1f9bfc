// ONNX model files written on the spot for the ONNX Runtime worker's tests: a graph (inputs, outputs,
// nodes, initializers with real weights) encoded with protobufjs from the subset of onnx.proto in
// test/fixtures/onnx/onnx.proto. Nothing here runs a model: the tests compare the worker's answers
// with onnxruntime's own (an InferenceSession in the test process) on the same file.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import protobuf from 'protobufjs';
import type { Datatype, TensorSpec } from '../../src/protocol/tensor.js';
import type { WorkerSignature } from '../../src/repository/types.js';
import { REPO_ROOT } from './paths.js';

/** TensorProto.DataType of each protocol datatype (onnx.proto). */
export const ONNX_ELEM_TYPE: Readonly<Record<Datatype, number>> = {
  FP32: 1,
  UINT8: 2,
  INT8: 3,
  UINT16: 4,
  INT16: 5,
  INT32: 6,
  INT64: 7,
  BOOL: 9,
  FP16: 10,
  FP64: 11,
  UINT32: 12,
  UINT64: 13,
};

/** A graph input or output: a dim is a number, a symbolic name, or null (unknown). */
export interface OnnxValue {
  readonly name: string;
  readonly datatype: Datatype;
  readonly dims: readonly (number | string | null)[];
}

/** A weight: its little-endian bytes (raw_data). */
export interface OnnxInitializer {
  readonly name: string;
  readonly datatype: Datatype;
  readonly dims: readonly number[];
  readonly bytes: Uint8Array;
}

export interface OnnxNode {
  readonly op: string;
  readonly inputs: readonly string[];
  readonly outputs: readonly string[];
  /** Integer (INT), integer list (INTS) attributes. */
  readonly attrs?: Readonly<Record<string, number | readonly number[]>>;
}

export interface OnnxGraph {
  readonly inputs: readonly OnnxValue[];
  readonly outputs: readonly OnnxValue[];
  readonly nodes: readonly OnnxNode[];
  readonly initializers: readonly OnnxInitializer[];
}

let root: protobuf.Root | null = null;
function modelType(): protobuf.Type {
  root ??= protobuf.loadSync(resolve(REPO_ROOT, 'test', 'fixtures', 'onnx', 'onnx.proto'));
  return root.lookupType('onnx.ModelProto');
}

function valueInfo(v: OnnxValue): object {
  return {
    name: v.name,
    type: {
      tensorType: {
        elemType: ONNX_ELEM_TYPE[v.datatype],
        shape: {
          dim: v.dims.map((d) => (d === null ? {} : typeof d === 'number' ? { dimValue: d } : { dimParam: d })),
        },
      },
    },
  };
}

/** The bytes of an ONNX model (IR version 8, opset 17 of the default domain) of `g`. */
export function onnxModelBytes(g: OnnxGraph): Uint8Array {
  const type = modelType();
  const model = {
    irVersion: 8,
    opsetImport: [{ domain: '', version: 17 }],
    producerName: 'inss-tests',
    graph: {
      name: 'g',
      input: g.inputs.map(valueInfo),
      output: g.outputs.map(valueInfo),
      initializer: g.initializers.map((w) => ({
        name: w.name,
        dims: [...w.dims],
        dataType: ONNX_ELEM_TYPE[w.datatype],
        rawData: w.bytes,
      })),
      node: g.nodes.map((n, k) => ({
        name: `n${k}`,
        opType: n.op,
        input: [...n.inputs],
        output: [...n.outputs],
        attribute: Object.entries(n.attrs ?? {}).map(([name, v]) =>
          typeof v === 'number' ? { name, type: 2, i: v } : { name, type: 7, ints: [...v] },
        ),
      })),
    },
  };
  const problem = type.verify(model);
  if (problem) throw new Error(`onnx.ModelProto: ${problem}`);
  return type.encode(type.fromObject(model)).finish();
}

export function writeOnnxModel(path: string, g: OnnxGraph): string {
  writeFileSync(path, onnxModelBytes(g));
  return path;
}

/** `n` FP32 values in [-1, 1) from a 32-bit LCG seeded by `seed`, as little-endian bytes. */
export function randomFloats(n: number, seed: number): Uint8Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return new Uint8Array(out.buffer);
}

const spec = (name: string, datatype: Datatype, shape: number[], image?: boolean): TensorSpec => ({
  name,
  datatype,
  shape,
  ...(image ? { image } : {}),
});

/** A model file and the signature a repository gives it. */
export interface TestModel {
  readonly graph: OnnxGraph;
  readonly signature: WorkerSignature;
}

/**
 * Two inputs, two outputs, real weights: x FP32 [N,4], k INT64 [N,3] -> y = MatMul(x, W) + B (FP32
 * [N,2]) and z = Greater(Cast(k, FP32), c) (BOOL [N,3]). Inputs listed in the signature in the order
 * k, x (not the model's order: the worker matches them by name).
 */
export function twoInTwoOut(): TestModel {
  return {
    graph: {
      inputs: [
        { name: 'x', datatype: 'FP32', dims: ['N', 4] },
        { name: 'k', datatype: 'INT64', dims: ['N', 3] },
      ],
      outputs: [
        { name: 'y', datatype: 'FP32', dims: ['N', 2] },
        { name: 'z', datatype: 'BOOL', dims: ['N', 3] },
      ],
      initializers: [
        { name: 'W', datatype: 'FP32', dims: [4, 2], bytes: randomFloats(8, 11) },
        { name: 'B', datatype: 'FP32', dims: [2], bytes: randomFloats(2, 12) },
        { name: 'c', datatype: 'FP32', dims: [], bytes: new Uint8Array(new Float32Array([2.5]).buffer) },
      ],
      nodes: [
        { op: 'MatMul', inputs: ['x', 'W'], outputs: ['xw'] },
        { op: 'Add', inputs: ['xw', 'B'], outputs: ['y'] },
        { op: 'Cast', inputs: ['k'], outputs: ['kf'], attrs: { to: ONNX_ELEM_TYPE.FP32 } },
        { op: 'Greater', inputs: ['kf', 'c'], outputs: ['z'] },
      ],
    },
    signature: {
      inputs: [spec('k', 'INT64', [3]), spec('x', 'FP32', [4])],
      outputs: [spec('y', 'FP32', [2]), spec('z', 'BOOL', [3])],
      batchDim: true,
    },
  };
}

/** One FP32 input, one FP32 output: a = Relu(MatMul(v, W)) [N,5] of v [N,8]; the batch dim unnamed. */
export function oneInOneOut(): TestModel {
  return {
    graph: {
      inputs: [{ name: 'v', datatype: 'FP32', dims: [null, 8] }],
      outputs: [{ name: 'a', datatype: 'FP32', dims: [null, 5] }],
      initializers: [{ name: 'W', datatype: 'FP32', dims: [8, 5], bytes: randomFloats(40, 21) }],
      nodes: [
        { op: 'MatMul', inputs: ['v', 'W'], outputs: ['vw'] },
        { op: 'Relu', inputs: ['vw'], outputs: ['a'] },
      ],
    },
    signature: { inputs: [spec('v', 'FP32', [8])], outputs: [spec('a', 'FP32', [5])], batchDim: true },
  };
}

/** The datatypes Add takes (opset 14+); BOOL goes through Not. */
const NUMERIC: readonly Datatype[] = [
  'UINT8',
  'UINT16',
  'UINT32',
  'UINT64',
  'INT8',
  'INT16',
  'INT32',
  'INT64',
  'FP16',
  'FP32',
  'FP64',
];

/** The little-endian bytes of the value 3 (or true) in `datatype`. */
function three(datatype: Datatype): Uint8Array {
  if (datatype === 'BOOL') return new Uint8Array([1]);
  if (datatype === 'FP16') return new Uint8Array(new Uint16Array([0x4200]).buffer); // 3.0 in binary16
  const buf = Buffer.alloc(8);
  const w = {
    UINT8: () => buf.writeUInt8(3),
    UINT16: () => buf.writeUInt16LE(3),
    UINT32: () => buf.writeUInt32LE(3),
    UINT64: () => buf.writeBigUInt64LE(3n),
    INT8: () => buf.writeInt8(3),
    INT16: () => buf.writeInt16LE(3),
    INT32: () => buf.writeInt32LE(3),
    INT64: () => buf.writeBigInt64LE(3n),
    FP32: () => buf.writeFloatLE(3),
    FP64: () => buf.writeDoubleLE(3),
  }[datatype];
  return new Uint8Array(buf.subarray(0, w()));
}

/**
 * Every protocol datatype, one input and one output each ([N,2], named in_<type> and out_<type>):
 * numbers plus 3 (FP16 and FP64 among them), BOOL negated. No batch dimension when `batchDim` is false
 * (the inputs are exactly [2]).
 */
export function everyDatatype(batchDim = true): TestModel {
  const all: Datatype[] = [...NUMERIC, 'BOOL'];
  const dims = batchDim ? ['N', 2] : [2];
  return {
    graph: {
      inputs: all.map((d) => ({ name: `in_${d}`, datatype: d, dims })),
      outputs: all.map((d) => ({ name: `out_${d}`, datatype: d, dims })),
      initializers: NUMERIC.map((d) => ({ name: `three_${d}`, datatype: d, dims: [], bytes: three(d) })),
      nodes: all.map((d) =>
        d === 'BOOL'
          ? { op: 'Not', inputs: [`in_${d}`], outputs: [`out_${d}`] }
          : { op: 'Add', inputs: [`in_${d}`, `three_${d}`], outputs: [`out_${d}`] },
      ),
    },
    signature: {
      inputs: all.map((d) => spec(`in_${d}`, d, [2])),
      outputs: all.map((d) => spec(`out_${d}`, d, [2])),
      batchDim,
    },
  };
}

/**
 * The image model the worker contract suite serves: input "input" FP32 [N,3,224,224] (an image input)
 * -> Conv 3x3 to 16 channels -> Relu -> AveragePool 7x7 stride 7 -> Conv 1x1 to 3 channels -> Flatten
 * -> MatMul W [3072,1000] + B -> "output" FP32 [N,1000], the signature of the profiled zoo's models
 * (src/protocol/tensor.ts modelSignature). The 3x3 convolution (22 M multiply-adds a sample) makes a
 * batch of 32 take a few hundred ms on one CPU thread: the contract's SIGTERM case needs a long batch.
 */
export function imageClassifier(): TestModel {
  return {
    graph: {
      inputs: [{ name: 'input', datatype: 'FP32', dims: ['batch', 3, 224, 224] }],
      outputs: [{ name: 'output', datatype: 'FP32', dims: ['batch', 1000] }],
      initializers: [
        { name: 'K1', datatype: 'FP32', dims: [16, 3, 3, 3], bytes: randomFloats(16 * 27, 33) },
        { name: 'K2', datatype: 'FP32', dims: [3, 16, 1, 1], bytes: randomFloats(48, 34) },
        { name: 'W', datatype: 'FP32', dims: [3072, 1000], bytes: randomFloats(3072 * 1000, 31) },
        { name: 'B', datatype: 'FP32', dims: [1000], bytes: randomFloats(1000, 32) },
      ],
      nodes: [
        { op: 'Conv', inputs: ['input', 'K1'], outputs: ['c1'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
        { op: 'Relu', inputs: ['c1'], outputs: ['r1'] },
        { op: 'AveragePool', inputs: ['r1'], outputs: ['p'], attrs: { kernel_shape: [7, 7], strides: [7, 7] } },
        { op: 'Conv', inputs: ['p', 'K2'], outputs: ['c2'], attrs: { kernel_shape: [1, 1] } },
        { op: 'Flatten', inputs: ['c2'], outputs: ['f'], attrs: { axis: 1 } },
        { op: 'MatMul', inputs: ['f', 'W'], outputs: ['fw'] },
        { op: 'Add', inputs: ['fw', 'B'], outputs: ['output'] },
      ],
    },
    signature: {
      inputs: [spec('input', 'FP32', [3, 224, 224], true)],
      outputs: [spec('output', 'FP32', [1000])],
      batchDim: true,
    },
  };
}
