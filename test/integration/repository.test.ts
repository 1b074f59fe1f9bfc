// `inss scheduler --model-repository` as a real process over a repository written to disk: the loaded
// configuration, the metadata (platform, served version), the index with the models that failed and
// why, readiness, and a broken model refused with its field named while the others are served. The
// model files are any bytes: the scheduler does not read them (the workers do).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../support/cli.js';
import { writeScenario } from '../support/scenario.js';
import { startInss, stopAll, waitFor } from '../support/system.js';

const dir = mkdtempSync(join(tmpdir(), 'inss-repository-'));
const repo = join(dir, 'models');

function model(name: string, config: string, files: Record<string, string>): void {
  mkdirSync(join(repo, name), { recursive: true });
  writeFileSync(join(repo, name, 'config.pbtxt'), config);
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(join(repo, name, path, '..'), { recursive: true });
    writeFileSync(join(repo, name, path), bytes);
  }
}

model(
  'adder',
  `name: "adder"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { latest: { num_versions: 2 } }
input [ { name: "A" data_type: TYPE_INT32 dims: [ 4 ] }, { name: "B" data_type: TYPE_INT32 dims: [ 4 ] } ]
output [ { name: "SUM" data_type: TYPE_INT32 dims: [ 4 ] } ]
dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 500 }
parameters { key: "slo_ms" value: { string_value: "30" } }
`,
  { '1/model.onnx': 'v1', '2/model.onnx': 'v2', '3/model.onnx': 'v3', '01/model.onnx': 'ignored' },
);
model(
  'scorer',
  `backend: "pytorch"
default_model_filename: "net.pt"
input { name: "INPUT__0" data_type: TYPE_FP16 dims: [ 2, 3 ] }
output { name: "OUTPUT__0" data_type: TYPE_FP64 dims: [ 1 ] }
`,
  { '1/net.pt': 'torchscript' },
);
model(
  'broken',
  `platform: "onnxruntime_onnx"
max_batch_size: 4
input { name: "x" data_type: TYPE_FP32 dims: [ -1 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }
`,
  { '1/model.onnx': 'x' },
);
model(
  'nofile',
  `platform: "onnxruntime_onnx"
input { name: "x" data_type: TYPE_FP32 dims: [ 1 ] }
output { name: "y" data_type: TYPE_FP32 dims: [ 1 ] }
`,
  { '1/other.onnx': 'x' },
);

const scenarioFile = writeScenario(join(dir, 'mixed.json'), {
  name: 'mixed',
  gpus: { rtx2060s: 1 },
  models: [
    { name: 'resnet50', sloMs: 80, ratePerS: 10 },
    { name: 'adder', sloMs: 77, ratePerS: 5 },
    { name: 'scorer', sloMs: 45, ratePerS: 5 },
  ],
});

afterEach(stopAll);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function scheduler(extra: string[]): Promise<{ base: string; stderr: () => string }> {
  const s = startInss([
    'scheduler',
    '--port',
    '0',
    '--no-grpc',
    '--model-repository',
    repo,
    '--state-dir',
    mkdtempSync(join(dir, 'state-')),
    '--token',
    't',
    '--policy',
    'static-even',
    '--log-level',
    'warn',
    ...extra,
  ]);
  const base = await waitFor(s, /endpoint (http:\/\/[^ ]+)\/v2/);
  return { base, stderr: () => s.stderr };
}

async function get(url: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('inss scheduler --model-repository', () => {
  it("serves the repository's models alone: their configuration, metadata and the failed ones", async () => {
    const { base, stderr } = await scheduler([]);

    const config = await get(`${base}/v2/models/adder/config`);
    expect(config.status).toBe(200);
    expect(config.body).toEqual({
      name: 'adder',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      version_policy: { latest: { num_versions: 2 } },
      max_batch_size: 8,
      input: ['A', 'B'].map((name) => ({
        name,
        data_type: 'TYPE_INT32',
        format: 'FORMAT_NONE',
        dims: [4],
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
      })),
      output: [{ name: 'SUM', data_type: 'TYPE_INT32', dims: [4], label_filename: '', is_shape_tensor: false }],
      dynamic_batching: {
        preferred_batch_size: [4],
        max_queue_delay_microseconds: 500,
        preserve_ordering: false,
        priority_levels: 0,
        default_priority_level: 0,
      },
      default_model_filename: 'model.onnx',
      parameters: { slo_ms: { string_value: '30' } },
    });

    const adder = await get(`${base}/v2/models/adder`);
    expect(adder.body).toMatchObject({
      name: 'adder',
      platform: 'onnxruntime_onnx',
      versions: ['3'],
      inputs: [
        { name: 'A', datatype: 'INT32', shape: [-1, 4] },
        { name: 'B', datatype: 'INT32', shape: [-1, 4] },
      ],
      outputs: [{ name: 'SUM', datatype: 'INT32', shape: [-1, 4] }],
      parameters: { slo_ms: 30 },
    });
    // max_batch_size 0: no batch dimension; no slo_ms and no scenario entry: the default SLO.
    const scorer = await get(`${base}/v2/models/scorer`);
    expect(scorer.body).toMatchObject({
      platform: 'pytorch_libtorch',
      versions: ['1'],
      inputs: [{ name: 'INPUT__0', datatype: 'FP16', shape: [2, 3] }],
      outputs: [{ name: 'OUTPUT__0', datatype: 'FP64', shape: [1] }],
      parameters: { slo_ms: 100 },
    });
    expect((await get(`${base}/v2/models/scorer/config`)).body).toMatchObject({
      max_batch_size: 0,
      default_model_filename: 'net.pt',
    });

    // Versions: the served one answers; one the policy allows but inss does not serve, and one that
    // does not exist, are 404s that say which.
    expect((await get(`${base}/v2/models/adder/versions/3`)).status).toBe(200);
    const older = await get(`${base}/v2/models/adder/versions/2/config`);
    expect(older.status).toBe(404);
    expect(older.body.error).toBe(
      "model 'adder' version '2' is not served: inss serves one version of a model, the highest its version " +
        "policy allows ('3')",
    );
    expect((await get(`${base}/v2/models/adder/versions/9`)).body.error).toBe(
      "model 'adder' has no version '9' (versions: 3)",
    );

    // The scenario's models are not served when only --model-repository is given.
    expect((await get(`${base}/v2/models/resnet50`)).status).toBe(404);

    // The broken models: not served, not ready, their reason naming the field or the file.
    const brokenReason =
      'broken/config.pbtxt: input[0].dims[0]: -1 (variable dimensions are served by the pytorch backend only: the ' +
      'ONNX Runtime worker takes fixed shapes)';
    const ready = await get(`${base}/v2/models/broken/ready`);
    expect(ready).toEqual({ status: 503, body: { name: 'broken', ready: false, reason: brokenReason } });
    const broken = await get(`${base}/v2/models/broken`);
    expect(broken.status).toBe(404);
    expect(broken.body.error).toBe(`model 'broken' is unavailable: it failed to load: ${brokenReason}`);
    expect(stderr()).toContain(brokenReason);

    const index = await fetch(`${base}/v2/repository/index`, { method: 'POST' });
    const entries = (await index.json()) as { name: string; version: string; state: string; reason: string }[];
    expect(entries.map((e) => [e.name, e.version, e.state])).toEqual([
      ['adder', '3', 'UNAVAILABLE'],
      ['adder', '2', 'UNAVAILABLE'],
      ['scorer', '1', 'UNAVAILABLE'],
      ['broken', '', 'UNAVAILABLE'],
      ['nofile', '', 'UNAVAILABLE'],
    ]);
    expect(entries[0]!.reason).toMatch(/^not placed on any GPU/);
    expect(entries[1]!.reason).toMatch(/^not served: inss serves one version/);
    expect(entries[3]!.reason).toBe(`failed to load: ${brokenReason}`);
    expect(entries[4]!.reason).toBe(
      `failed to load: ${join(repo, 'nofile', '1', 'model.onnx')}: missing (the model file of version 1: the ` +
        'default name)',
    );
  });

  it("serves the scenario's models beside the repository's; slo_ms overrides the scenario's SLO", async () => {
    const { base, stderr } = await scheduler(['--scenario', scenarioFile]);
    const slo = async (name: string) =>
      ((await get(`${base}/v2/models/${name}`)).body.parameters as { slo_ms: number }).slo_ms;
    expect(await slo('resnet50')).toBe(80);
    expect(await slo('adder')).toBe(30);
    expect(await slo('scorer')).toBe(45);
    expect((await get(`${base}/v2/models/resnet50`)).body.platform).toBe('inss');
    expect(stderr()).toMatch(/slo_ms parameter overrides the scenario's SLO/);
  });

  it('refuses a repository that is not a directory, or holds no model', async () => {
    const missing = await runCli(['scheduler', '--port', '0', '--model-repository', join(dir, 'none')]);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain(`--model-repository ${join(dir, 'none')}: not a directory`);
    const empty = mkdtempSync(join(dir, 'empty-'));
    const none = await runCli(['scheduler', '--port', '0', '--model-repository', empty]);
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('no model in it');
  });
});
