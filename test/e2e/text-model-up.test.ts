// A text classifier served for real: `inss up --model-repository DIR` with a TorchScript model whose
// inputs are token ids and an attention mask of variable length (INT64, Triton's dims [-1];
// tools/textmodel/text_classifier.py, scripted here with /usr/bin/python3's torch) on the CPU behind a
// simulated GPU. Requests of different lengths, sent at once over HTTP (JSON and binary) and gRPC so
// that the dispatcher batches them (padded to each batch's longest), are answered as torch answers each
// sequence run alone, within 1e-4; a request whose shape the configuration does not allow gets a 400
// naming the input; the configuration as loaded keeps dims [-1] and the declared cost. Skipped where
// the interpreter has no torch.
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolvePython, torchAvailable } from '../../agent/torchWorker.js';
import { inferenceService } from '../../scheduler/grpcProto.js';
import { binaryInferBody } from '../../tools/loadgen/binary.js';
import { REPO_ROOT } from '../support/paths.js';
import { stopAll, startUp } from '../support/system.js';

const run = promisify(execFile);
const python = resolvePython();
const torchOk = await torchAvailable(python);
const SCRIPT = join(REPO_ROOT, 'tools', 'textmodel', 'text_classifier.py');

/** Token ids of `length` in 1..999 (0 is the pad id), seeded by `seed`. */
function sequence(length: number, seed: number): number[] {
  return Array.from({ length }, (_, i) => 1 + ((seed * 7919 + i * 104729) % 999));
}

/** Largest difference of `got` from `want`, relative to max(1, |want|). */
function worst(got: readonly number[], want: readonly number[]): number {
  expect(got.length).toBe(want.length);
  return Math.max(...got.map((v, i) => Math.abs(v - want[i]!) / Math.max(1, Math.abs(want[i]!))));
}

describe.skipIf(!torchOk)(
  `inss up --model-repository: a text classifier of variable length (${python}${torchOk ? '' : ': skipped, no torch'})`,
  () => {
    const dir = mkdtempSync(join(tmpdir(), 'inss-text-up-'));
    const repo = join(dir, 'models');
    const lengths = [3, 17, 64, 5, 120, 1, 33, 9, 250, 12, 48, 2];
    const seqs = lengths.map((n, i) => sequence(n, i + 1));
    let want: number[][] = [];
    let base = '';
    let client: grpc.Client;

    beforeAll(async () => {
      mkdirSync(join(repo, 'text', '1'), { recursive: true });
      const config = await run(python, [SCRIPT, 'config', 'text']);
      writeFileSync(join(repo, 'text', 'config.pbtxt'), config.stdout);
      const file = join(repo, 'text', '1', 'model.pt');
      await run(python, [SCRIPT, 'save', file], { timeout: 110_000 });
      writeFileSync(join(dir, 'seqs.json'), JSON.stringify(seqs));
      const ref = await run(python, [SCRIPT, 'ref', file, join(dir, 'seqs.json')], { timeout: 110_000 });
      want = JSON.parse(ref.stdout) as number[][];
      const { address } = ({ base } = await startUp(
        join(dir, 'state'),
        ['--model-repository', repo, '--simulate', 'rtx2060s:1', '--epoch-ms', '500'],
        { readyPath: '/v2/models/text/ready', grpc: true },
      ));
      const Service = inferenceService();
      client = new Service(address, grpc.credentials.createInsecure());
    }, 240_000);

    afterAll(async () => {
      client?.close();
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    });

    const jsonInfer = async (ids: readonly number[]) => {
      const res = await fetch(`${base}/v2/models/text/infer`, {
        method: 'POST',
        body: JSON.stringify({
          inputs: [
            { name: 'input_ids', datatype: 'INT64', shape: [1, ids.length], data: ids },
            { name: 'attention_mask', datatype: 'INT64', shape: [1, ids.length], data: ids.map(() => 1) },
          ],
        }),
      });
      const body = (await res.json()) as { outputs: { name: string; shape: number[]; data: number[] }[] };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.outputs[0]).toMatchObject({ name: 'logits', shape: [1, 4] });
      return body.outputs[0]!.data;
    };

    const binaryInfer = async (ids: readonly number[]) => {
      const bytes = Buffer.from(BigInt64Array.from(ids.map(BigInt)).buffer);
      const ones = Buffer.from(BigInt64Array.from(ids.map(() => 1n)).buffer);
      const r = binaryInferBody(
        {
          inputs: [
            {
              name: 'input_ids',
              datatype: 'INT64',
              shape: [1, ids.length],
              parameters: { binary_data_size: 8 * ids.length },
            },
            {
              name: 'attention_mask',
              datatype: 'INT64',
              shape: [1, ids.length],
              parameters: { binary_data_size: 8 * ids.length },
            },
          ],
          outputs: [{ name: 'logits', parameters: { binary_data: true } }],
        },
        [bytes, ones],
      );
      const res = await fetch(`${base}/v2/models/text/infer`, { method: 'POST', headers: r.headers, body: r.body });
      const body = Buffer.from(await res.arrayBuffer());
      expect(res.status, body.toString('utf8', 0, 300)).toBe(200);
      const at = Number(res.headers.get('inference-header-content-length'));
      return Array.from(new Float32Array(body.buffer.slice(body.byteOffset + at, body.byteOffset + at + 16)));
    };

    const grpcInfer = (ids: readonly number[]): Promise<number[]> =>
      new Promise((resolve, reject) => {
        const c = client as unknown as Record<
          string,
          (r: object, cb: (e: grpc.ServiceError | null, v?: Record<string, unknown>) => void) => void
        >;
        const req = {
          model_name: 'text',
          inputs: [
            { name: 'input_ids', datatype: 'INT64', shape: [1, ids.length], contents: { int64_contents: ids } },
            {
              name: 'attention_mask',
              datatype: 'INT64',
              shape: [1, ids.length],
              contents: { int64_contents: ids.map(() => 1) },
            },
          ],
        };
        c['ModelInfer']!.call(client, req, (e, v) => {
          if (e) return reject(e);
          const raw = (v!['raw_output_contents'] as Buffer[])[0]!;
          resolve(Array.from(new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length))));
        });
      });

    /** Batches of more than one task so far (every task here is one sequence, each of its own length). */
    const sharedBatches = async () => {
      const metrics = await (await fetch(`${base}/metrics`)).text();
      const count = (re: RegExp) => Number(re.exec(metrics)?.[1] ?? 0);
      return (
        count(/^inss_batch_size_count\{model="text"\} (\d+)/m) -
        count(/^inss_batch_size_bucket\{le="1",model="text"\} (\d+)/m)
      );
    };

    it('answers sequences of different lengths sent at once over HTTP JSON as torch answers each alone', async () => {
      // AIMD raises the batch size from 1 each epoch its batches are full (docs/online-profiling.md):
      // rounds go on until batches of several lengths, padded to their longest, have run.
      for (let round = 0; round < 40; round++) {
        const got = await Promise.all(seqs.map((s) => jsonInfer(s)));
        got.forEach((g, i) => expect(worst(g, want[i]!), `length ${lengths[i]}`).toBeLessThanOrEqual(1e-4));
        if (round >= 2 && (await sharedBatches()) >= 3) break;
      }
      expect(await sharedBatches()).toBeGreaterThanOrEqual(3);
    });

    it('answers them over HTTP binary and gRPC, mixed, as torch does', async () => {
      const got = await Promise.all(seqs.map((s, i) => (i % 2 === 0 ? binaryInfer(s) : grpcInfer(s))));
      got.forEach((g, i) => expect(worst(g, want[i]!), `length ${lengths[i]}`).toBeLessThanOrEqual(1e-4));
    });

    it('answers a request of two sequences of one length, each row as torch alone', async () => {
      const a = sequence(20, 1);
      const b = sequence(20, 2);
      writeFileSync(join(dir, 'pair.json'), JSON.stringify([a, b]));
      const ref = await run(python, [SCRIPT, 'ref', join(repo, 'text', '1', 'model.pt'), join(dir, 'pair.json')]);
      const pairWant = JSON.parse(ref.stdout) as number[][];
      const res = await fetch(`${base}/v2/models/text/infer`, {
        method: 'POST',
        body: JSON.stringify({
          inputs: [
            { name: 'input_ids', datatype: 'INT64', shape: [2, 20], data: [...a, ...b] },
            { name: 'attention_mask', datatype: 'INT64', shape: [2, 20], data: new Array<number>(40).fill(1) },
          ],
        }),
      });
      const body = (await res.json()) as { outputs: { shape: number[]; data: number[] }[] };
      expect(res.status, JSON.stringify(body)).toBe(200);
      expect(body.outputs[0]!.shape).toEqual([2, 4]);
      expect(worst(body.outputs[0]!.data.slice(0, 4), pairWant[0]!)).toBeLessThanOrEqual(1e-4);
      expect(worst(body.outputs[0]!.data.slice(4), pairWant[1]!)).toBeLessThanOrEqual(1e-4);
    });

    it('refuses a length over max_variable_dim and a wrong rank with a 400 naming the input', async () => {
      const post = async (shape: number[], n: number) => {
        const res = await fetch(`${base}/v2/models/text/infer`, {
          method: 'POST',
          body: JSON.stringify({
            inputs: [
              { name: 'input_ids', datatype: 'INT64', shape, data: new Array<number>(n).fill(1) },
              { name: 'attention_mask', datatype: 'INT64', shape, data: new Array<number>(n).fill(1) },
            ],
          }),
        });
        return { status: res.status, text: await res.text() };
      };
      const long = await post([1, 513], 513);
      expect(long.status).toBe(400);
      expect(long.text).toMatch(/inputs\[0\]\.shape.*-1 in input 'input_ids': any length from 1 to 512/);
      const flat = await post([6], 6);
      expect(flat.status).toBe(400);
      expect(flat.text).toMatch(/inputs\[0\]\.shape: expected \[k,-1\]/);
    });

    it('reports dims [-1] and the cost parameters in the configuration as loaded', async () => {
      const config = (await (await fetch(`${base}/v2/models/text/config`)).json()) as Record<string, unknown>;
      expect(config['input']).toMatchObject([
        { name: 'input_ids', data_type: 'TYPE_INT64', dims: [-1] },
        { name: 'attention_mask', data_type: 'TYPE_INT64', dims: [-1] },
      ]);
      expect(config['parameters']).toMatchObject({
        max_variable_dim: { string_value: '512' },
        cost_classes: { string_value: '16:0.22 32:0.28 64:0.28 128:0.16 256:0.05 512:0.01' },
      });
      const meta = (await (await fetch(`${base}/v2/models/text`)).json()) as { inputs: { shape: number[] }[] };
      expect(meta.inputs[0]!.shape).toEqual([-1, -1]);
    });
  },
);
