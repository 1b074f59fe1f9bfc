// Triton's protocol surface (scheduler/triton.ts) and the counters behind it (scheduler/metrics.ts):
// the statistics, model configuration and repository index JSON from real Metrics counters, the
// Content-Encoding / Accept-Encoding rules, and decompression with its size limit (zip bombs).
import { deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { Metrics, type WorkerView } from '../../scheduler/metrics.js';
import {
  compressedRoute,
  decompress,
  modelConfigJson,
  modelStatJson,
  parseIndexRequest,
  repositoryIndex,
  requestCoding,
  resolveModel,
  responseCoding,
} from '../../scheduler/triton.js';
import { cudaSharedMemoryAnswer } from '../../scheduler/sharedMemoryRoutes.js';
import { modelMetadata } from '../../scheduler/kserve.js';
import type { ServedModelConfig } from '../../scheduler/control.js';
import { modelSignature } from '../../src/protocol/tensor.js';

const RESNET: ServedModelConfig = { name: 'resnet50', sloMs: 100, signature: modelSignature(4 * 3 * 224 * 224, 4000) };
const BERT: ServedModelConfig = {
  name: 'bert',
  sloMs: 50,
  signature: {
    inputs: [{ name: 'ids', datatype: 'INT64', shape: [128] }],
    outputs: [{ name: 'logits', datatype: 'FP16', shape: [2] }],
  },
};

const worker = (w: Partial<WorkerView> & Pick<WorkerView, 'workerId' | 'model' | 'gpu'>): WorkerView => ({
  pct: 50,
  batch: 8,
  timeoutMs: 5,
  role: 'active',
  state: 'ready',
  serving: true,
  ...w,
});

/** The value of one sample line of the exposition text, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('statistics', () => {
  it('counts requests, executions, queue and compute time in Triton units, per batch size', async () => {
    const m = new Metrics();
    // Two batches: 3 tasks in 10 ms, then 1 task in 4 ms; one task dropped after 120 ms.
    m.batchExecuted('resnet50', 3, 0.01);
    m.batchExecuted('resnet50', 1, 0.004);
    for (const q of [0.001, 0.002, 0.003, 0.004]) m.queueTime.observe({ model: 'resnet50' }, q);
    m.taskFinished('resnet50', 'ok', 0.02, 1_700_000_000_000);
    m.taskFinished('resnet50', 'ok', 0.03, 1_700_000_000_001);
    m.taskFinished('resnet50', 'late', 0.15, 1_700_000_000_002);
    m.taskFinished('resnet50', 'ok', 0.01, 1_700_000_000_003);
    m.taskFinished('resnet50', 'dropped_slo', 0.12, 1_700_000_000_004);
    const s = modelStatJson('resnet50', await m.modelStats('resnet50'));
    expect(s).toMatchObject({
      name: 'resnet50',
      version: '1',
      last_inference: 1_700_000_000_004,
      inference_count: 4,
      execution_count: 2,
    });
    expect(s.inference_stats.success).toEqual({ count: 4, ns: 210_000_000 });
    expect(s.inference_stats.fail).toEqual({ count: 1, ns: 120_000_000 });
    expect(s.inference_stats.queue).toEqual({ count: 4, ns: 10_000_000 });
    // Each request carries its batch's time: 3 x 10 ms + 1 x 4 ms.
    expect(s.inference_stats.compute_infer).toEqual({ count: 4, ns: 34_000_000 });
    expect(s.batch_stats).toEqual([
      {
        batch_size: 1,
        compute_input: { count: 1, ns: 0 },
        compute_infer: { count: 1, ns: 4_000_000 },
        compute_output: { count: 1, ns: 0 },
      },
      {
        batch_size: 3,
        compute_input: { count: 1, ns: 0 },
        compute_infer: { count: 1, ns: 10_000_000 },
        compute_output: { count: 1, ns: 0 },
      },
    ]);
    // Every number is an integer, as Triton's uint64 fields are.
    const walk = (x: unknown): void => {
      if (typeof x === 'number') expect(Number.isInteger(x)).toBe(true);
      else if (x && typeof x === 'object') Object.values(x).forEach(walk);
    };
    walk(s);

    // The same counts under Triton's Prometheus names.
    m.queueLength.set({ model: 'resnet50' }, 7);
    m.gpuUtil.set({ gpu: '0' }, 40);
    m.gpuMemory.set({ gpu: '0', source: 'measured' }, 1024);
    const text = await m.registry.metrics();
    expect(sample(text, 'nv_inference_request_success{model="resnet50",version="1"}')).toBe(4);
    expect(sample(text, 'nv_inference_request_failure{model="resnet50",version="1",reason="dropped_slo"}')).toBe(1);
    expect(sample(text, 'nv_inference_count{model="resnet50",version="1"}')).toBe(4);
    expect(sample(text, 'nv_inference_exec_count{model="resnet50",version="1"}')).toBe(2);
    expect(sample(text, 'nv_inference_queue_duration_us{model="resnet50",version="1"}')).toBeCloseTo(10_000, 6);
    expect(sample(text, 'nv_inference_compute_infer_duration_us{model="resnet50",version="1"}')).toBeCloseTo(34_000, 6);
    expect(sample(text, 'nv_inference_request_duration_us{model="resnet50",version="1"}')).toBeCloseTo(330_000, 6);
    expect(sample(text, 'nv_inference_pending_request_count{model="resnet50",version="1"}')).toBe(7);
    // Triton's types: a cumulative duration is a counter, a pending count a gauge.
    expect(text).toMatch(/^# TYPE nv_inference_queue_duration_us counter$/m);
    expect(text).toMatch(/^# TYPE nv_inference_pending_request_count gauge$/m);
    expect(sample(text, 'nv_gpu_utilization{gpu="0"}')).toBeCloseTo(0.4, 9);
    expect(sample(text, 'nv_gpu_memory_used_bytes{gpu="0"}')).toBe(1024 * 1024 * 1024);
    expect(sample(text, 'inss_requests_total{model="resnet50",outcome="late"}')).toBe(1);
    expect(sample(text, 'inss_task_latency_seconds_count{model="resnet50"}')).toBe(4);
  });

  it('a model that saw nothing has zero counts and no batch sizes', async () => {
    const s = modelStatJson('bert', await new Metrics().modelStats('bert'));
    expect(s.inference_count).toBe(0);
    expect(s.last_inference).toBe(0);
    expect(s.inference_stats.success).toEqual({ count: 0, ns: 0 });
    expect(s.batch_stats).toEqual([]);
  });

  it('per-worker shares and batch sizes are exported from the worker source', async () => {
    const m = new Metrics();
    m.setWorkerSource(() => [
      worker({ workerId: 'w1', model: 'resnet50', gpu: 0, pct: 60 }),
      worker({ workerId: 'w2', model: 'resnet50', gpu: 1, pct: 30, batch: 4, role: 'shadow', serving: false }),
    ]);
    const text = await m.registry.metrics();
    expect(sample(text, 'inss_model_share_percent{model="resnet50",gpu="0",worker="w1",role="active"}')).toBe(60);
    expect(sample(text, 'inss_model_share_percent{model="resnet50",gpu="1",worker="w2",role="shadow"}')).toBe(30);
    expect(sample(text, 'inss_model_batch_size{model="resnet50",gpu="1",worker="w2",role="shadow"}')).toBe(4);
  });
});

describe('model configuration', () => {
  it("lists tensors without the batch dimension, Triton's type names, and the shares and batches in force", () => {
    const workers = [
      worker({ workerId: 'w3', model: 'resnet50', gpu: 2, pct: 40, batch: 16, timeoutMs: 12 }),
      worker({ workerId: 'w1', model: 'resnet50', gpu: 0, pct: 60, batch: 8, timeoutMs: 5 }),
      worker({ workerId: 'w4', model: 'resnet50', gpu: 1, pct: 20, role: 'shadow', state: 'starting', serving: false }),
      worker({ workerId: 'w2', model: 'bert', gpu: 0, pct: 40 }),
    ];
    const c = modelConfigJson(RESNET, workers);
    // The largest batch dimension a request may carry (8 unless the model says otherwise).
    expect(c).toMatchObject({ name: 'resnet50', platform: 'inss', backend: 'inss', max_batch_size: 8 });
    expect(modelConfigJson({ ...RESNET, maxBatchSize: 32 }, []).max_batch_size).toBe(32);
    // An image input is channel-first (FORMAT_NCHW); dims without the batch dimension (max_batch_size > 0).
    expect(c.input).toEqual([
      {
        name: 'input',
        data_type: 'TYPE_FP32',
        format: 'FORMAT_NCHW',
        dims: [3, 224, 224],
        is_shape_tensor: false,
        allow_ragged_batch: false,
        optional: false,
      },
    ]);
    // ModelOutput has no format; the 1000 scores of an image model carry ImageNet's labels.
    expect(c.output).toEqual([
      {
        name: 'output',
        data_type: 'TYPE_FP32',
        dims: [1000],
        label_filename: 'data/imagenet/labels.txt',
        is_shape_tensor: false,
      },
    ]);
    // The serving workers' batch sizes and their largest timeout (w4 is not serving).
    expect(c.dynamic_batching).toEqual({
      preferred_batch_size: [8, 16],
      max_queue_delay_microseconds: 12_000,
      preserve_ordering: false,
      priority_levels: 0,
      default_priority_level: 0,
    });
    expect(c.instance_group.map((g) => g.name)).toEqual(['w3', 'w1', 'w4']);
    expect(c.parameters.slo_ms).toEqual({ string_value: '100' });
    // Serving workers in GPU order; the starting shadow is only in `placements`.
    expect(c.parameters.share_pct).toEqual({ string_value: '60,40' });
    expect(c.parameters.batch).toEqual({ string_value: '8,16' });
    expect(c.parameters.timeout_ms).toEqual({ string_value: '5,12' });
    const placements = JSON.parse(c.parameters.placements.string_value) as { worker: string; role: string }[];
    expect(placements.map((p) => `${p.worker}:${p.role}`)).toEqual(['w3:active', 'w1:active', 'w4:shadow']);
    const b = modelConfigJson(BERT, []);
    expect(b.input[0]).toMatchObject({ data_type: 'TYPE_INT64', format: 'FORMAT_NONE', dims: [128] });
    expect(b.output[0]).toMatchObject({ data_type: 'TYPE_FP16', label_filename: '' });
    expect(b.parameters.share_pct).toEqual({ string_value: '' });
    expect(b.dynamic_batching).toMatchObject({ preferred_batch_size: [], max_queue_delay_microseconds: 0 });
    expect(b.parameters.image_preprocessing).toBeUndefined();
  });

  it('states the preprocessing of UINT8 and encoded images as a parameter', () => {
    const p = JSON.parse(modelConfigJson(RESNET, []).parameters.image_preprocessing!.string_value) as Record<
      string,
      unknown
    >;
    expect(p).toMatchObject({
      mean: [0.485, 0.456, 0.406],
      std: [0.229, 0.224, 0.225],
      scale: 'x / 255',
      layout: 'CHW (channel-first), RGB',
    });
    expect(p.resize).toContain('shorter side to 224');
    expect(p.resize).toContain('224x224 centre crop');
  });

  /**
   * image_client.py's parse_model (triton-inference-server/client src/python/examples), on inss's metadata and config.
   */
  it("passes image_client.py's parse_model", () => {
    const config = modelConfigJson(RESNET, []);
    const metadata = modelMetadata(RESNET);
    expect(metadata.inputs).toHaveLength(1);
    expect(metadata.outputs).toHaveLength(1);
    expect(config.input).toHaveLength(1);
    expect(metadata.outputs[0]!.datatype).toBe('FP32');
    const batched = config.max_batch_size > 0;
    expect(batched).toBe(true);
    // The output is a vector: past the batch dimension, at most one dimension above 1.
    expect(metadata.outputs[0]!.shape.slice(batched ? 1 : 0).filter((d) => d > 1)).toHaveLength(1);
    expect(metadata.inputs[0]!.shape).toHaveLength(3 + (batched ? 1 : 0));
    expect(['FORMAT_NCHW', 'FORMAT_NHWC']).toContain(config.input[0]!.format);
    const [c, h, w] = metadata.inputs[0]!.shape.slice(1);
    expect([c, h, w]).toEqual(config.input[0]!.dims);
  });
});

describe('repository index', () => {
  it('READY with a serving worker; UNAVAILABLE with the reason otherwise', () => {
    const models = [RESNET, BERT, { ...BERT, name: 'vgg16' }];
    const idx = repositoryIndex(
      models,
      [
        worker({ workerId: 'w1', model: 'resnet50', gpu: 0 }),
        worker({ workerId: 'w2', model: 'bert', gpu: 0, state: 'starting', serving: false }),
      ],
      null,
    );
    expect(idx).toEqual([
      { name: 'resnet50', version: '1', state: 'READY', reason: '' },
      { name: 'bert', version: '1', state: 'UNAVAILABLE', reason: 'no worker ready yet (w2 starting)' },
      {
        name: 'vgg16',
        version: '1',
        state: 'UNAVAILABLE',
        reason: expect.stringContaining('not placed on any GPU') as string,
      },
    ]);
    expect(repositoryIndex([RESNET], [], 'needs 2 GPUs')[0]!.reason).toBe(
      'the policy cannot run on this cluster: needs 2 GPUs',
    );
  });

  it('reads the request body: empty, {"ready": bool}, or a clear error', () => {
    expect(parseIndexRequest(Buffer.alloc(0))).toEqual({ ok: true, readyOnly: false });
    expect(parseIndexRequest(Buffer.from('{"ready":true}'))).toEqual({ ok: true, readyOnly: true });
    expect(parseIndexRequest(Buffer.from('{}'))).toEqual({ ok: true, readyOnly: false });
    const bad = parseIndexRequest(Buffer.from('{"ready":"yes"}'));
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toContain('ready: expected true or false');
    const broken = parseIndexRequest(Buffer.from('{"ready":'));
    expect(!broken.ok && broken.error).toContain('malformed JSON');
  });

  it('resolves names and versions, naming what is served', () => {
    expect(resolveModel([RESNET, BERT], 'bert', undefined)).toEqual({ ok: true, index: 1 });
    expect(resolveModel([RESNET, BERT], 'bert', '1')).toEqual({ ok: true, index: 1 });
    expect(resolveModel([RESNET], 'stats', undefined)).toEqual({
      ok: false,
      error: "unknown model 'stats' (served: resnet50)",
    });
    expect(resolveModel([RESNET], 'resnet50', '2')).toEqual({
      ok: false,
      error: "model 'resnet50' has no version '2' (versions: 1)",
    });
  });
});

describe('compression', () => {
  it('compresses inference answers only on the protocol routes; /metrics and the dashboard as asked', () => {
    for (const infer of ['/v2/models/:name/infer', '/v2/models/:name/versions/:version/infer'])
      expect(compressedRoute(infer)).toBe(true);
    for (const other of [
      '/v2',
      '/v2/models/:name',
      '/v2/models/:name/config',
      '/v2/models/stats',
      '/v2/models/:name/stats',
      '/v2/repository/index',
      '/v2/health/ready',
      '/v2/systemsharedmemory/status',
      '/v2/inss/cluster',
    ]) {
      expect(compressedRoute(other), other).toBe(false);
    }
    expect(compressedRoute('/metrics')).toBe(true);
    expect(compressedRoute('/dashboard/*')).toBe(true);
  });

  it('reads Content-Encoding: identity, gzip, deflate; anything else is named', () => {
    expect(requestCoding(undefined)).toEqual({ ok: true, coding: null });
    expect(requestCoding('identity')).toEqual({ ok: true, coding: null });
    expect(requestCoding('GZIP')).toEqual({ ok: true, coding: 'gzip' });
    expect(requestCoding('deflate')).toEqual({ ok: true, coding: 'deflate' });
    expect(requestCoding('br')).toEqual({
      ok: false,
      error: "Content-Encoding 'br' is not supported (gzip, deflate or identity)",
    });
    expect(requestCoding('gzip, br').ok).toBe(false);
  });

  it('answers with gzip before deflate, honouring q=0', () => {
    expect(responseCoding(undefined)).toBeNull();
    expect(responseCoding('gzip')).toBe('gzip');
    expect(responseCoding('deflate')).toBe('deflate');
    expect(responseCoding('deflate, gzip;q=0.5')).toBe('gzip');
    expect(responseCoding('gzip;q=0, deflate')).toBe('deflate');
    expect(responseCoding('br')).toBeNull();
    expect(responseCoding('*')).toBe('gzip');
    expect(responseCoding('identity')).toBeNull();
  });

  it('decompresses gzip and deflate (zlib format, as tritonclient sends it)', async () => {
    const body = Buffer.from(JSON.stringify({ inputs: [] }));
    expect(await decompress(gzipSync(body), 'gzip', 1000)).toEqual({ ok: true, body });
    expect(await decompress(deflateSync(body), 'deflate', 1000)).toEqual({ ok: true, body });
  });

  it('refuses a body that decompresses beyond the limit (413) and bytes that are not the coding (400)', async () => {
    const bomb = gzipSync(Buffer.alloc(8 * 1024 * 1024)); // 8 MiB of zeros in about 8 KB
    expect(bomb.length).toBeLessThan(64 * 1024);
    const r = await decompress(bomb, 'gzip', 1024 * 1024);
    expect(r).toEqual({
      ok: false,
      status: 413,
      error: 'request body decompresses to more than the limit of 1048576 bytes',
    });
    const inflateBomb = await decompress(deflateSync(Buffer.alloc(4 * 1024 * 1024)), 'deflate', 1024 * 1024);
    expect(inflateBomb.ok === false && inflateBomb.status).toBe(413);
    const junk = await decompress(Buffer.from('{"inputs":[]}'), 'gzip', 1000);
    expect(junk.ok).toBe(false);
    expect(junk.ok === false && junk.status).toBe(400);
    expect(junk.ok === false && junk.error).toContain('not valid gzip data');
  });
});

describe('CUDA shared memory, as a Triton built without GPU support answers it', () => {
  it('status: no regions; unregister (one or all): success; register: 400 saying to use system shared memory', () => {
    expect(cudaSharedMemoryAnswer('status')).toEqual({ status: 200, body: [] });
    expect(cudaSharedMemoryAnswer('unregister')).toEqual({ status: 200, body: undefined });
    expect(cudaSharedMemoryAnswer('unregister', 'output_data')).toEqual({ status: 200, body: undefined });
    const reg = cudaSharedMemoryAnswer('register', 'input_data');
    expect(reg.status).toBe(400);
    expect((reg.body as { error: string }).error).toMatch(
      new RegExp(
        "^failed to register CUDA shared memory region: 'input_data', GPUs not supported: " +
          'CUDA shared memory is not supported by this server; use system shared memory',
      ),
    );
    expect(cudaSharedMemoryAnswer('status', 'input_data').status).toBe(404);
  });
});
