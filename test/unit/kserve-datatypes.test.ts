// The KServe v2 codec (scheduler/kserve.ts): each datatype both ways (JSON values <-> little-endian
// bytes), FP16 conversion, and input no client can make it throw on.
import { describe, expect, it } from 'vitest';
import { decodeValues, encodeInferResponse, fromHalf, toHalf } from '../../scheduler/kserve.js';
import type { Datatype } from '../../src/protocol/tensor.js';
import { serializeBytes } from '../../src/serving/classification.js';
import {
  type Model,
  type Headers,
  f32,
  A_BYTES,
  json,
  binary,
  inA,
  inB,
  binA,
  parse,
  accepted,
  rejected,
} from '../support/kserve.js';

describe('parseInferRequest never throws', () => {
  it('on data nested deeper than the call stack', () => {
    const deep =
      `{"inputs":[{"name":"a","shape":[1,2,3],"datatype":"FP32","data":` +
      `${'['.repeat(200_000)}${']'.repeat(200_000)}},${JSON.stringify(inB())}]}`;
    expect(rejected(parse(Buffer.from(deep)))).toBe('inputs[0].data: expected 6 values, got 0');
  });

  it('on a deeply nested object inside the data', () => {
    const deep =
      `{"inputs":[{"name":"a","shape":[1,2,3],"datatype":"FP32","data":[1,2,3,4,5,` +
      `${'{"v":'.repeat(100_000)}1${'}'.repeat(100_000)}]},${JSON.stringify(inB())}]}`;
    expect(rejected(parse(Buffer.from(deep)))).toContain(
      "element 5 (row-major) of input 'a': expected a number, got an object",
    );
  });

  it('and keeps error texts short when the client sends long strings', () => {
    const long = 'x'.repeat(1_000_000);
    for (const body of [
      json({ inputs: [{ name: long, shape: [1], datatype: 'FP32', data: [1] }] }),
      json({ inputs: [inA({ datatype: long }), inB()] }),
      json({ inputs: [inA({ data: [long, 2, 3, 4, 5, 6] }), inB()] }),
    ]) {
      expect(rejected(parse(body)).length).toBeLessThan(300);
    }
  });

  it('on truncated, corrupted and mis-framed bodies', () => {
    // A fixed LCG: the same 600 variants every run.
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const good = binary(
      { id: 'x', inputs: [binA(), inB()], outputs: [{ name: 'z', parameters: { binary_data: true } }] },
      A_BYTES,
    );
    const headerLength = Number(good.headers.inferenceHeaderLength);
    for (let i = 0; i < 600; i++) {
      const body = Buffer.from(good.body);
      let headers: Headers = good.headers;
      switch (i % 3) {
        case 0:
          body[rand(body.length)] = rand(256);
          break;
        case 1:
          headers = { inferenceHeaderLength: String(rand(body.length + 10)) };
          break;
        case 2:
          headers = { inferenceHeaderLength: String(Math.min(headerLength, body.length)) };
          break;
      }
      const cut = i % 3 === 2 ? body.subarray(0, rand(body.length + 1)) : body;
      const r = parse(cut, headers);
      if (!r.ok) {
        expect(r.status).toBe(400);
        expect(r.error.length).toBeGreaterThan(0);
      } else {
        expect(r.request.inputs.map((x) => x.data.length)).toEqual([24, 16]);
      }
    }
  });
});

/** One value list per datatype, the bytes they must become, and the JSON values they come back as. */
const ROUND_TRIP: [Datatype, unknown[], Buffer, unknown[]][] = [
  ['BOOL', [true, false, false, true], Buffer.from([1, 0, 0, 1]), [true, false, false, true]],
  ['UINT8', [0, 1, 128, 255], Buffer.from(Uint8Array.from([0, 1, 128, 255]).buffer), [0, 1, 128, 255]],
  ['INT8', [-128, -1, 0, 127], Buffer.from(Int8Array.from([-128, -1, 0, 127]).buffer), [-128, -1, 0, 127]],
  ['UINT16', [0, 1, 40000, 65535], Buffer.from(Uint16Array.from([0, 1, 40000, 65535]).buffer), [0, 1, 40000, 65535]],
  [
    'INT16',
    [-32768, -1, 0, 32767],
    Buffer.from(Int16Array.from([-32768, -1, 0, 32767]).buffer),
    [-32768, -1, 0, 32767],
  ],
  [
    'UINT32',
    [0, 1, 3e9, 4294967295],
    Buffer.from(Uint32Array.from([0, 1, 3e9, 4294967295]).buffer),
    [0, 1, 3e9, 4294967295],
  ],
  [
    'INT32',
    [-2147483648, -1, 0, 2147483647],
    Buffer.from(Int32Array.from([-2147483648, -1, 0, 2147483647]).buffer),
    [-2147483648, -1, 0, 2147483647],
  ],
  [
    'UINT64',
    [0, 1, 2 ** 40, Number.MAX_SAFE_INTEGER],
    Buffer.from(BigUint64Array.from([0n, 1n, 2n ** 40n, 2n ** 53n - 1n]).buffer),
    [0, 1, 2 ** 40, Number.MAX_SAFE_INTEGER],
  ],
  [
    'INT64',
    [-Number.MAX_SAFE_INTEGER, -1, 0, Number.MAX_SAFE_INTEGER],
    Buffer.from(BigInt64Array.from([-(2n ** 53n) + 1n, -1n, 0n, 2n ** 53n - 1n]).buffer),
    [-Number.MAX_SAFE_INTEGER, -1, 0, Number.MAX_SAFE_INTEGER],
  ],
  [
    'FP16',
    [1, -2, 0.5, 65504],
    Buffer.from(Uint16Array.from([0x3c00, 0xc000, 0x3800, 0x7bff]).buffer),
    [1, -2, 0.5, 65504],
  ],
  [
    'FP16',
    [0.1, 2 ** -24, -65504, 1 / 3],
    Buffer.from(Uint16Array.from([0x2e66, 0x0001, 0xfbff, 0x3555]).buffer),
    [fromHalf(0x2e66), 2 ** -24, -65504, fromHalf(0x3555)],
  ],
  [
    'FP32',
    [0.1, -1.5, 3.4e38, 1e-45],
    Buffer.from(Float32Array.from([0.1, -1.5, 3.4e38, 1e-45]).buffer),
    [Math.fround(0.1), -1.5, Math.fround(3.4e38), Math.fround(1e-45)],
  ],
  [
    'FP64',
    [0.1, -1e308, 5e-324, 1 / 3],
    Buffer.from(Float64Array.from([0.1, -1e308, 5e-324, 1 / 3]).buffer),
    [0.1, -1e308, 5e-324, 1 / 3],
  ],
];

describe('each datatype both ways', () => {
  const modelOf = (datatype: Datatype): Model => ({
    name: 'one',
    signature: { inputs: [{ name: 'x', datatype, shape: [4] }], outputs: [{ name: 'y', datatype, shape: [4] }] },
  });

  it.each(ROUND_TRIP)('%s %j', (datatype, values, bytes, back) => {
    // JSON in -> the datatype's bytes.
    const fromJson = accepted(
      parse(json({ inputs: [{ name: 'x', shape: [1, 4], datatype, data: values }] }), {}, modelOf(datatype)),
    );
    expect(fromJson.inputs[0]!.data.equals(bytes)).toBe(true);
    // Binary in -> the same bytes.
    const bin = binary(
      { inputs: [{ name: 'x', shape: [1, 4], datatype, parameters: { binary_data_size: bytes.length } }] },
      bytes,
    );
    expect(accepted(parse(bin.body, bin.headers, modelOf(datatype))).inputs[0]!.data.equals(bytes)).toBe(true);
    // Bytes out as JSON -> the values; as binary -> the bytes unchanged.
    const asJson = encodeInferResponse({
      modelName: 'one',
      outputs: [{ name: 'y', datatype, shape: [1, 4], data: bytes, binary: false }],
    });
    expect((JSON.parse(asJson.body.toString()) as { outputs: { data: unknown[] }[] }).outputs[0]!.data).toEqual(back);
    expect(decodeValues(bytes, datatype)).toEqual(back);
    const asBinary = encodeInferResponse({
      modelName: 'one',
      outputs: [{ name: 'y', datatype, shape: [1, 4], data: bytes, binary: true }],
    });
    expect(asBinary.body.subarray(Number(asBinary.headers['inference-header-content-length'])).equals(bytes)).toBe(
      true,
    );
  });

  it('writes INT64 and UINT64 outputs beyond 2^53 digit for digit', () => {
    const r = encodeInferResponse({
      modelName: 'm',
      outputs: [
        {
          name: 'i',
          datatype: 'INT64',
          shape: [1, 2],
          data: Buffer.from(BigInt64Array.from([2n ** 63n - 1n, -(2n ** 63n)]).buffer),
          binary: false,
        },
        {
          name: 'u',
          datatype: 'UINT64',
          shape: [1, 1],
          data: Buffer.from(BigUint64Array.from([2n ** 64n - 1n]).buffer),
          binary: false,
        },
      ],
    });
    const text = r.body.toString();
    expect(text).toContain('"data":[9223372036854775807,-9223372036854775808]');
    expect(text).toContain('"data":[18446744073709551615]');
    expect(() => JSON.parse(text) as unknown).not.toThrow();
  });

  it("writes NaN and infinities of JSON outputs as Triton's writer does: bare NaN, Infinity, -Infinity", () => {
    const r = encodeInferResponse({
      modelName: 'm',
      outputs: [
        { name: 'y', datatype: 'FP32', shape: [1, 4], data: f32([NaN, Infinity, -Infinity, 1.5]), binary: false },
        {
          name: 'd',
          datatype: 'FP64',
          shape: [1, 2],
          data: Buffer.from(Float64Array.from([-Infinity, NaN]).buffer),
          binary: false,
        },
        {
          name: 'h',
          datatype: 'FP16',
          shape: [1, 2],
          data: Buffer.from(Uint16Array.from([0x7c00, 0x7e00]).buffer),
          binary: false,
        },
      ],
    });
    const text = r.body.toString();
    expect(text).toContain('"name":"y","datatype":"FP32","shape":[1,4],"data":[NaN,Infinity,-Infinity,1.5]');
    expect(text).toContain('"data":[-Infinity,NaN]');
    expect(text).toContain('"data":[Infinity,NaN]');
    // What Python's json.loads (tritonclient) accepts, read here by mapping the tokens to strings.
    const read = JSON.parse(text.replace(/(-?Infinity|NaN)/g, '"$1"')) as { outputs: { data: unknown[] }[] };
    expect(read.outputs[0]!.data.map(Number)).toEqual([NaN, Infinity, -Infinity, 1.5]);
  });

  it('writes a BYTES output (a classification) as strings in JSON, and as length-prefixed elements in binary', () => {
    const strings = ['15.346230:504:coffee mug', '4.000000:7:é'];
    const data = serializeBytes(strings);
    const asJson = encodeInferResponse({
      modelName: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], data, binary: false }],
    });
    expect(JSON.parse(asJson.body.toString())).toEqual({
      model_name: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], data: strings }],
    });
    const asBinary = encodeInferResponse({
      modelName: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], data, binary: true }],
    });
    const n = Number(asBinary.headers['inference-header-content-length']);
    expect(JSON.parse(asBinary.body.subarray(0, n).toString())).toEqual({
      model_name: 'm',
      outputs: [{ name: 'c', datatype: 'BYTES', shape: [1, 2], parameters: { binary_data_size: data.length } }],
    });
    expect(asBinary.body.subarray(n).equals(data)).toBe(true);
    // tritonclient's deserialize_bytes_tensor: a 4-byte little-endian length, then that many bytes, to the end.
    const back: string[] = [];
    for (let o = n; o < asBinary.body.length; o += 4 + asBinary.body.readUInt32LE(o))
      back.push(asBinary.body.subarray(o + 4, o + 4 + asBinary.body.readUInt32LE(o)).toString('utf8'));
    expect(back).toEqual(strings);
  });
});

describe('FP16 conversion', () => {
  const KNOWN: [number, number][] = [
    [0, 0x0000],
    [-0, 0x8000],
    [1, 0x3c00],
    [-2, 0xc000],
    [65504, 0x7bff],
    [65519.99, 0x7bff], // rounds down to the largest half
    [65520, 0x7c00], // the tie rounds to even: infinity
    [2 ** -14, 0x0400], // smallest normal
    [2 ** -24, 0x0001], // smallest subnormal
    [2 ** -25, 0x0000], // tie between 0 and 2^-24: even is 0
    [3 * 2 ** -25, 0x0002], // tie between 1 and 2 subnormal steps: even is 2
    [2 ** -14 - 2 ** -25, 0x0400], // subnormal rounding up into the smallest normal
    [2049, 0x6800], // tie: even is 2048
    [2051, 0x6802], // tie: even is 2052
    [1 + 2 ** -11 + 2 ** -40, 0x3c01], // just above a tie: up (a float32 detour would round twice and give 0x3c00)
    [0.1, 0x2e66],
    [Infinity, 0x7c00],
    [-Infinity, 0xfc00],
  ];
  it.each(KNOWN)('toHalf(%d) = %i', (v, bits) => {
    expect(toHalf(v)).toBe(bits);
  });

  it('NaN stays NaN', () => {
    expect(Number.isNaN(fromHalf(toHalf(NaN)))).toBe(true);
  });

  it('every half bit pattern survives fromHalf then toHalf', () => {
    for (let h = 0; h < 0x10000; h++) {
      const v = fromHalf(h);
      if (Number.isNaN(v)) expect((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0).toBe(true);
      else if (toHalf(v) !== h) expect.fail(`half 0x${h.toString(16)} -> ${v} -> 0x${toHalf(v).toString(16)}`);
    }
  });
});
