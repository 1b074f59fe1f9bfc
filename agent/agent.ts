// The node agent: connects to the scheduler's WebSocket hub, says which GPUs it has, and reconciles its
// workers toward the scheduler's desired set (toward a goal state, as Ray Serve's deployment state does).
// - Workers are reconciled by their whole identity (id, model, GPU, share, generation;
//   src/protocol/agent.ts): a running worker whose identity differs from every desired one is drained and
//   stopped, never reused for another model, GPU or share. Desired workers that do not run are started;
//   one that dies while still desired is restarted with backoff (its batches in flight get `worker-failed`).
// - Workers that are no longer desired stop taking batches, finish the ones they hold and get SIGTERM.
//   The scheduler orders a shadow swap by desiring the new worker beside the old one and dropping the
//   old one only once the new one is ready (scheduler/control.ts, src/serving/workerSet.ts).
// - Batches for a worker that is not running (retired, restarting, unknown) are answered at once with a
//   `batchError` saying so; the scheduler requeues those tasks. A batch whose identity is not that of the
//   worker it names is refused with `wrong-worker`: it never reaches a process running another model.
// - When the scheduler goes away, or is silent for `LOST_AFTER_BEATS` of the beats its `welcome` gives
//   (agent/connect.ts), the workers keep running and the agent reconnects with exponential backoff;
//   its `hello` lists the workers it still runs.
// - The data path (docs/serving.md, "The path of a batch"): each worker is started with a data socket
//   (a Unix socket in a private directory, or TCP for a scheduler on another host), a secret and its
//   identity; once it is ready the agent reports them to the scheduler, which then sends batches
//   straight to the worker. The agent stays the control plane; it relays batches for a worker without one.
// On simulated GPUs the agent is the GPU: it tells each simulated worker which batches run beside its own
// (`running`), the state a real GPU would hold (on the direct path the scheduler fills `running` itself).
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { LinkClient } from './linkClient.js';
import {
  AGENT_PROTOCOL_VERSION,
  type DataEndpoint,
  type DesiredWorker,
  type FromAgent,
  type ToAgent,
  ToAgentSchema,
  type WorkerIdentity,
  workerKey,
  type WorkerStatus,
} from '../src/protocol/agent.js';
import type { TensorRef } from '../src/protocol/tensor.js';
import type { AgentOptions } from './agentOptions.js';
import { routeBatch, runningBeside } from './batchRoute.js';
import { type Managed, managedWorker, restartDelayMs } from './managedWorker.js';
import { reportedEndpoint, workerDataEnv } from './dataSocket.js';
import { type WorkerLaunch, WorkerProcess } from './workerProcess.js';

export class Agent extends EventEmitter<{ connected: []; disconnected: []; workers: [WorkerStatus[]] }> {
  readonly agentId: string;
  private link: LinkClient<ToAgent> | null = null;
  private desired = new Map<string, DesiredWorker>();
  private readonly workers = new Map<string, Managed>();
  private closed = false;
  private timers: NodeJS.Timeout[] = [];
  private readonly log: Logger;
  /** The private directory of the workers' Unix data sockets (dataPath 'unix'), made on first use. */
  private socketDir: string | null = null;

  constructor(private readonly opts: AgentOptions) {
    super();
    this.agentId = opts.agentId ?? hostname();
    this.log = opts.logger.child({ agent: this.agentId });
  }

  /** The environment that gives a worker its data socket, secret and identity (none for dataPath 'off'). */
  private dataEnv(spec: DesiredWorker, secret: string): Record<string, string> {
    return workerDataEnv(
      this.opts.dataPath ?? 'unix',
      // mode 0700: only this user reaches the sockets
      () => (this.socketDir ??= mkdtempSync(join(tmpdir(), 'inss-data-'))),
      spec,
      secret,
    );
  }

  /** The data endpoint to report for a worker's `ready` address (undefined: batches go through the agent). */
  private endpoint(listen: string, secret: string): DataEndpoint | undefined {
    const e = reportedEndpoint(this.opts.dataPath ?? 'unix', listen, secret);
    if (typeof e !== 'string') return e;
    this.log.warn(
      { listen, err: e },
      'a worker reported a data socket address that is not one; batches go through the agent',
    );
    return undefined;
  }

  start(): void {
    this.connect();
    this.timers.push(setInterval(() => this.reconcile(), 250));
    this.timers.push(setInterval(() => void this.telemetry(), this.opts.telemetryMs ?? 1000));
  }

  /** Stops every worker and the connection. */
  async stop(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.link?.stop();
    await Promise.all([...this.workers.values()].map((w) => w.proc.stop()));
    this.workers.clear();
    if (this.socketDir) rmSync(this.socketDir, { recursive: true, force: true });
  }

  /**
   * A GPU's MPS server failed: its workers cannot recover (MPS clients of a failed server must exit).
   * Kills them; their batches in flight are answered with `worker-failed` and `why`; the reconcile
   * loop starts them again (with backoff) once the caller has restarted the daemon.
   */
  failGpu(gpu: number, why: string): void {
    for (const w of this.workers.values()) {
      if (w.spec.gpu !== gpu) continue;
      this.log.warn({ worker: w.spec.workerId, gpu, why }, 'killing a worker of a failed GPU');
      w.proc.kill(why);
    }
  }

  /** The workers as the scheduler sees them (for tests and logs). */
  status(): WorkerStatus[] {
    return [...this.workers.values()].map((w) => ({
      ...w.spec,
      state: w.state,
      ...(w.proc.pid !== undefined ? { pid: w.proc.pid } : {}),
      ...(w.message !== undefined ? { message: w.message } : {}),
      ...(w.data && w.state === 'ready' ? { data: w.data } : {}),
    }));
  }

  private connect(): void {
    this.link ??= new LinkClient({
      url: this.opts.schedulerUrl,
      token: this.opts.token,
      ...(this.opts.tls ? { tls: this.opts.tls } : {}),
      log: this.log,
      ...(this.opts.reconnectMinMs !== undefined ? { reconnectMinMs: this.opts.reconnectMinMs } : {}),
      ...(this.opts.reconnectMaxMs !== undefined ? { reconnectMaxMs: this.opts.reconnectMaxMs } : {}),
      schema: ToAgentSchema,
      hello: (): FromAgent => ({
        v: AGENT_PROTOCOL_VERSION,
        type: 'hello',
        agentId: this.agentId,
        hostname: hostname(),
        workerKind: this.opts.workerKind,
        gpus: [...this.opts.gpus],
        workers: this.status(),
      }),
      message: (m, payload) => this.onMessage(m, payload),
      connected: () => this.emit('connected'),
      disconnected: () => this.emit('disconnected'),
    });
    this.link.start();
  }

  private send(msg: FromAgent, payload?: Uint8Array): void {
    this.link?.send(msg, payload);
  }

  private onMessage(m: ToAgent, payload: Buffer): void {
    switch (m.type) {
      case 'desired':
        this.desired = new Map(m.workers.map((w) => [workerKey(w), w]));
        this.reconcile();
        break;
      case 'batch':
        void this.runBatch(
          m.batchId,
          { workerId: m.workerId, model: m.model, gpu: m.gpu, pct: m.pct, generation: m.generation },
          m.size,
          m.inputs,
          payload,
        );
        break;
      case 'error':
        this.log.error({ err: m.message }, 'the scheduler reports an error');
        break;
    }
  }

  private async runBatch(
    batchId: string,
    id: WorkerIdentity,
    size: number,
    inputs: readonly TensorRef[],
    payload: Buffer,
  ): Promise<void> {
    const workerId = id.workerId;
    const route = routeBatch(this.workers, this.desired, id);
    if (route.kind === 'refuse') {
      if (route.reason === 'wrong-worker')
        this.log.warn({ batchId, err: route.message }, 'batch for another worker refused');
      const { reason, message } = route;
      this.send({ v: AGENT_PROTOCOL_VERSION, type: 'batchError', batchId, workerId, reason, message });
      return;
    }
    const w = route.worker;
    const gpu = this.opts.gpus.find((g) => g.index === w.spec.gpu);
    const running = gpu?.simulated ? runningBeside(this.workers.values(), w) : undefined;
    w.busy.set(batchId, size);
    const receivedAt = Date.now();
    const o = await w.proc.run(batchId, w.spec.model, size, inputs, payload, running);
    // Per-batch timing for tracing the transport (docs/serving.md); a no-op unless --log-level debug.
    this.log.debug(
      { batchId, size, receivedAt, answeredAt: Date.now(), workerMs: o.kind === 'result' ? o.latencyMs : null },
      'batch',
    );
    w.busy.delete(batchId);
    if (o.kind === 'result') {
      w.batches++;
      w.latencySumMs += o.latencyMs;
      this.send(
        {
          v: AGENT_PROTOCOL_VERSION,
          type: 'result',
          batchId,
          workerId,
          ...{ latencyMs: o.latencyMs, outputs: [...o.outputs] },
          ...(o.memoryMb !== undefined ? { memoryMb: o.memoryMb } : {}),
        },
        o.payload,
      );
    } else {
      this.send({
        v: AGENT_PROTOCOL_VERSION,
        type: 'batchError',
        batchId,
        workerId,
        reason: o.kind === 'died' ? 'worker-failed' : 'bad-batch',
        message: o.message,
      });
    }
    if (w.state === 'draining' && w.busy.size === 0) void this.retire(w);
  }

  /** One pass of the reconcile loop; cheap, called every 250 ms and on every desired-state message. */
  private reconcile(): void {
    const now = Date.now();
    for (const [key, spec] of this.desired) {
      const w = this.workers.get(key);
      if (!w) this.spawn(spec, 0);
      else if (w.state === 'failed' && now >= w.restartAtMs) this.spawn(spec, w.restarts + 1);
    }
    for (const w of this.workers.values()) {
      const key = workerKey(w.spec);
      if (this.desired.has(key) || w.state === 'draining') continue;
      if (w.state === 'failed') {
        this.workers.delete(key);
        this.reportWorkers();
        continue;
      }
      w.state = 'draining';
      this.reportWorkers();
      if (w.busy.size === 0) void this.retire(w);
    }
  }

  private spawn(spec: DesiredWorker, restarts: number): void {
    const key = workerKey(spec);
    const gpu = this.opts.gpus.find((g) => g.index === spec.gpu);
    if (!gpu) {
      this.workers.set(key, managedWorker(spec, null, restarts, `GPU ${spec.gpu} does not exist on this agent`));
      this.reportWorkers();
      return;
    }
    let launch: WorkerLaunch;
    const secret = randomBytes(16).toString('hex');
    try {
      const base = this.opts.launch(spec, gpu);
      launch = { ...base, env: { ...base.env, ...this.dataEnv(spec, secret) } };
    } catch (e) {
      this.workers.set(key, managedWorker(spec, null, restarts, (e as Error).message));
      this.reportWorkers();
      return;
    }
    const proc = new WorkerProcess(launch);
    const w = managedWorker(spec, proc, restarts);
    w.secret = secret;
    this.workers.set(key, w);
    proc.on('stderr', (line) => this.log.debug({ worker: spec.workerId, line }, 'worker stderr'));
    proc.on('exit', (message) => {
      if (this.workers.get(key) !== w) return;
      if (w.state === 'draining' || this.closed) {
        this.workers.delete(key);
      } else {
        this.log.warn({ worker: spec.workerId, message, restarts: w.restarts }, 'worker exited');
        w.state = 'failed';
        w.message = message;
        w.restartAtMs = Date.now() + restartDelayMs(w.restarts);
      }
      this.reportWorkers();
    });
    proc.start();
    this.reportWorkers();
    proc.ready.then(
      (info) => {
        if (this.workers.get(key) !== w || w.state !== 'starting') return;
        if (info.model !== spec.model) {
          // A launch that started the wrong program: it must never take this worker's batches.
          w.proc.kill(`worker ${spec.workerId} reported model '${info.model}', expected '${spec.model}'`);
          return;
        }
        w.state = 'ready';
        if (info.listen !== undefined) {
          const data = this.endpoint(info.listen, w.secret);
          if (data) w.data = data;
        }
        this.log.info(
          {
            worker: spec.workerId,
            model: spec.model,
            gpu: spec.gpu,
            pct: spec.pct,
            pid: info.pid,
            warmupMs: Math.round(info.warmupMs),
            device: info.device,
            data: w.data?.address ?? 'through the agent',
          },
          'worker ready',
        );
        this.reportWorkers();
      },
      () => undefined, // the exit handler reports it
    );
  }

  private async retire(w: Managed): Promise<void> {
    await w.proc.stop();
    if (this.workers.get(workerKey(w.spec)) === w) this.workers.delete(workerKey(w.spec));
    this.reportWorkers();
  }

  private reportWorkers(): void {
    const s = this.status();
    this.send({ v: AGENT_PROTOCOL_VERSION, type: 'workers', workers: s });
    this.emit('workers', s);
  }

  private async telemetry(): Promise<void> {
    const workers = [...this.workers.values()].map((w) => {
      const r = {
        workerId: w.spec.workerId,
        batches: w.batches,
        meanLatencyMs: w.batches > 0 ? w.latencySumMs / w.batches : null,
      };
      w.batches = 0;
      w.latencySumMs = 0;
      return r;
    });
    const unread = () => this.opts.gpus.map((g) => ({ index: g.index, utilPct: null, memUsedMb: null }));
    let gpus: { index: number; utilPct: number | null; memUsedMb: number | null }[];
    try {
      gpus = this.opts.readGpus ? [...(await this.opts.readGpus())] : unread();
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'reading GPU telemetry failed');
      gpus = unread();
    }
    this.send({ v: AGENT_PROTOCOL_VERSION, type: 'telemetry', gpus, workers });
  }
}
