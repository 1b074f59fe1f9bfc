// The gRPC endpoint (Triton's inference.GRPCInferenceService, proto/) of `inss up` started as a user
// starts it, called by a real gRPC client built from the project's .proto with @grpc/grpc-js (as
// tritonclient.grpc's stubs are built from Triton's): health, metadata, configuration, infer with raw
// and typed contents (one sample and a batch), the stream, statistics, the repository index, shared
// memory shared with the HTTP routes, refusals with their codes; a token-protected scheduler; `inss
// loadgen --protocol grpc`; and, where Debian's python3-grpcio and python3-grpc-tools are installed,
// a Python client whose stubs protoc generates from the same .proto.
//
// Over 400 lines because every case runs against one `inss up` started once in beforeAll (a system
// test: starting the system per file costs more than the cases), and the system test list in
// vitest.config.ts names this one file.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inferenceService, protoDir } from '../../scheduler/grpcProto.js';
import { syntheticPicture } from '../../tools/loadgen/images.js';
import { LoadgenReportSchema } from '../../tools/loadgen/report.js';
import { runCli } from '../support/cli.js';
import { bytesTensor, IMAGENET, inceptionBatch, jpegFile, parseModel, topClasses } from '../support/imageClient.js';
import { REPO_ROOT } from '../support/paths.js';
import { opensslWorks, selfSignedCert } from '../../benchmarks/tls.js';
import { simForward, startInss, stopAll, waitFor, startUp } from '../support/system.js';

type Reply =
  { ok: true; value: Record<string, unknown>; trailer: grpc.Metadata } | { ok: false; code: number; details: string };

/** One unary call, its answer or its status, and the trailer (the server's span). */
function call(client: grpc.Client, method: string, req: object, metadata = new grpc.Metadata()): Promise<Reply> {
  return new Promise((resolve) => {
    let value: Record<string, unknown> | undefined;
    const fn = (
      client as unknown as Record<
        string,
        (
          r: object,
          m: grpc.Metadata,
          cb: (e: grpc.ServiceError | null, v?: Record<string, unknown>) => void,
        ) => grpc.ClientUnaryCall
      >
    )[method]!.bind(client);
    const c = fn(req, metadata, (err, v) => {
      if (err) resolve({ ok: false, code: err.code, details: err.details });
      else value = v;
    });
    c.on('status', (s: grpc.StatusObject) => {
      if (value !== undefined) resolve({ ok: true, value, trailer: s.metadata });
    });
  });
}

function ok(r: Reply): Record<string, unknown> {
  if (!r.ok) throw new Error(`gRPC ${r.code}: ${r.details}`);
  return r.value;
}

const IMAGE = [1, 3, 224, 224];
const image = (seed: number) => Float32Array.from({ length: 3 * 224 * 224 }, (_, i) => ((i * 7 + seed) % 13) / 13);
const bytesOf = (x: Float32Array) => Buffer.from(x.buffer, x.byteOffset, x.byteLength);
const floatsOf = (b: Buffer) => Array.from(new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.length)));

const state = mkdtempSync(join(tmpdir(), 'inss-grpc-'));
let base = '';
let address = '';
let client: grpc.Client;
beforeAll(async () => {
  // The paper's six models with 10 s SLOs, so that no request here is dropped however loaded the
  // machine is (these tests check the protocol, not the latency); a policy that runs on any scenario.
  const scenario = JSON.parse(readFileSync(join(REPO_ROOT, 'scenarios', 'paper-6.json'), 'utf8')) as {
    name: string;
    models: { sloMs: number }[];
  };
  scenario.name = 'grpc-e2e';
  for (const m of scenario.models) m.sloMs = 10_000;
  writeFileSync(join(state, 'scenario.json'), JSON.stringify(scenario));
  ({ base, address } = await startUp(state, ['--scenario', join(state, 'scenario.json'), '--policy', 'static-even'], {
    grpc: true,
  }));
  const Service = inferenceService();
  client = new Service(address, grpc.credentials.createInsecure());
}, 180_000);
afterAll(async () => {
  client?.close();
  await stopAll();
  rmSync(state, { recursive: true, force: true });
});

describe('inss up over gRPC', () => {
  it('ServerLive, ServerReady, ModelReady, ServerMetadata, ModelMetadata', async () => {
    expect(ok(await call(client, 'ServerLive', {}))).toEqual({ live: true });
    expect(ok(await call(client, 'ServerReady', {}))).toEqual({ ready: true });
    expect(ok(await call(client, 'ModelReady', { name: 'resnet50' }))).toEqual({ ready: true });
    expect(ok(await call(client, 'ModelReady', { name: 'resnet50', version: '1' }))).toEqual({ ready: true });
    // As Triton: an unknown model is not ready, without an error.
    expect(ok(await call(client, 'ModelReady', { name: 'nope' }))).toEqual({ ready: false });
    const server = ok(await call(client, 'ServerMetadata', {}));
    expect(server).toMatchObject({ name: 'inss', version: '0.1.0' });
    expect(server.extensions).toEqual([
      'binary_tensor_data',
      'classification',
      'statistics',
      'model_configuration',
      'model_repository',
      'system_shared_memory',
    ]);
    expect(ok(await call(client, 'ModelMetadata', { name: 'resnet50' }))).toEqual({
      name: 'resnet50',
      versions: ['1'],
      platform: 'inss',
      inputs: [{ name: 'input', datatype: 'FP32', shape: ['-1', '3', '224', '224'] }],
      outputs: [{ name: 'output', datatype: 'FP32', shape: ['-1', '1000'] }],
    });
  });

  it('ModelConfig: the model configuration message, with inss parameters', async () => {
    const { config } = ok(await call(client, 'ModelConfig', { name: 'vgg16' })) as { config: Record<string, unknown> };
    expect(config).toMatchObject({
      name: 'vgg16',
      platform: 'inss',
      backend: 'inss',
      version_policy: { latest: { num_versions: 1 }, policy_choice: 'latest' },
      input: [{ name: 'input', data_type: 'TYPE_FP32', format: 'FORMAT_NCHW', dims: ['3', '224', '224'] }],
      output: [{ name: 'output', data_type: 'TYPE_FP32', dims: ['1000'] }],
      dynamic_batching: { preserve_ordering: false },
      scheduling_choice: 'dynamic_batching',
    });
    expect((config.max_batch_size as number) >= 1).toBe(true);
    expect((config.dynamic_batching as { preferred_batch_size: number[] }).preferred_batch_size.length).toBeGreaterThan(
      0,
    );
    expect((config.output as { label_filename: string }[])[0]!.label_filename).not.toBe('');
    const params = config.parameters as Record<string, { string_value: string }>;
    expect(params.slo_ms).toEqual({ string_value: '10000' });
    expect(JSON.parse(params.input_forms!.string_value)).toMatchObject({
      input: [{ datatype: 'FP32' }, { datatype: 'UINT8' }, { datatype: 'BYTES' }],
    });
    expect((config.instance_group as { kind: string }[]).every((g) => g.kind === 'KIND_GPU')).toBe(true);
  });

  it('ModelInfer with raw_input_contents: one sample, the simulated forward pass in raw_output_contents', async () => {
    const x = image(1);
    const r = await call(client, 'ModelInfer', {
      model_name: 'resnet50',
      id: 'one',
      inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE }],
      outputs: [{ name: 'output' }],
      raw_input_contents: [bytesOf(x)],
    });
    const res = ok(r) as {
      model_name: string;
      model_version: string;
      id: string;
      outputs: { name: string; datatype: string; shape: string[] }[];
      raw_output_contents: Buffer[];
    };
    expect(res).toMatchObject({
      model_name: 'resnet50',
      model_version: '1',
      id: 'one',
      outputs: [{ name: 'output', datatype: 'FP32', shape: ['1', '1000'] }],
    });
    expect(floatsOf(res.raw_output_contents[0]!)).toEqual(Array.from(simForward(x, 'resnet50')));
    // The scheduler's span of the task, as the HTTP answer's Server-Timing.
    expect(r.ok && String(r.trailer.get('server-timing')[0])).toMatch(/^inss;dur=\d+\.\d{3}$/);
  });

  it(
    "raw contents reach a worker that maps the scheduler's shared-memory region in a slot of it, as a binary " +
      'HTTP body does',
    async () => {
      const samples = async () => {
        const text = await (await fetch(`${base}/metrics`)).text();
        const count = (path: string) =>
          Number(new RegExp(`^inss_direct_samples_total\\{path="${path}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
        return { shm: count('shm'), socket: count('socket'), region: /^inss_shm_slots_in_use /m.test(text) };
      };
      const before = await samples();
      if (!before.region) return; // no region (the shm addon is not built): every batch carries its bytes
      const x = image(7);
      ok(
        await call(client, 'ModelInfer', {
          model_name: 'efficientnet',
          inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE }],
          raw_input_contents: [bytesOf(x)],
        }),
      );
      const after = await samples();
      expect(after.shm - before.shm).toBe(1);
      expect(after.socket).toBe(before.socket);
    },
  );

  it('ModelInfer with a batch of 4 samples: one output row per sample, each its own forward pass', async () => {
    const xs = [0, 1, 2, 3].map((k) => image(10 + k));
    const all = Buffer.concat(xs.map(bytesOf));
    const res = ok(
      await call(client, 'ModelInfer', {
        model_name: 'mobilenet',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [4, 3, 224, 224] }],
        raw_input_contents: [all],
      }),
    ) as { outputs: { shape: string[] }[]; raw_output_contents: Buffer[] };
    expect(res.outputs[0]!.shape).toEqual(['4', '1000']);
    const y = floatsOf(res.raw_output_contents[0]!);
    for (const [k, x] of xs.entries())
      expect(y.slice(k * 1000, (k + 1) * 1000)).toEqual(Array.from(simForward(x, 'mobilenet')));
  });

  it(
    'ModelInfer with typed contents (fp32_contents), and UINT8 ' + 'pixels (uint_contents) for an image model',
    async () => {
      const x = image(2);
      const res = ok(
        await call(client, 'ModelInfer', {
          model_name: 'vgg16',
          inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE, contents: { fp32_contents: Array.from(x) } }],
        }),
      ) as { raw_output_contents: Buffer[] };
      expect(floatsOf(res.raw_output_contents[0]!)).toEqual(Array.from(simForward(x, 'vgg16')));
      const pixels = Array.from({ length: 3 * 224 * 224 }, (_, i) => i % 256);
      const u8 = ok(
        await call(client, 'ModelInfer', {
          model_name: 'vgg16',
          inputs: [{ name: 'input', datatype: 'UINT8', shape: IMAGE, contents: { uint_contents: pixels } }],
        }),
      ) as { outputs: { shape: string[] }[] };
      expect(u8.outputs[0]!.shape).toEqual(['1', '1000']);
    },
  );

  it(
    'classification (class_count=3): a BYTES output of 3 ' + '"score:index:label" strings in raw_output_contents',
    async () => {
      const x = image(8);
      const res = ok(
        await call(client, 'ModelInfer', {
          model_name: 'resnet50',
          inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE }],
          outputs: [{ name: 'output', parameters: { classification: { int64_param: 3 } } }],
          raw_input_contents: [bytesOf(x)],
        }),
      ) as { outputs: { datatype: string; shape: string[] }[]; raw_output_contents: Buffer[] };
      expect(res.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: ['1', '3'] });
      // tritonclient's deserialize_bytes_tensor: 4-byte little-endian lengths, each followed by its bytes.
      const b = res.raw_output_contents[0]!;
      const strings: string[] = [];
      for (let o = 0; o < b.length; o += 4 + b.readUInt32LE(o))
        strings.push(b.subarray(o + 4, o + 4 + b.readUInt32LE(o)).toString('utf8'));
      expect(strings).toHaveLength(3);
      const scores = simForward(x, 'resnet50');
      const top = Array.from(scores.keys()).sort((a, c) => scores[c]! - scores[a]! || a - c)[0]!;
      expect(strings[0]).toMatch(new RegExp(`^-?\\d+\\.\\d{6}:${top}:[^:]+$`));
    },
  );

  it(
    'image_client.py -i grpc -s INCEPTION -c 3 -b 2: metadata and config pass parse_model; a batch of 2 JPEGs ' +
      'gives 2 x 3 classes',
    async () => {
      // tritonclient.grpc's get_model_metadata / get_model_config (int64 shapes and dims arrive as strings here).
      const meta = ok(await call(client, 'ModelMetadata', { name: 'resnet50' })) as {
        inputs: { name: string; datatype: string; shape: string[] }[];
        outputs: { name: string; datatype: string; shape: string[] }[];
      };
      const { config } = ok(await call(client, 'ModelConfig', { name: 'resnet50' })) as {
        config: { max_batch_size: number; input: { format: string }[] };
      };
      const asNumbers = (t: { name: string; datatype: string; shape: string[] }) => ({
        ...t,
        shape: t.shape.map(Number),
      });
      const { inputName, outputName, c, h, w, format } = parseModel({
        inputs: meta.inputs.map(asNumbers),
        outputs: meta.outputs.map(asNumbers),
        maxBatchSize: config.max_batch_size,
        inputFormats: config.input.map((i) => i.format),
      });
      expect(format).toBe('FORMAT_NCHW');
      expect(2).toBeLessThanOrEqual(config.max_batch_size);
      const { samples, batch } = inceptionBatch(
        [syntheticPicture(320, 240, 51), syntheticPicture(200, 260, 52)].map(jpegFile),
        c,
        h,
        w,
      );
      // grpcclient.InferInput(input_name, [2, 3, 224, 224], 'FP32').set_data_from_numpy(batch) (raw contents);
      // grpcclient.InferRequestedOutput(output_name, class_count=3).
      const res = ok(
        await call(client, 'ModelInfer', {
          model_name: 'resnet50',
          inputs: [{ name: inputName, datatype: 'FP32', shape: [2, c, h, w] }],
          outputs: [{ name: outputName, parameters: { classification: { int64_param: 3 } } }],
          raw_input_contents: [bytesOf(batch)],
        }),
      ) as { outputs: { datatype: string; shape: string[] }[]; raw_output_contents: Buffer[] };
      expect(res.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: ['2', '3'] });
      const strings = bytesTensor(res.raw_output_contents[0]!);
      for (const s of strings) expect(IMAGENET[Number(s.split(':')[1])]).toBe(s.split(':')[2]);
      expect(strings).toEqual(samples.flatMap((x) => topClasses(simForward(x, 'resnet50'), 3)));
    },
  );

  it(
    'ModelStreamInfer: each request on the stream answered on it, ' + 'with its id; a bad one with error_message',
    async () => {
      const stream = (
        client as unknown as {
          ModelStreamInfer: () => grpc.ClientDuplexStream<
            object,
            { error_message: string; infer_response: { id: string; raw_output_contents: Buffer[] } }
          >;
        }
      ).ModelStreamInfer();
      const answers: { error_message: string; infer_response: { id: string; raw_output_contents: Buffer[] } }[] = [];
      const done = new Promise<void>((resolve, reject) => {
        stream.on('data', (m: (typeof answers)[number]) => answers.push(m));
        stream.on('end', resolve);
        stream.on('error', reject);
      });
      const x = image(3);
      stream.write({
        model_name: 'resnet50',
        id: 's1',
        inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE }],
        raw_input_contents: [bytesOf(x)],
      });
      stream.write({
        model_name: 'resnet50',
        id: 's2',
        inputs: [{ name: 'input', datatype: 'INT32', shape: IMAGE }],
        raw_input_contents: [bytesOf(x)],
      });
      stream.write({
        model_name: 'alexnet',
        id: 's3',
        inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE }],
        raw_input_contents: [bytesOf(x)],
      });
      stream.end();
      await done;
      const byId = new Map(answers.map((a) => [a.infer_response.id, a]));
      expect([...byId.keys()].sort()).toEqual(['s1', 's2', 's3']);
      expect(byId.get('s1')!.error_message).toBe('');
      expect(floatsOf(byId.get('s1')!.infer_response.raw_output_contents[0]!)).toEqual(
        Array.from(simForward(x, 'resnet50')),
      );
      expect(byId.get('s2')!.error_message).toMatch(/^inputs\[0\]\.datatype: expected FP32, got INT32/);
      expect(byId.get('s3')!.error_message).toBe('');
    },
  );

  it(
    'refusals: a bad request is INVALID_ARGUMENT naming the field, an unknown model NOT_FOUND, load/unload ' +
      'UNIMPLEMENTED, CUDA shared memory as a Triton without GPUs',
    async () => {
      const x = bytesOf(image(4));
      expect(
        await call(client, 'ModelInfer', {
          model_name: 'resnet50',
          inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 3, 224, 225] }],
          raw_input_contents: [x],
        }),
      ).toEqual({
        ok: false,
        code: grpc.status.INVALID_ARGUMENT,
        details:
          "raw_input_contents[0]: 602112 bytes, but input 'input' of shape [1,3,224,225] and FP32 is 604800 bytes",
      });
      const shape = await call(client, 'ModelInfer', {
        model_name: 'resnet50',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [1, 224, 224, 3] }],
        raw_input_contents: [x],
      });
      expect(shape).toEqual({
        ok: false,
        code: grpc.status.INVALID_ARGUMENT,
        details: 'inputs[0].shape: expected [k,3,224,224] with 1 <= k <= 8, got [1,224,224,3]',
      });
      const dt = await call(client, 'ModelInfer', {
        model_name: 'resnet50',
        inputs: [{ name: 'input', datatype: 'INT32', shape: IMAGE }],
        raw_input_contents: [x],
      });
      expect(dt).toMatchObject({
        ok: false,
        code: grpc.status.INVALID_ARGUMENT,
        details: expect.stringMatching(/^inputs\[0\]\.datatype: expected FP32, got INT32/) as unknown,
      });
      const nodata = await call(client, 'ModelInfer', {
        model_name: 'resnet50',
        inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE }],
      });
      expect(nodata).toMatchObject({
        ok: false,
        code: grpc.status.INVALID_ARGUMENT,
        details: expect.stringMatching(/^inputs\[0\] \('input'\): no tensor data/) as unknown,
      });

      const unknown = await call(client, 'ModelInfer', {
        model_name: 'nope',
        inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE }],
        raw_input_contents: [x],
      });
      expect(unknown).toMatchObject({
        ok: false,
        code: grpc.status.NOT_FOUND,
        details: expect.stringMatching(/^unknown model 'nope' \(served: .*resnet50/) as unknown,
      });
      expect(await call(client, 'ModelMetadata', { name: 'nope' })).toMatchObject({
        ok: false,
        code: grpc.status.NOT_FOUND,
      });
      expect(await call(client, 'ModelConfig', { name: 'resnet50', version: '2' })).toEqual({
        ok: false,
        code: grpc.status.NOT_FOUND,
        details: "model 'resnet50' has no version '2' (versions: 1)",
      });
      expect(await call(client, 'RepositoryModelLoad', { model_name: 'resnet50' })).toMatchObject({
        ok: false,
        code: grpc.status.UNIMPLEMENTED,
        details: expect.stringMatching(/^cannot load model 'resnet50': inss does not load or unload models/) as unknown,
      });
      // As a Triton built without GPU support (the HTTP routes' texts).
      expect(
        await call(client, 'CudaSharedMemoryRegister', {
          name: 'c',
          raw_handle: Buffer.alloc(8),
          device_id: 0,
          byte_size: 8,
        }),
      ).toMatchObject({
        ok: false,
        code: grpc.status.INVALID_ARGUMENT,
        details: expect.stringMatching(
          /^failed to register CUDA shared memory region: 'c', GPUs not supported/,
        ) as unknown,
      });
      expect(await call(client, 'CudaSharedMemoryStatus', { name: 'c' })).toMatchObject({
        ok: false,
        code: grpc.status.NOT_FOUND,
      });
      expect(ok(await call(client, 'CudaSharedMemoryStatus', {}))).toEqual({ regions: {} });
      expect(ok(await call(client, 'CudaSharedMemoryUnregister', {}))).toEqual({});
      expect(await call(client, 'TraceSetting', {})).toMatchObject({ ok: false, code: grpc.status.UNIMPLEMENTED });
    },
  );

  it('ModelStatistics and RepositoryIndex', async () => {
    const one = ok(await call(client, 'ModelStatistics', { name: 'resnet50' })) as {
      model_stats: {
        name: string;
        version: string;
        inference_count: string;
        inference_stats: { success: { count: string } };
      }[];
    };
    expect(one.model_stats).toHaveLength(1);
    expect(one.model_stats[0]).toMatchObject({ name: 'resnet50', version: '1' });
    expect(Number(one.model_stats[0]!.inference_count)).toBeGreaterThanOrEqual(1);
    expect(Number(one.model_stats[0]!.inference_stats.success.count)).toBeGreaterThanOrEqual(1);
    const all = ok(await call(client, 'ModelStatistics', {})) as { model_stats: unknown[] };
    expect(all.model_stats).toHaveLength(6);
    expect(await call(client, 'ModelStatistics', { name: 'nope' })).toMatchObject({
      ok: false,
      code: grpc.status.NOT_FOUND,
    });
    const index = ok(await call(client, 'RepositoryIndex', {})) as {
      models: { name: string; version: string; state: string }[];
    };
    expect(index.models.map((m) => m.name).sort()).toEqual([
      'alexnet',
      'efficientnet',
      'mnasnet',
      'mobilenet',
      'resnet50',
      'vgg16',
    ]);
    expect(index.models.every((m) => m.state === 'READY' && m.version === '1')).toBe(true);
    expect((ok(await call(client, 'RepositoryIndex', { ready: true })) as { models: unknown[] }).models).toHaveLength(
      6,
    );
  });

  it(
    'system shared memory: one registry for both protocols; a gRPC ' + 'infer with its input and output in a region',
    async () => {
      expect(ok(await call(client, 'SystemSharedMemoryStatus', {}))).toEqual({ regions: {} });
      const key = `inss_grpc_${process.pid}`;
      const path = `/dev/shm/${key}`;
      const x = image(5);
      const inBytes = x.byteLength;
      writeFileSync(path, Buffer.concat([bytesOf(x), Buffer.alloc(64 + 4000)]));
      try {
        expect(
          ok(
            await call(client, 'SystemSharedMemoryRegister', {
              name: 'io',
              key: `/${key}`,
              offset: 0,
              byte_size: inBytes + 64 + 4000,
            }),
          ),
        ).toEqual({});
        // Registered over gRPC, listed by the HTTP route.
        const http = (await (await fetch(`${base}/v2/systemsharedmemory/status`)).json()) as { name: string }[];
        expect(http.map((r) => r.name)).toEqual(['io']);
        expect(ok(await call(client, 'SystemSharedMemoryStatus', { name: 'io' }))).toEqual({
          regions: { io: { name: 'io', key: `/${key}`, offset: String(0), byte_size: String(inBytes + 64 + 4000) } },
        });
        const region = (name: string, size: number, offset = 0) => ({
          shared_memory_region: { string_param: name },
          shared_memory_byte_size: { int64_param: size },
          ...(offset ? { shared_memory_offset: { int64_param: offset } } : {}),
        });
        const res = ok(
          await call(client, 'ModelInfer', {
            model_name: 'resnet50',
            inputs: [{ name: 'input', datatype: 'FP32', shape: IMAGE, parameters: region('io', inBytes) }],
            outputs: [{ name: 'output', parameters: region('io', 4000, inBytes + 64) }],
          }),
        ) as { outputs: { parameters: Record<string, { string_param?: string }> }[]; raw_output_contents: Buffer[] };
        expect(res.outputs[0]!.parameters.shared_memory_region!.string_param).toBe('io');
        expect(res.raw_output_contents).toEqual([Buffer.alloc(0)]);
        const y = readFileSync(path).subarray(inBytes + 64, inBytes + 64 + 4000);
        expect(floatsOf(Buffer.from(y))).toEqual(Array.from(simForward(x, 'resnet50')));
        expect(
          await call(client, 'SystemSharedMemoryRegister', { name: 'io', key: `/${key}`, offset: 0, byte_size: 8 }),
        ).toMatchObject({ ok: false, code: grpc.status.ALREADY_EXISTS });
        expect(await call(client, 'SystemSharedMemoryStatus', { name: 'nope' })).toMatchObject({
          ok: false,
          code: grpc.status.NOT_FOUND,
        });
      } finally {
        await call(client, 'SystemSharedMemoryUnregister', {});
        rmSync(path, { force: true });
      }
      expect(ok(await call(client, 'SystemSharedMemoryStatus', {}))).toEqual({ regions: {} });
    },
  );

  it('inss loadgen --protocol grpc: the same load over gRPC, every answer ok', async () => {
    const r = await runCli([
      'loadgen',
      '--url',
      `http://${address}`,
      '--protocol',
      'grpc',
      '--model',
      'resnet50=20',
      '--duration',
      '1',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const report = LoadgenReportSchema.parse(JSON.parse(r.stdout));
    expect(report.settings.protocol).toBe('grpc');
    expect(report.total.sent).toBeGreaterThan(5);
    expect(report.total.ok).toBe(report.total.sent);
    expect(report.total.serverTimed).toBe(report.total.ok);
    const typed = await runCli([
      'loadgen',
      '--url',
      `http://${address}`,
      '--protocol',
      'grpc',
      '--encoding',
      'json',
      '--input',
      'uint8',
      '--model',
      'vgg16=5',
      '--duration',
      '1',
      '--json',
    ]);
    expect(typed.code, typed.stderr).toBe(0);
    const t = LoadgenReportSchema.parse(JSON.parse(typed.stdout));
    expect(t.total.ok).toBe(t.total.sent);
  });
});

describe('a scheduler with client tokens, over gRPC', () => {
  it('no token or a wrong one: UNAUTHENTICATED (health excepted); the right one: OK', async () => {
    const token = 'grpc-token-0123456789abcdef';
    const dir = mkdtempSync(join(state, 'tok-'));
    const s = startInss(
      [
        'scheduler',
        '--port',
        '0',
        '--grpc-port',
        '0',
        '--state-dir',
        dir,
        '--log-level',
        'warn',
        '--scenario',
        join(state, 'scenario.json'),
        '--policy',
        'static-even',
      ],
      { INSS_AUTH_TOKENS: token },
    );
    const addr = await waitFor(s, /grpc (\S+:\d+)/, 60_000);
    const c = new (inferenceService())(addr, grpc.credentials.createInsecure());
    try {
      const bearer = (t: string) => {
        const m = new grpc.Metadata();
        m.set('authorization', `Bearer ${t}`);
        return m;
      };
      expect(ok(await call(c, 'ServerLive', {}))).toEqual({ live: true });
      expect(await call(c, 'ModelMetadata', { name: 'resnet50' })).toEqual({
        ok: false,
        code: grpc.status.UNAUTHENTICATED,
        details: "this route needs a token: send metadata 'authorization: Bearer <token>'",
      });
      expect(
        await call(c, 'ModelMetadata', { name: 'resnet50' }, bearer('wrong-token-0123456789abcdef')),
      ).toMatchObject({ ok: false, code: grpc.status.UNAUTHENTICATED });
      expect(await call(c, 'ModelInfer', { model_name: 'resnet50' })).toMatchObject({
        ok: false,
        code: grpc.status.UNAUTHENTICATED,
      });
      expect(ok(await call(c, 'ModelMetadata', { name: 'resnet50' }, bearer(token)))).toMatchObject({
        name: 'resnet50',
      });
    } finally {
      c.close();
    }
  });
});

describe('the gRPC port on the command line', () => {
  it('a busy --grpc-port stops the start with one line naming it; --no-grpc serves none', async () => {
    const port = Number(address.slice(address.lastIndexOf(':') + 1));
    const dir = mkdtempSync(join(state, 'port-'));
    const args = [
      'scheduler',
      '--port',
      '0',
      '--state-dir',
      dir,
      '--log-level',
      'warn',
      '--scenario',
      join(state, 'scenario.json'),
      '--policy',
      'static-even',
    ];
    const busy = startInss([...args, '--grpc-port', String(port)]);
    expect((await busy.exited).code).toBe(2);
    expect(busy.stderr.trim()).toMatch(
      new RegExp(`^inss: --grpc-port ${port}: 127\\.0\\.0\\.1:${port} is already in use`),
    );
    expect(busy.stderr.trim().split('\n')).toHaveLength(1);
    const off = startInss([...args, '--no-grpc']);
    await waitFor(off, /endpoint (http:\/\/[^ ]+)\/v2/, 60_000);
    expect(off.stdout).not.toMatch(/grpc /);
  });
});

describe.skipIf(!opensslWorks())(
  'a scheduler with --tls-cert/--tls-key, over gRPC (openssl makes the certificate)',
  () => {
    it('serves TLS with the same certificate: a client trusting it is answered, a plaintext one is not', async () => {
      const dir = mkdtempSync(join(state, 'tls-'));
      const cert = join(dir, 'cert.pem');
      const key = join(dir, 'key.pem');
      selfSignedCert(key, cert);
      const s = startInss([
        'scheduler',
        '--port',
        '0',
        '--grpc-port',
        '0',
        '--state-dir',
        dir,
        '--log-level',
        'warn',
        '--scenario',
        join(state, 'scenario.json'),
        '--policy',
        'static-even',
        '--tls-cert',
        cert,
        '--tls-key',
        key,
      ]);
      const addr = await waitFor(s, /grpc (\S+:\d+)/, 60_000);
      const Service = inferenceService();
      const tls = new Service(addr, grpc.credentials.createSsl(readFileSync(cert)));
      const plain = new Service(addr, grpc.credentials.createInsecure());
      try {
        expect(ok(await call(tls, 'ModelMetadata', { name: 'resnet50' }))).toMatchObject({ name: 'resnet50' });
        expect(await call(plain, 'ServerLive', {})).toMatchObject({ ok: false, code: grpc.status.UNAVAILABLE });
      } finally {
        tls.close();
        plain.close();
      }
    });
  },
);

/**
 * Debian's python3-grpcio and python3-grpc-tools for /usr/bin/python3 (or INSS_PYTHON): why not, or undefined when
 * there.
 */
function pythonGrpcMissing(python: string): string | undefined {
  const r = spawnSync(python, ['-c', 'import grpc, grpc_tools.protoc'], { encoding: 'utf8' });
  if (r.error) return `${python}: ${r.error.message}`;
  return r.status === 0
    ? undefined
    : `${python} cannot import grpc and grpc_tools (apt-get install -y python3-grpcio python3-grpc-tools)`;
}

const PYTHON = process.env.INSS_PYTHON ?? '/usr/bin/python3';
const pythonMissing = pythonGrpcMissing(PYTHON);
if (pythonMissing) console.warn(`skipping the Python gRPC client test: ${pythonMissing}`);

const PY_CLIENT = `
import array, json, sys
import grpc
import grpc_service_pb2 as pb
import grpc_service_pb2_grpc as svc

stub = svc.GRPCInferenceServiceStub(grpc.insecure_channel(sys.argv[1]))
out = {"live": stub.ServerLive(pb.ServerLiveRequest()).live}
meta = stub.ModelMetadata(pb.ModelMetadataRequest(name="resnet50"))
out["input_shape"] = list(meta.inputs[0].shape)
x = array.array("f", [((i * 7 + 6) % 13) / 13 for i in range(3 * 224 * 224)])
req = pb.ModelInferRequest(model_name="resnet50", id="py")
t = req.inputs.add(); t.name = "input"; t.datatype = "FP32"; t.shape.extend([1, 3, 224, 224])
req.outputs.add().name = "output"
req.raw_input_contents.append(x.tobytes())
res = stub.ModelInfer(req)
y = array.array("f"); y.frombytes(res.raw_output_contents[0])
out.update(id=res.id, shape=list(res.outputs[0].shape), y=list(y))
try:
    stub.ModelMetadata(pb.ModelMetadataRequest(name="nope"))
except grpc.RpcError as e:
    out["unknown"] = e.code().name
print(json.dumps(out))
`;

describe.skipIf(pythonMissing !== undefined)(
  'a Python client with stubs generated from proto/ (python3-grpcio)',
  () => {
    it('ServerLive, ModelMetadata and ModelInfer with raw contents; NOT_FOUND as a grpc.RpcError', () => {
      const dir = mkdtempSync(join(state, 'py-'));
      const gen = spawnSync(
        PYTHON,
        [
          '-m',
          'grpc_tools.protoc',
          `-I${protoDir()}`,
          `--python_out=${dir}`,
          `--grpc_python_out=${dir}`,
          'grpc_service.proto',
          'model_config.proto',
        ],
        { cwd: protoDir(), encoding: 'utf8' },
      );
      expect(gen.status, gen.stderr).toBe(0);
      writeFileSync(join(dir, 'client.py'), PY_CLIENT);
      // Old protoc output (Debian's grpc-tools) needs the pure-Python protobuf runtime.
      const run = spawnSync(PYTHON, [join(dir, 'client.py'), address], {
        cwd: dir,
        encoding: 'utf8',
        env: { ...process.env, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION: 'python' },
        timeout: 60_000,
      });
      expect(run.status, run.stderr).toBe(0);
      const out = JSON.parse(run.stdout) as {
        live: boolean;
        input_shape: number[];
        id: string;
        shape: number[];
        y: number[];
        unknown: string;
      };
      expect(out).toMatchObject({
        live: true,
        input_shape: [-1, 3, 224, 224],
        id: 'py',
        shape: [1, 1000],
        unknown: 'NOT_FOUND',
      });
      expect(out.y).toEqual(Array.from(simForward(image(6), 'resnet50')));
    });
  },
);
