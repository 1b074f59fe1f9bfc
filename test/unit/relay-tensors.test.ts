// The agent's relay of a batch of several tensors (agent/workerProcess.ts, as agent/agent.ts uses it):
// the batch's TensorRefs and payload reach the worker unchanged, and the worker's result (several
// outputs of mixed datatypes, bytes one after another) comes back unchanged. The worker here is a
// small Node program speaking the frame format (docs/worker-protocol.md, "Framing"): it answers each
// batch with its inputs in reverse order, renamed, each tensor's bytes reversed.
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerProcess } from '../../agent/workerProcess.js';
import type { TensorRef } from '../../src/protocol/tensor.js';

const MIRROR = `
const frame = (h, p) => {
  const j = Buffer.from(JSON.stringify(h));
  const pre = Buffer.alloc(8);
  pre.writeUInt32BE(j.length, 0);
  pre.writeUInt32BE(p.length, 4);
  process.stdout.write(Buffer.concat([pre, j, p]));
};
frame({ v: 1, type: 'ready', model: 'mixed', pid: process.pid, warmupMs: 0, device: 'cpu' }, Buffer.alloc(0));
let buf = Buffer.alloc(0);
process.stdin.on('data', (d) => {
  buf = Buffer.concat([buf, d]);
  for (;;) {
    if (buf.length < 8) return;
    const h = buf.readUInt32BE(0), p = buf.readUInt32BE(4);
    if (buf.length < 8 + h + p) return;
    const m = JSON.parse(buf.subarray(8, 8 + h).toString());
    const payload = buf.subarray(8 + h, 8 + h + p);
    buf = buf.subarray(8 + h + p);
    const parts = [];
    let o = 0;
    for (const t of m.inputs) {
      parts.push(Buffer.from(payload.subarray(o, o + t.byteLength)).reverse());
      o += t.byteLength;
    }
    const outputs = m.inputs.map((t) => ({ ...t, name: 'out_' + t.name })).reverse();
    frame({ v: 1, type: 'result', id: m.id, latencyMs: 1, outputs }, Buffer.concat(parts.reverse()));
  }
});
process.stdin.on('end', () => process.exit(0));
`;

const procs: WorkerProcess[] = [];
afterEach(async () => {
  for (const p of procs.splice(0)) await p.stop(1000);
});

describe("the agent's relay of a batch of several tensors", () => {
  it('hands the worker every input and its bytes as sent, and brings back every output as answered', async () => {
    const w = new WorkerProcess({ command: process.execPath, args: ['-e', MIRROR], env: {} });
    procs.push(w);
    w.start();
    await w.ready;
    const x = Buffer.from(Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]).buffer);
    const n = Buffer.from(BigInt64Array.from([1n, -2n, 2n ** 60n, 4n, 5n, -(2n ** 62n)]).buffer);
    const b = Buffer.from([1, 0, 1, 1, 0, 0]);
    const inputs: TensorRef[] = [
      { name: 'x', datatype: 'FP32', shape: [2, 4], byteLength: x.length },
      { name: 'n', datatype: 'INT64', shape: [2, 3], byteLength: n.length },
      { name: 'b', datatype: 'BOOL', shape: [2, 3], byteLength: b.length },
    ];
    const o = await w.run('b1', 'mixed', 2, inputs, Buffer.concat([x, n, b]));
    if (o.kind !== 'result') throw new Error(`expected a result, got ${o.kind}: ${o.message}`);
    expect(o.outputs).toEqual([
      { name: 'out_b', datatype: 'BOOL', shape: [2, 3], byteLength: 6 },
      { name: 'out_n', datatype: 'INT64', shape: [2, 3], byteLength: 48 },
      { name: 'out_x', datatype: 'FP32', shape: [2, 4], byteLength: 32 },
    ]);
    const rev = (d: Buffer) => Buffer.from(d).reverse();
    expect(o.payload.equals(Buffer.concat([rev(b), rev(n), rev(x)]))).toBe(true);
  });
});
