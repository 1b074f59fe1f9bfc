// The series of /metrics derived at scrape time from others (one count, two names): Triton's nv_*
// views of queue time, queue length and GPU readings, and the per-worker share and batch gauges read
// from the control plane's view. Registered once by the Metrics constructor (scheduler/metrics.ts).
import { Counter, Gauge, type Histogram, type Registry } from 'prom-client';
import { MODEL_VERSION, type WorkerView } from './metricsTypes.js';

const MIB = 1024 * 1024;

/** prom-client's `get()` values of a histogram's `_sum` or `_count` series, by model label. */
export async function histogramSeries(h: Histogram<'model'>, suffix: '_sum' | '_count'): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const v of (await h.get()).values) {
    if (v.metricName?.endsWith(suffix) && typeof v.labels.model === 'string') out.set(v.labels.model, v.value);
  }
  return out;
}

/** What the derived series read: the inss_* series they mirror, and the workers in force. */
export interface DerivedSources {
  readonly queueTime: Histogram<'model'>;
  readonly queueLength: Gauge<'model'>;
  readonly gpuUtil: Gauge<'gpu'>;
  readonly gpuMemory: Gauge<'gpu' | 'source'>;
  readonly workers: () => readonly WorkerView[];
}

/** Registers the derived series on `registry`, in the order /metrics lists them. */
export function registerDerivedSeries(registry: Registry, from: DerivedSources): void {
  const queueTime = from.queueTime;
  const queueLength = from.queueLength;
  const gpuUtil = from.gpuUtil;
  const gpuMemory = from.gpuMemory;
  const workersOf = from.workers;
  // Derived at scrape time from the series they mirror (one count, two names): Triton's per-model
  // series, each reset and refilled from its inss_* source at every scrape.
  const perModel = (
    name: string,
    help: string,
    type: typeof Counter | typeof Gauge,
    read: () => Promise<Map<string, number>>,
  ) =>
    new (type as typeof Gauge)({
      name,
      help,
      labelNames: ['model', 'version'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const [model, value] of await read()) this.inc({ model, version: MODEL_VERSION }, value);
      },
    });
  perModel(
    'nv_inference_queue_duration_us',
    'Cumulative time requests waited in the task buffer, microseconds',
    Counter,
    async () => new Map([...(await histogramSeries(queueTime, '_sum'))].map(([m, s]) => [m, s * 1e6])),
  );
  perModel(
    'nv_inference_pending_request_count',
    'Requests waiting in the task buffer (not yet sent to a worker)',
    Gauge,
    async () =>
      new Map(
        (await queueLength.get()).values.flatMap((v) =>
          typeof v.labels.model === 'string' ? [[v.labels.model, v.value] as const] : [],
        ),
      ),
  );
  const perGpu = (name: string, help: string, from: Gauge<'gpu'> | Gauge<'gpu' | 'source'>, scale: number) =>
    new Gauge({
      name,
      help,
      labelNames: ['gpu'] as const,
      registers: [registry],
      async collect() {
        this.reset();
        for (const v of (await from.get()).values)
          if (
            v.labels.gpu !== undefined &&
            ((v.labels as Partial<Record<string, string | number>>).source ?? 'measured') === 'measured'
          )
            this.set({ gpu: String(v.labels.gpu) }, v.value * scale);
      },
    });
  perGpu(
    'nv_gpu_utilization',
    'GPU utilisation read by the agent, 0.0 to 1.0 (gpu: the cluster GPU index)',
    gpuUtil,
    1 / 100,
  );
  perGpu(
    'nv_gpu_memory_used_bytes',
    'GPU memory used, read by the agent, bytes (gpu: the cluster GPU index)',
    gpuMemory,
    MIB,
  );
  const perWorker = (name: string, help: string, value: (w: WorkerView) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['model', 'gpu', 'worker', 'role'] as const,
      registers: [registry],
      collect() {
        this.reset();
        for (const w of workersOf())
          this.set({ model: w.model, gpu: String(w.gpu), worker: w.workerId, role: w.role }, value(w));
      },
    });
  perWorker(
    'inss_model_share_percent',
    'MPS share in force of each worker of a model (role: active, shadow or retiring; 100 on a timeshare GPU)',
    (w) => w.pct,
  );
  perWorker('inss_model_batch_size', 'Batch size in force of each worker of a model', (w) => w.batch);
}
