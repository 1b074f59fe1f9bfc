// Triton's classification extension as a pure function (src/serving/classification.ts): the top N of
// each sample as `value:index[:label]`, Triton's shape rule, its `%f` value text, and its refusals.
import { describe, expect, it } from 'vitest';
import { classify, formatFixed6, serializeBytes } from '../../src/serving/classification.js';
import type { Datatype } from '../../src/protocol/tensor.js';

function tensor(
  datatype: Datatype,
  shape: number[],
  values: readonly (number | bigint)[],
): { datatype: Datatype; shape: number[]; data: Buffer } {
  const size = {
    FP32: 4,
    FP64: 8,
    INT8: 1,
    UINT8: 1,
    INT16: 2,
    UINT16: 2,
    INT32: 4,
    UINT32: 4,
    INT64: 8,
    UINT64: 8,
    FP16: 2,
    BOOL: 1,
  }[datatype];
  const data = Buffer.alloc(values.length * size);
  values.forEach((v, i) => {
    const o = i * size;
    if (datatype === 'FP32') data.writeFloatLE(Number(v), o);
    else if (datatype === 'FP64') data.writeDoubleLE(Number(v), o);
    else if (datatype === 'INT64') data.writeBigInt64LE(BigInt(v), o);
    else if (datatype === 'UINT64') data.writeBigUInt64LE(BigInt(v), o);
    else if (datatype === 'INT32') data.writeInt32LE(Number(v), o);
    else if (datatype === 'UINT8') data.writeUInt8(Number(v), o);
    else if (datatype === 'INT8') data.writeInt8(Number(v), o);
    else data.writeUInt16LE(Number(v), o);
  });
  return { datatype, shape, data };
}

/** The strings of a serialized BYTES tensor (4-byte little-endian length, then the bytes). */
function deserialize(b: Buffer): string[] {
  const out: string[] = [];
  for (let o = 0; o < b.length;) {
    const n = b.readUInt32LE(o);
    out.push(b.subarray(o + 4, o + 4 + n).toString('utf8'));
    o += 4 + n;
  }
  return out;
}

describe('classify', () => {
  const labels = ['apple', 'pickle', 'pear', 'plum'];
  const cases: {
    name: string;
    t: ReturnType<typeof tensor>;
    n: number;
    labels: string[] | null;
    batched: boolean;
    shape: number[];
    strings: string[];
  }[] = [
    // The protocol doc's example: output [1.1, 3.3, 0.5, 2.4], classification 2.
    {
      name: "the extension doc's example, no labels",
      t: tensor('FP32', [1, 4], [1.1, 3.3, 0.5, 2.4]),
      n: 2,
      labels: null,
      batched: true,
      shape: [1, 2],
      strings: ['3.300000:1', '2.400000:3'],
    },
    {
      name: 'with labels',
      t: tensor('FP32', [1, 4], [1.1, 3.3, 0.5, 2.4]),
      n: 2,
      labels,
      batched: true,
      shape: [1, 2],
      strings: ['3.300000:1:pickle', '2.400000:3:plum'],
    },
    {
      name: 'two samples, each its own top N',
      t: tensor('FP32', [2, 4], [1, 5, 10, 4, 9, 8, 7, 6]),
      n: 3,
      labels,
      batched: true,
      shape: [2, 3],
      strings: [
        '10.000000:2:pear',
        '5.000000:1:pickle',
        '4.000000:3:plum',
        '9.000000:0:apple',
        '8.000000:1:pickle',
        '7.000000:2:pear',
      ],
    },
    {
      name: 'a model without a batch dimension: shape [N]',
      t: tensor('FP32', [4], [1, 5, 10, 4]),
      n: 2,
      labels: null,
      batched: false,
      shape: [2],
      strings: ['10.000000:2', '5.000000:1'],
    },
    {
      name: 'labels shorter than the classes: no label beyond',
      t: tensor('FP32', [1, 4], [0, 0, 0, 1]),
      n: 2,
      labels: ['a', 'b'],
      batched: true,
      shape: [1, 2],
      strings: ['1.000000:3', '0.000000:0:a'],
    },
    {
      name: 'ties rank by lower index',
      t: tensor('FP32', [1, 4], [2, 7, 7, 7]),
      n: 3,
      labels: null,
      batched: true,
      shape: [1, 3],
      strings: ['7.000000:1', '7.000000:2', '7.000000:3'],
    },
    {
      name: 'NaN ranks last, infinities by value',
      t: tensor('FP32', [1, 4], [NaN, -Infinity, Infinity, 0]),
      n: 4,
      labels: null,
      batched: true,
      shape: [1, 4],
      strings: ['inf:2', '0.000000:3', '-inf:1', 'nan:0'],
    },
    {
      name: 'FP64',
      t: tensor('FP64', [1, 3], [0.1, 15.34623, -2]),
      n: 1,
      labels: null,
      batched: true,
      shape: [1, 1],
      strings: ['15.346230:1'],
    },
    {
      name: 'INT32 values as integers',
      t: tensor('INT32', [1, 3], [-5, 12, 3]),
      n: 2,
      labels: null,
      batched: true,
      shape: [1, 2],
      strings: ['12:1', '3:2'],
    },
    {
      name: 'UINT8 as numbers, not characters',
      t: tensor('UINT8', [1, 3], [65, 200, 7]),
      n: 1,
      labels: null,
      batched: true,
      shape: [1, 1],
      strings: ['200:1'],
    },
    {
      name: 'INT8 is signed',
      t: tensor('INT8', [1, 2], [-1, 1]),
      n: 2,
      labels: null,
      batched: true,
      shape: [1, 2],
      strings: ['1:1', '-1:0'],
    },
    {
      name: 'INT64 beyond 2^53, exact',
      t: tensor('INT64', [1, 2], [9007199254740993n, 9007199254740992n]),
      n: 2,
      labels: null,
      batched: true,
      shape: [1, 2],
      strings: ['9007199254740993:0', '9007199254740992:1'],
    },
    {
      name: 'UINT64 top of range',
      t: tensor('UINT64', [1, 2], [1n, 18446744073709551615n]),
      n: 1,
      labels: null,
      batched: true,
      shape: [1, 1],
      strings: ['18446744073709551615:1'],
    },
    {
      name: 'a sample of several dimensions is flattened',
      t: tensor('FP32', [1, 2, 2], [1, 2, 3, 4]),
      n: 2,
      labels: null,
      batched: true,
      shape: [1, 2],
      strings: ['4.000000:3', '3.000000:2'],
    },
    {
      name: 'an empty batch',
      t: tensor('FP32', [0, 4], []),
      n: 2,
      labels: null,
      batched: true,
      shape: [0, 2],
      strings: [],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const r = classify(c.t, c.n, c.labels, c.batched);
      expect(r.ok, r.ok ? '' : r.error).toBe(true);
      if (!r.ok) return;
      expect(r.tensor.datatype).toBe('BYTES');
      expect(r.tensor.shape).toEqual(c.shape);
      expect(r.tensor.strings).toEqual(c.strings);
      expect(deserialize(r.tensor.data)).toEqual(c.strings);
    });
  }

  const refusals: { name: string; t: ReturnType<typeof tensor>; n: number; error: string }[] = [
    {
      name: "FP16, with Triton's message",
      t: tensor('FP16', [1, 2], [0, 0]),
      n: 1,
      error: "class result not available for output due to unsupported type 'FP16'",
    },
    {
      name: 'BOOL',
      t: { datatype: 'BOOL', shape: [1, 2], data: Buffer.from([0, 1]) },
      n: 1,
      error: "class result not available for output due to unsupported type 'BOOL'",
    },
    {
      name: 'more classes than a sample has',
      t: tensor('FP32', [1, 4], [1, 2, 3, 4]),
      n: 5,
      error: 'classification: 5 classes asked, but each sample has 4',
    },
    {
      name: 'a count below 1',
      t: tensor('FP32', [1, 4], [1, 2, 3, 4]),
      n: 0,
      error: 'classification: expected an integer >= 1, got 0',
    },
    {
      name: 'bytes that do not fill the shape',
      t: { datatype: 'FP32', shape: [2, 4], data: Buffer.alloc(16) },
      n: 1,
      error: 'the output is 16 bytes, but shape [2,4] of FP32 is 32',
    },
  ];
  for (const c of refusals) {
    it(`refuses ${c.name}`, () => {
      expect(classify(c.t, c.n, null, true)).toEqual({ ok: false, error: c.error });
    });
  }
});

describe("formatFixed6 is C's %f (std::to_string) under glibc", () => {
  const cases: [number, string][] = [
    [15.346230506896973, '15.346231'],
    [Math.fround(15.34623), '15.346230'],
    [0, '0.000000'],
    [-0, '-0.000000'],
    [-1e-9, '-0.000000'],
    [0.5, '0.500000'],
    // Exact ties at the seventh decimal round to even, where toFixed would round up.
    [0.0078125, '0.007812'],
    [-0.0078125, '-0.007812'],
    [0.0234375, '0.023438'],
    [1e21, '1000000000000000000000.000000'],
    [Math.fround(1e30), '1000000015047466219876688855040.000000'],
    [Infinity, 'inf'],
    [-Infinity, '-inf'],
    [NaN, 'nan'],
  ];
  for (const [v, s] of cases) it(`${v} -> ${s}`, () => expect(formatFixed6(v)).toBe(s));
  it('a NaN with its sign bit set is -nan', () => {
    expect(formatFixed6(NaN, true)).toBe('-nan');
    const b = Buffer.from([0, 0, 0xc0, 0xff]); // x86's default NaN (0/0): sign bit set
    const r = classify({ datatype: 'FP32', shape: [1, 1], data: b }, 1, null, true);
    expect(r.ok && r.tensor.strings).toEqual(['-nan:0']);
  });
});

describe('serializeBytes', () => {
  it('writes each string as a 4-byte little-endian length and its UTF-8 bytes', () => {
    expect(serializeBytes(['ab', '', 'é'])).toEqual(
      Buffer.from([2, 0, 0, 0, 0x61, 0x62, 0, 0, 0, 0, 2, 0, 0, 0, 0xc3, 0xa9]),
    );
  });
});
