// The scheduler's side of its front doors (docs/front-doors.md): the doors' link (scheduler/linkHub.ts, path
// /doors, the agents' tokens and TLS), each door's slot (the scheduler is door 0; a door keeps its slot by its id
// across reconnects), every GPU's door by the rule of src/serving/frontDoors.ts (`assignDoors`, as in the twin;
// when a door joins, every GPU is placed again over the doors alive, so that it gets its share),
// and each door's table (src/protocol/door.ts), pushed when it changes. A door's load reports go to the control
// plane (the planner sees the whole cluster's load). A door whose link drops (killed, cut off past the
// heartbeats) is dead: its GPUs go to the doors left by the same rule and every door left gets its new table.
import type { Logger } from 'pino';
import { DOOR_PROTOCOL_VERSION, type DoorTable, type FromDoor, FromDoorSchema } from '../src/protocol/door.js';
import { assignDoors, MAX_FRONT_DOORS } from '../src/serving/frontDoors.js';
import type { Control } from './control.js';
import { LinkHub, linkSpec } from './linkHub.js';

export const DOOR_PATH = '/doors';

/** How often the table is recomputed and pushed where it changed (ms). */
const PUSH_MS = 100;

const DOOR_LINK = linkSpec<FromDoor>(
  DOOR_PATH,
  'front door',
  'doorId',
  DOOR_PROTOCOL_VERSION,
  FromDoorSchema,
  (h) => h.doorId,
);

interface Slot {
  readonly id: string;
  url: string;
  grpc: string | undefined;
  alive: boolean;
}

export class DoorDesk {
  readonly hub: LinkHub<FromDoor>;
  private readonly slots: Slot[];
  /** `${agentId}/${localGpu}` -> its door. */
  private readonly gpuDoor = new Map<string, number>();
  private readonly pushed = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private control: Control | null = null;

  constructor(
    token: string | null,
    tokens: ReadonlyMap<string, string>,
    private readonly log: Logger,
    heartbeatMs: number | undefined,
    /** Called with every new table (the scheduler's own forwarding, scheduler/doorRoute.ts). */
    private readonly changed: (t: Omit<DoorTable, 'v' | 'type'>) => void,
  ) {
    this.hub = new LinkHub(DOOR_LINK, token, log, tokens, heartbeatMs);
    this.slots = [{ id: '', url: 'http://127.0.0.1', grpc: undefined, alive: true }];
  }

  /** The door of an agent's GPU (one without a door yet is the scheduler's). */
  doorOf(agentId: string, localGpu: number): number {
    return this.gpuDoor.get(`${agentId}/${localGpu}`) ?? 0;
  }

  /** Takes doors from now on; `selfUrl` and `selfGrpc`: where doors forward to the scheduler. */
  start(control: Control, selfUrl: string, selfGrpc?: string): void {
    this.control = control;
    this.slots[0]!.url = selfUrl;
    this.slots[0]!.grpc = selfGrpc;
    this.hub.start({
      hello: (id, m) => {
        let slot = this.slots.findIndex((s) => s.id === id);
        if (slot < 0 && this.slots.length >= MAX_FRONT_DOORS)
          return this.log.error({ door: id }, `more than ${MAX_FRONT_DOORS} front doors; this one gets no workers`);
        if (slot < 0) slot = this.slots.push({ id, url: m.url, grpc: m.grpc, alive: true }) - 1;
        this.slots[slot]!.url = m.url;
        this.slots[slot]!.grpc = m.grpc;
        this.slots[slot]!.alive = true;
        this.pushed.delete(id);
        // A door that joins gets its share: every GPU is placed again by the rule, over the doors alive.
        this.gpuDoor.clear();
        this.log.info({ door: id, index: slot, url: m.url }, 'front door registered');
        this.push();
      },
      message: (_id, m) => control.doorLoad(m),
      closed: (id) => {
        const slot = this.slots.find((s) => s.id === id);
        if (slot) slot.alive = false;
        this.log.warn({ door: id }, 'front door lost: its GPUs and workers go to the doors left');
        this.push();
      },
    });
    this.push();
    this.timer = setInterval(() => this.push(), PUSH_MS).unref();
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.hub.close('scheduler shutting down');
  }

  /** Places every GPU with workers on a door alive (`assignDoors`), then pushes each door its table if it changed. */
  private push(): void {
    const control = this.control;
    // No door ever joined: every GPU is the scheduler's, and there is no table to push.
    if (!control || this.slots.length === 1) return;
    const now = control.doorRows((a, g) => this.gpuDoor.get(`${a}/${g}`) ?? -1);
    const gpus = now.agents.flatMap((a) =>
      a.gpus.map((g) => {
        const key = `${a.agentId}/${g.index}`;
        const on = now.workers.filter((w) => w.wanted && w.agentId === a.agentId && w.gpu === g.index);
        return { key, models: on.map((w) => control.modelIndex(w.model)), door: this.gpuDoor.get(key) ?? -1 };
      }),
    );
    const doors = assignDoors(
      gpus,
      this.slots.length,
      this.slots.map((s) => s.alive),
    );
    let moved = false;
    gpus.forEach((g, i) => {
      if (doors[i]! < 0 || doors[i] === g.door) return;
      moved = true;
      this.gpuDoor.set(g.key, doors[i]!);
    });
    if (moved) control.dispatchAll();
    const rows = control.doorRows((a, g) => this.doorOf(a, g));
    const peer = (s: Slot, index: number) => ({
      index,
      id: s.id || 'scheduler',
      url: s.url,
      ...(s.grpc ? { grpc: s.grpc } : {}),
    });
    const alive = this.slots.flatMap((s, index) => (s.alive ? [peer(s, index)] : []));
    const table = { door: 0, doors: alive, ...rows };
    this.changed(table);
    this.slots.forEach((s, door) => {
      if (door === 0 || !s.alive) return;
      const msg: DoorTable = { v: DOOR_PROTOCOL_VERSION, type: 'table', ...table, door };
      const text = JSON.stringify(msg);
      if (this.pushed.get(s.id) === text) return;
      if (this.hub.send(s.id, msg)) this.pushed.set(s.id, text);
    });
  }
}
