// Prometheus metrics of the scheduler service (prom-client), served at GET /metrics. One registry per
// service instance (tests run several in one process). Names follow Prometheus conventions: base
// units (seconds), `_total` for counters.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** What became of a task: the `outcome` label of inss_requests_total. */
export type TaskOutcome = 'ok' | 'late' | 'dropped_slo' | 'not_deployed' | 'worker_failed' | 'shutdown';

const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.02, 0.03, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5];

export class Metrics {
  readonly registry = new Registry();
  readonly requests = new Counter({ name: 'inss_requests_total', help: 'Tasks answered, by model and outcome (ok: within SLO; late: answered after the SLO)', labelNames: ['model', 'outcome'] as const, registers: [this.registry] });
  readonly badRequests = new Counter({ name: 'inss_bad_requests_total', help: 'Requests refused before they became tasks (4xx), by model and status', labelNames: ['model', 'status'] as const, registers: [this.registry] });
  readonly latency = new Histogram({ name: 'inss_task_latency_seconds', help: 'Task latency from arrival to answer', labelNames: ['model'] as const, buckets: LATENCY_BUCKETS_S, registers: [this.registry] });
  readonly queueTime = new Histogram({ name: 'inss_task_queue_seconds', help: 'Time a task waited in the task buffer before its batch was sent', labelNames: ['model'] as const, buckets: LATENCY_BUCKETS_S, registers: [this.registry] });
  readonly computeTime = new Histogram({ name: 'inss_batch_compute_seconds', help: 'Batch execution time reported by the worker', labelNames: ['model'] as const, buckets: LATENCY_BUCKETS_S, registers: [this.registry] });
  readonly transportTime = new Histogram({ name: 'inss_batch_transport_seconds', help: 'Time a batch spent outside its worker: scheduler to agent to worker and back, less the time the worker reports', labelNames: ['model'] as const, buckets: LATENCY_BUCKETS_S, registers: [this.registry] });
  readonly batchSize = new Histogram({ name: 'inss_batch_size', help: 'Tasks per dispatched batch', labelNames: ['model'] as const, buckets: [1, 2, 4, 8, 12, 16, 24, 32], registers: [this.registry] });
  readonly queueLength = new Gauge({ name: 'inss_queue_length', help: 'Tasks waiting in the task buffer', labelNames: ['model'] as const, registers: [this.registry] });
  readonly arrivalRate = new Gauge({ name: 'inss_arrival_rate_per_second', help: "The monitor's arrival-rate estimate", labelNames: ['model'] as const, registers: [this.registry] });
  readonly sloAttainment = new Gauge({ name: 'inss_slo_attainment_ratio', help: 'Tasks answered within their SLO over all tasks finished in the last epoch', labelNames: ['model'] as const, registers: [this.registry] });
  readonly gpuShare = new Gauge({ name: 'inss_gpu_share_percent', help: 'Sum of the MPS shares of the serving workers on a GPU', labelNames: ['gpu'] as const, registers: [this.registry] });
  readonly gpuMemory = new Gauge({ name: 'inss_gpu_memory_mb', help: 'GPU memory: predicted by the latency model for the placements (source=predicted) or read by the agent (source=measured)', labelNames: ['gpu', 'source'] as const, registers: [this.registry] });
  readonly gpuUtil = new Gauge({ name: 'inss_gpu_utilisation_percent', help: 'GPU utilisation read by the agent (nvidia-smi)', labelNames: ['gpu'] as const, registers: [this.registry] });
  readonly workerLatency = new Gauge({ name: 'inss_worker_batch_latency_seconds', help: "Mean batch latency a worker reported over the agent's last telemetry interval", labelNames: ['worker', 'model', 'gpu'] as const, registers: [this.registry] });
  readonly agents = new Gauge({ name: 'inss_agents_connected', help: 'Agents connected to the hub', registers: [this.registry] });
  readonly workers = new Gauge({ name: 'inss_workers', help: 'Workers by state', labelNames: ['state'] as const, registers: [this.registry] });
  readonly swaps = new Counter({ name: 'inss_shadow_swaps_total', help: 'Shadow-process swaps completed (a new worker took over from an old one)', registers: [this.registry] });
  readonly decisions = new Counter({ name: 'inss_decisions_total', help: 'Policy decisions', registers: [this.registry] });

  constructor() {
    collectDefaultMetrics({ register: this.registry, prefix: 'inss_process_' });
  }
}
