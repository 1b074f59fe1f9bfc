// A front door's link to its scheduler (`inss frontdoor`, docs/front-doors.md): it says hello with its id and
// the URL its peers forward to, follows each table the scheduler pushes (its control plane's worker set, and where
// requests for models it holds no worker of go, scheduler/doorRoute.ts), and reports every REPORT_MS what it
// served (arrivals and answers per model, batch times) for the planner. While the link is down it keeps serving
// on its last table and reconnects (agent/linkClient.ts, which `inss frontdoor` gives it).
import type { Logger } from 'pino';
import { DOOR_PROTOCOL_VERSION, type DoorLoad, type ToDoor } from '../src/protocol/door.js';
import type { Control } from './control.js';
import type { DoorRoutes } from './doorRoute.js';
import type { ControlObserver, TaskOutcome } from './observer.js';

const REPORT_MS = 250;

type Row = DoorLoad['models'][number];

/** What the door served since its last report, as the control plane's observer sees it. */
export class LoadReport implements Partial<ControlObserver> {
  private rows = new Map<string, Row>();
  private batches: DoorLoad['batches'] = [];

  taskFinished(model: string, outcome: TaskOutcome, seconds: number): void {
    let r = this.rows.get(model);
    if (!r) this.rows.set(model, (r = { model, arrivals: 0, served: 0, violated: 0, dropped: 0, latencySumMs: 0 }));
    r.arrivals += 1;
    if (outcome === 'ok' || outcome === 'late') {
      r.served += 1;
      r.latencySumMs += seconds * 1000;
      if (outcome === 'late') r.violated += 1;
    } else if (outcome === 'dropped_slo' || outcome === 'dropped_queue_full' || outcome === 'worker_failed')
      r.dropped += 1;
  }

  batchExecuted(model: string, _size: number, seconds: number): void {
    this.batches.push({ model, latencyMs: seconds * 1000 });
  }

  /** The report since the last one, and a fresh start; null when nothing happened. */
  take(): DoorLoad | null {
    if (this.rows.size === 0 && this.batches.length === 0) return null;
    const load: DoorLoad = {
      v: DOOR_PROTOCOL_VERSION,
      type: 'load',
      models: [...this.rows.values()],
      batches: this.batches,
    };
    this.rows = new Map();
    this.batches = [];
    return load;
  }
}

/** The door's end of its link to the scheduler's door hub (agent/linkClient.ts, made by `inss frontdoor`). */
export interface SchedulerLink {
  start(): void;
  /** Sends when connected; false when not. */
  send(msg: object): boolean;
  stop(): void;
}

export interface DoorLinkOptions {
  readonly doorId: string;
  /** Makes the link: `hello` is sent on each connection, `message` gets each validated message but `welcome`. */
  readonly connect: (hello: () => object, message: (m: ToDoor) => void) => SchedulerLink;
  /** PEM certificate(s) to trust for https:// peer doors besides the system's. */
  readonly ca?: Buffer;
  readonly log: Logger;
}

export class DoorLink {
  private readonly client: SchedulerLink;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly opts: DoorLinkOptions,
    control: Control,
    routes: DoorRoutes,
    private readonly report: LoadReport,
    selfUrl: string,
    selfGrpc?: string,
  ) {
    this.client = opts.connect(
      () => ({
        v: DOOR_PROTOCOL_VERSION,
        type: 'hello',
        doorId: opts.doorId,
        url: selfUrl,
        ...(selfGrpc ? { grpc: selfGrpc } : {}),
      }),
      (m) => {
        if (m.type === 'error') return opts.log.error({ err: m.message }, 'the scheduler reports an error');
        if (m.type !== 'table') return;
        control.follow(m);
        routes.update(m.door, m.doors, m.workers);
      },
    );
  }

  start(): void {
    this.client.start();
    this.timer = setInterval(() => {
      const load = this.report.take();
      if (load) this.client.send(load);
    }, REPORT_MS).unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.client.stop();
  }
}
