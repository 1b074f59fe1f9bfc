// Prometheus metrics of the scheduler service (prom-client), served at GET /metrics, and the per-model
// counters behind Triton's statistics extension (GET /v2/models/stats, scheduler/triton.ts). One
// registry per service instance (tests run several in one process).
//
// Two families, documented one by one in docs/metrics.md:
// - inss_*: inss's own, in Prometheus conventions (base units, seconds; `_total` for counters);
// - nv_*: Triton's names and semantics where inss has the same quantity (cumulative microsecond
//   durations, request/inference/execution counts, pending requests, GPU utilisation and memory), with
//   Triton's `model` and `version` labels, so dashboards built for Triton graph inss unchanged.
// Every quantity is counted in one place: the control plane reports a finished task once
// (taskFinished) and an executed batch once (batchExecuted); the nv_* views of queue length, queue
// time and GPU readings are derived at scrape time from the inss_* series they mirror.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ControlObserver, TaskOutcome } from './observer.js';
import { histogramSeries, registerDerivedSeries } from './metricsDerived.js';
import { type Duration, MODEL_VERSION, type ModelStats, type WorkerView } from './metricsTypes.js';

export type { TaskOutcome } from './observer.js';
export { type BatchSizeStats, type Duration, MODEL_VERSION, type ModelStats, type WorkerView } from './metricsTypes.js';

/** The outcomes that are answers (a result, possibly after the SLO); the others are failures. */
const SUCCESS: ReadonlySet<TaskOutcome> = new Set<TaskOutcome>(['ok', 'late']);

const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5];

interface Counters {
  lastInferenceMs: number;
  success: Duration;
  fail: Duration;
  computeInfer: Duration;
  executions: number;
  /** batch size -> [executions, compute ns] */
  readonly bySize: Map<number, [number, number]>;
}

export class Metrics implements Partial<ControlObserver> {
  readonly registry = new Registry();
  readonly requests = new Counter({
    name: 'inss_requests_total',
    help: 'Tasks answered, by model and outcome (ok: within SLO; late: answered after the SLO)',
    labelNames: ['model', 'outcome'] as const,
    registers: [this.registry],
  });
  /**
   * Batch samples sent on the direct path, by how: `shm` (a descriptor of a slot of the shared-memory region) or
   * `socket` (the bytes).
   */
  readonly directSamplesTotal = new Counter({
    name: 'inss_direct_samples_total',
    help:
      'Batch samples sent straight to workers, by path: shm (a descriptor of shared memory) or socket (the bytes ' +
      'in the frame)',
    labelNames: ['path'] as const,
    registers: [this.registry],
  });
  readonly badRequests = new Counter({
    name: 'inss_bad_requests_total',
    help: 'Requests refused before they became tasks (4xx), by model and status',
    labelNames: ['model', 'status'] as const,
    registers: [this.registry],
  });
  readonly latency = new Histogram({
    name: 'inss_task_latency_seconds',
    help: 'Task latency from arrival to answer',
    labelNames: ['model'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  readonly queueTime = new Histogram({
    name: 'inss_task_queue_seconds',
    help: 'Time a task waited in the task buffer before its batch was sent',
    labelNames: ['model'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  readonly computeTime = new Histogram({
    name: 'inss_batch_compute_seconds',
    help: 'Batch execution time reported by the worker',
    labelNames: ['model'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  readonly transportTime = new Histogram({
    name: 'inss_batch_transport_seconds',
    help:
      'Time a batch spent outside its worker: scheduler to agent to worker and back, less the time the worker ' +
      'reports',
    labelNames: ['model'] as const,
    buckets: LATENCY_BUCKETS_S,
    registers: [this.registry],
  });
  readonly batchSize = new Histogram({
    name: 'inss_batch_size',
    help: 'Tasks per dispatched batch',
    labelNames: ['model'] as const,
    buckets: [1, 2, 4, 8, 12, 16, 24, 32, 48, 64],
    registers: [this.registry],
  });
  readonly queueLength = new Gauge({
    name: 'inss_queue_length',
    help: 'Tasks waiting in the task buffer',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  readonly arrivalRate = new Gauge({
    name: 'inss_arrival_rate_per_second',
    help: "The monitor's arrival-rate estimate",
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  readonly sloAttainment = new Gauge({
    name: 'inss_slo_attainment_ratio',
    help: 'Tasks answered within their SLO over all tasks finished in the last epoch',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  readonly gpuShare = new Gauge({
    name: 'inss_gpu_share_percent',
    help: 'Sum of the MPS shares of the serving workers on a GPU',
    labelNames: ['gpu'] as const,
    registers: [this.registry],
  });
  readonly gpuMemory = new Gauge({
    name: 'inss_gpu_memory_mb',
    help:
      'GPU memory: predicted by the latency model for the placements (source=predicted) or read by the agent ' +
      '(source=measured)',
    labelNames: ['gpu', 'source'] as const,
    registers: [this.registry],
  });
  readonly gpuUtil = new Gauge({
    name: 'inss_gpu_utilisation_percent',
    help: 'GPU utilisation read by the agent (nvidia-smi)',
    labelNames: ['gpu'] as const,
    registers: [this.registry],
  });
  readonly workerLatency = new Gauge({
    name: 'inss_worker_batch_latency_seconds',
    help:
      "Mean batch latency a worker reported over the agent's last telemetry interval (batches sent on the direct " +
      "path: over the scheduler's last epoch)",
    labelNames: ['worker', 'model', 'gpu'] as const,
    registers: [this.registry],
  });
  readonly agents = new Gauge({
    name: 'inss_agents_connected',
    help: 'Agents connected to the hub',
    registers: [this.registry],
  });
  readonly workers = new Gauge({
    name: 'inss_workers',
    help: 'Workers by state',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  readonly swaps = new Counter({
    name: 'inss_shadow_swaps_total',
    help: 'Shadow-process swaps completed (a new worker took over from an old one)',
    registers: [this.registry],
  });
  readonly decisions = new Counter({
    name: 'inss_decisions_total',
    help: 'Policy decisions',
    registers: [this.registry],
  });

  // ---- Triton's names (docs/metrics.md maps each to Triton's definition) ----
  private readonly nvSuccess = new Counter({
    name: 'nv_inference_request_success',
    help: 'Successful inference requests (answered with a result, within the SLO or late)',
    labelNames: ['model', 'version'] as const,
    registers: [this.registry],
  });
  private readonly nvFailure = new Counter({
    name: 'nv_inference_request_failure',
    help:
      'Failed inference requests, by reason (dropped_slo, dropped_queue_full, not_deployed, worker_failed, ' +
      'shutdown, bad_input)',
    labelNames: ['model', 'version', 'reason'] as const,
    registers: [this.registry],
  });
  private readonly nvCount = new Counter({
    name: 'nv_inference_count',
    help: 'Inferences performed (one per answered request: inss requests carry one sample)',
    labelNames: ['model', 'version'] as const,
    registers: [this.registry],
  });
  private readonly nvExecCount = new Counter({
    name: 'nv_inference_exec_count',
    help: 'Model executions (batches run by a worker)',
    labelNames: ['model', 'version'] as const,
    registers: [this.registry],
  });
  private readonly nvRequestDuration = new Counter({
    name: 'nv_inference_request_duration_us',
    help: 'Cumulative end-to-end request duration (success and failure), microseconds',
    labelNames: ['model', 'version'] as const,
    registers: [this.registry],
  });
  private readonly nvComputeInfer = new Counter({
    name: 'nv_inference_compute_infer_duration_us',
    help: "Cumulative compute time of requests: each request counts its batch's worker-reported time, microseconds",
    labelNames: ['model', 'version'] as const,
    registers: [this.registry],
  });
  private readonly counters = new Map<string, Counters>();
  private workerSource: () => readonly WorkerView[] = () => [];

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'inss_process_' });
    registerDerivedSeries(this.registry, {
      queueTime: this.queueTime,
      queueLength: this.queueLength,
      gpuUtil: this.gpuUtil,
      gpuMemory: this.gpuMemory,
      workers: () => this.workerSource(),
    });
  }

  /** The shared-memory region's slots in use (request bodies held), read at each scrape; absent: no region. */
  setShmSource(source: () => { slots: number; bytes: number }): void {
    new Gauge({
      name: 'inss_shm_slots_in_use',
      help:
        "Request bodies held in the shared-memory region's slots (freed once each task is answered and its " +
        'exchange ended)',
      registers: [this.registry],
      collect() {
        this.set(source().slots);
      },
    });
  }

  /** Where inss_model_share_percent and inss_model_batch_size read the workers (the control plane's view). */
  setWorkerSource(source: () => readonly WorkerView[]): void {
    this.workerSource = source;
  }

  private countersOf(model: string): Counters {
    let c = this.counters.get(model);
    if (!c) {
      c = {
        lastInferenceMs: 0,
        success: { count: 0, ns: 0 },
        fail: { count: 0, ns: 0 },
        computeInfer: { count: 0, ns: 0 },
        executions: 0,
        bySize: new Map(),
      };
      this.counters.set(model, c);
    }
    return c;
  }

  /** A task ended (the control plane calls this once per accepted task): `seconds` from arrival to answer. */
  taskFinished(model: string, outcome: TaskOutcome, seconds: number, nowMs = Date.now()): void {
    const c = this.countersOf(model);
    const labels = { model, version: MODEL_VERSION };
    this.requests.inc({ model, outcome });
    this.nvRequestDuration.inc(labels, seconds * 1e6);
    c.lastInferenceMs = nowMs;
    if (SUCCESS.has(outcome)) {
      this.latency.observe({ model }, seconds);
      c.success.count += 1;
      c.success.ns += seconds * 1e9;
      this.nvSuccess.inc(labels);
      this.nvCount.inc(labels);
    } else {
      c.fail.count += 1;
      c.fail.ns += seconds * 1e9;
      this.nvFailure.inc({ ...labels, reason: outcome });
    }
  }

  /** A worker answered a batch of `size` tasks, reporting `seconds` of execution. */
  batchExecuted(model: string, size: number, seconds: number): void {
    const c = this.countersOf(model);
    this.computeTime.observe({ model }, seconds);
    c.executions += 1;
    c.computeInfer.count += size;
    c.computeInfer.ns += seconds * 1e9 * size;
    const s = c.bySize.get(size) ?? [0, 0];
    s[0] += 1;
    s[1] += seconds * 1e9;
    c.bySize.set(size, s);
    this.nvExecCount.inc({ model, version: MODEL_VERSION });
    this.nvComputeInfer.inc({ model, version: MODEL_VERSION }, seconds * 1e6 * size);
  }

  // ---- the control plane's events (scheduler/observer.ts) ----

  queueChanged(model: string, tasks: number): void {
    this.queueLength.set({ model }, tasks);
  }

  batchSent(model: string, size: number, waitedSeconds: readonly number[]): void {
    this.batchSize.observe({ model }, size);
    for (const s of waitedSeconds) this.queueTime.observe({ model }, s);
  }

  /** A batch went on the direct path with `shm` samples by descriptor and `inline` by their bytes. */
  directSamples(shm: number, inline: number): void {
    if (shm > 0) this.directSamplesTotal.inc({ path: 'shm' }, shm);
    if (inline > 0) this.directSamplesTotal.inc({ path: 'socket' }, inline);
  }

  batchTransported(model: string, seconds: number): void {
    this.transportTime.observe({ model }, seconds);
  }

  agentCount(n: number): void {
    this.agents.set(n);
  }

  gpuMeasured(gpu: number, utilPct: number | null, memUsedMb: number | null): void {
    if (utilPct !== null) this.gpuUtil.set({ gpu: String(gpu) }, utilPct);
    if (memUsedMb !== null) this.gpuMemory.set({ gpu: String(gpu), source: 'measured' }, memUsedMb);
  }

  workerLatencyMeasured(workerId: string, model: string, gpu: number, seconds: number): void {
    this.workerLatency.set({ worker: workerId, model, gpu: String(gpu) }, seconds);
  }

  decided(): void {
    this.decisions.inc();
  }

  epochObserved(model: string, ratePerS: number, sloAttainment: number | null): void {
    this.arrivalRate.set({ model }, ratePerS);
    if (sloAttainment !== null) this.sloAttainment.set({ model }, sloAttainment);
  }

  swapCompleted(): void {
    this.swaps.inc();
  }

  gpuPredicted(gpu: number, sharePct: number, memMb: number): void {
    this.gpuShare.set({ gpu: String(gpu) }, sharePct);
    this.gpuMemory.set({ gpu: String(gpu), source: 'predicted' }, memMb);
  }

  workerStatesCounted(counts: Readonly<Record<string, number>>): void {
    for (const [state, n] of Object.entries(counts)) this.workers.set({ state }, n);
  }

  /** Triton's statistics of one model since the service started. */
  async modelStats(model: string): Promise<ModelStats> {
    const c = this.countersOf(model);
    const [queueSum, queueCount] = await Promise.all([
      histogramSeries(this.queueTime, '_sum'),
      histogramSeries(this.queueTime, '_count'),
    ]);
    return {
      lastInferenceMs: c.lastInferenceMs,
      inferenceCount: c.success.count,
      executionCount: c.executions,
      success: { ...c.success },
      fail: { ...c.fail },
      queue: { count: queueCount.get(model) ?? 0, ns: (queueSum.get(model) ?? 0) * 1e9 },
      computeInfer: { ...c.computeInfer },
      batches: [...c.bySize.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([batchSize, [count, computeNs]]) => ({ batchSize, count, computeNs })),
    };
  }

  /** The names of every metric this registry serves (the Grafana dashboard test checks its queries against them). */
  metricNames(): string[] {
    return this.registry.getMetricsAsArray().flatMap((m) => {
      const type = (m as unknown as { type: string }).type;
      if (type === 'histogram') return [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`];
      if (type === 'summary') return [m.name, `${m.name}_sum`, `${m.name}_count`];
      return [m.name];
    });
  }
}
