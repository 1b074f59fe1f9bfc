// The project's SQLite store (better-sqlite3): training runs now; cluster state, placements and
// decision history as the scheduler service grows. One file per installation (default
// ~/.inss/inss.db, or --state-dir); ':memory:' for tests. Schema changes are numbered migrations
// applied in order inside a transaction, recorded in `user_version`.
import Database from 'better-sqlite3';
import type { AgentRecord, ControlObserver, DecisionRecord, PlacementRow } from './observer.js';
import { learnerFromJson, type OnlineStatePort } from '../src/policy/online/state.js';
import type { ModelProfile } from '../src/profile/schema.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';

const MIGRATIONS: readonly string[] = [
  `CREATE TABLE training_runs (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     scenario TEXT NOT NULL,
     seed INTEGER NOT NULL,
     settings_json TEXT NOT NULL,
     started_at TEXT NOT NULL,
     finished_at TEXT,
     status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted', 'failed')),
     episodes_done INTEGER NOT NULL DEFAULT 0,
     final_json TEXT,
     policy_path TEXT,
     out_dir TEXT NOT NULL
   )`,
  // The scheduler service: agents and their GPUs, the workers it wants (placements), each decision.
  `CREATE TABLE agents (
     agent_id TEXT PRIMARY KEY,
     hostname TEXT NOT NULL,
     worker_kind TEXT NOT NULL,
     gpus_json TEXT NOT NULL,
     connected INTEGER NOT NULL,
     last_seen TEXT NOT NULL
   );
   CREATE TABLE placements (
     worker_id TEXT PRIMARY KEY,
     agent_id TEXT NOT NULL,
     gpu INTEGER NOT NULL,
     model TEXT NOT NULL,
     pct REAL NOT NULL,
     batch INTEGER NOT NULL,
     role TEXT NOT NULL,
     created_at TEXT NOT NULL
   );
   CREATE TABLE decisions (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     at TEXT NOT NULL,
     policy TEXT NOT NULL,
     rates_json TEXT NOT NULL,
     deployment_json TEXT NOT NULL,
     decide_ms REAL NOT NULL
   );
   CREATE TABLE policies (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     name TEXT NOT NULL,
     source TEXT,
     data_json TEXT,
     loaded_at TEXT NOT NULL
   )`,
  // Online profiling (src/policy/online/): each unprofiled model's learner state per GPU profile.
  `CREATE TABLE online_profiles (
     model TEXT NOT NULL,
     profile_id TEXT NOT NULL,
     state_json TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (model, profile_id)
   )`,
];

export type { PlacementRow } from './observer.js';

export interface TrainingRun {
  readonly id: number;
  readonly scenario: string;
  readonly seed: number;
  readonly settings: unknown;
  readonly startedAt: string;
  readonly finishedAt: string | null;
  readonly status: 'running' | 'finished' | 'interrupted' | 'failed';
  readonly episodesDone: number;
  readonly final: unknown;
  readonly policyPath: string | null;
  readonly outDir: string;
}

interface Row {
  id: number;
  scenario: string;
  seed: number;
  settings_json: string;
  started_at: string;
  finished_at: string | null;
  status: TrainingRun['status'];
  episodes_done: number;
  final_json: string | null;
  policy_path: string | null;
  out_dir: string;
}

const toRun = (r: Row): TrainingRun => ({
  id: r.id,
  scenario: r.scenario,
  seed: r.seed,
  settings: JSON.parse(r.settings_json) as unknown,
  startedAt: r.started_at,
  finishedAt: r.finished_at,
  status: r.status,
  episodesDone: r.episodes_done,
  final: r.final_json === null ? null : (JSON.parse(r.final_json) as unknown),
  policyPath: r.policy_path,
  outDir: r.out_dir,
});

export class Store implements Partial<ControlObserver> {
  private readonly db: Database.Database;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
    // The scheduler writes here on its event loop (a decision a second, agents, placements): in WAL
    // mode NORMAL syncs at checkpoints, not at every commit, and a power loss can lose only the last
    // commits, never corrupt the file (SQLite's documented pairing). On a real disk a commit's fsync
    // could hold every request for milliseconds.
    this.db.pragma('synchronous = NORMAL');
    this.db.pragma('foreign_keys = ON');
    this.migrate();
  }

  private migrate(): void {
    const version = this.db.pragma('user_version', { simple: true }) as number;
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[v]!);
        this.db.pragma(`user_version = ${v + 1}`);
      })();
    }
  }

  /** Records the start of a training run; `nowIso` is passed in (the store reads no clock). */
  startTrainingRun(r: { scenario: string; seed: number; settings: unknown; outDir: string; nowIso: string }): number {
    const info = this.db
      .prepare(
        `INSERT INTO training_runs (scenario, seed, settings_json, started_at, status, out_dir)
         VALUES (?, ?, ?, ?, 'running', ?)`,
      )
      .run(r.scenario, r.seed, JSON.stringify(r.settings), r.nowIso, r.outDir);
    return Number(info.lastInsertRowid);
  }

  updateTrainingProgress(id: number, episodesDone: number): void {
    this.db.prepare(`UPDATE training_runs SET episodes_done = ? WHERE id = ?`).run(episodesDone, id);
  }

  finishTrainingRun(
    id: number,
    r: { status: 'finished' | 'interrupted' | 'failed'; final: unknown; policyPath: string | null; nowIso: string },
  ): void {
    this.db
      .prepare(`UPDATE training_runs SET status = ?, final_json = ?, policy_path = ?, finished_at = ? WHERE id = ?`)
      .run(r.status, JSON.stringify(r.final), r.policyPath, r.nowIso, id);
  }

  /** A run that was interrupted or is resumed goes back to running. */
  reopenTrainingRun(id: number): void {
    this.db.prepare(`UPDATE training_runs SET status = 'running', finished_at = NULL WHERE id = ?`).run(id);
  }

  trainingRun(id: number): TrainingRun | null {
    const row = this.db.prepare(`SELECT * FROM training_runs WHERE id = ?`).get(id) as Row | undefined;
    return row ? toRun(row) : null;
  }

  trainingRuns(): TrainingRun[] {
    return (this.db.prepare(`SELECT * FROM training_runs ORDER BY id`).all() as Row[]).map(toRun);
  }

  /** An agent registered (or reconnected) or went away. */
  upsertAgent(a: {
    agentId: string;
    hostname: string;
    workerKind: string;
    gpus: unknown;
    connected: boolean;
    nowIso: string;
  }): void {
    this.db
      .prepare(
        `INSERT INTO agents (agent_id, hostname, worker_kind, gpus_json, connected, last_seen) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT(agent_id) DO UPDATE SET hostname = excluded.hostname, worker_kind = excluded.worker_kind,
           gpus_json = excluded.gpus_json, connected = excluded.connected, last_seen = excluded.last_seen`,
      )
      .run(a.agentId, a.hostname, a.workerKind, JSON.stringify(a.gpus), a.connected ? 1 : 0, a.nowIso);
  }

  setAgentConnected(agentId: string, connected: boolean, nowIso: string): void {
    this.db
      .prepare(`UPDATE agents SET connected = ?, last_seen = ? WHERE agent_id = ?`)
      .run(connected ? 1 : 0, nowIso, agentId);
  }

  agents(): {
    agentId: string;
    hostname: string;
    workerKind: string;
    gpus: unknown;
    connected: boolean;
    lastSeen: string;
  }[] {
    const rows = this.db.prepare(`SELECT * FROM agents ORDER BY agent_id`).all() as {
      agent_id: string;
      hostname: string;
      worker_kind: string;
      gpus_json: string;
      connected: number;
      last_seen: string;
    }[];
    return rows.map((r) => ({
      agentId: r.agent_id,
      hostname: r.hostname,
      workerKind: r.worker_kind,
      gpus: JSON.parse(r.gpus_json) as unknown,
      connected: r.connected === 1,
      lastSeen: r.last_seen,
    }));
  }

  /** Replaces the recorded placements with the workers the scheduler wants now. */
  replacePlacements(rows: readonly PlacementRow[], nowIso: string): void {
    this.db.transaction(() => {
      this.db.prepare(`DELETE FROM placements`).run();
      const ins = this.db.prepare(
        `INSERT INTO placements (worker_id, agent_id, gpu, model, pct, batch, role, created_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
      );
      for (const r of rows) ins.run(r.workerId, r.agentId, r.gpu, r.model, r.pct, r.batch, r.role, nowIso);
    })();
  }

  placements(): PlacementRow[] {
    const rows = this.db
      .prepare(`SELECT worker_id, agent_id, gpu, model, pct, batch, role FROM placements ORDER BY worker_id`)
      .all() as {
      worker_id: string;
      agent_id: string;
      gpu: number;
      model: string;
      pct: number;
      batch: number;
      role: string;
    }[];
    return rows.map((r) => ({
      workerId: r.worker_id,
      agentId: r.agent_id,
      gpu: r.gpu,
      model: r.model,
      pct: r.pct,
      batch: r.batch,
      role: r.role,
    }));
  }

  recordDecision(d: {
    policy: string;
    ratePerS: readonly number[];
    deployment: unknown;
    decideMs: number;
    nowIso: string;
  }): void {
    this.db
      .prepare(`INSERT INTO decisions (at, policy, rates_json, deployment_json, decide_ms) VALUES (?, ?, ?, ?, ?)`)
      .run(d.nowIso, d.policy, JSON.stringify(d.ratePerS), JSON.stringify(d.deployment), d.decideMs);
  }

  decisions(limit = 100): { at: string; policy: string; ratePerS: number[]; deployment: unknown; decideMs: number }[] {
    const rows = this.db.prepare(`SELECT * FROM decisions ORDER BY id DESC LIMIT ?`).all(limit) as {
      at: string;
      policy: string;
      rates_json: string;
      deployment_json: string;
      decide_ms: number;
    }[];
    return rows.reverse().map((r) => ({
      at: r.at,
      policy: r.policy,
      ratePerS: JSON.parse(r.rates_json) as number[],
      deployment: JSON.parse(r.deployment_json) as unknown,
      decideMs: r.decide_ms,
    }));
  }

  // ---- the control plane's events it records (scheduler/observer.ts); none once the store is closed ----

  agentJoined(a: AgentRecord): void {
    if (this.db.open) this.upsertAgent(a);
  }

  agentLeft(agentId: string, nowIso: string): void {
    if (this.db.open) this.setAgentConnected(agentId, false, nowIso);
  }

  decided(d: DecisionRecord): void {
    if (d.changed && this.db.open) this.recordDecision(d);
  }

  placementsChanged(rows: readonly PlacementRow[], nowIso: string): void {
    if (this.db.open) this.replacePlacements(rows, nowIso);
  }

  /** The policy the service runs (and its trained data, when it has some). */
  recordPolicy(p: { name: string; source: string | null; data: unknown; nowIso: string }): void {
    this.db
      .prepare(`INSERT INTO policies (name, source, data_json, loaded_at) VALUES (?, ?, ?, ?)`)
      .run(p.name, p.source, p.data === undefined ? null : JSON.stringify(p.data), p.nowIso);
  }

  policies(): { name: string; source: string | null; loadedAt: string }[] {
    const rows = this.db.prepare(`SELECT name, source, loaded_at FROM policies ORDER BY id`).all() as {
      name: string;
      source: string | null;
      loaded_at: string;
    }[];
    return rows.map((r) => ({ name: r.name, source: r.source, loadedAt: r.loaded_at }));
  }

  /** The online-profiling state saved for a model on a GPU profile (its JSON text when it does not parse), or null. */
  onlineState(model: string, profileId: string): unknown {
    const row = this.db
      .prepare(`SELECT state_json FROM online_profiles WHERE model = ? AND profile_id = ?`)
      .get(model, profileId) as { state_json: string } | undefined;
    if (!row) return null;
    try {
      return JSON.parse(row.state_json) as unknown;
    } catch {
      // The decorator validates what it is given and starts afresh, saying why (src/policy/online/state.ts).
      return row.state_json;
    }
  }

  saveOnlineState(model: string, profileId: string, state: unknown, nowIso: string): void {
    this.db
      .prepare(
        `INSERT INTO online_profiles (model, profile_id, state_json, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (model, profile_id)
         DO UPDATE SET state_json = excluded.state_json, updated_at = excluded.updated_at`,
      )
      .run(model, profileId, JSON.stringify(state), nowIso);
  }

  /**
   * The profiles fitted online that passed their held-out test, per GPU profile id and model name (for
   * `withLearnedProfiles`, scheduler/clusterView.ts). State that does not validate is left out.
   */
  learnedProfiles(): Map<string, Record<string, ModelProfile>> {
    const rows = this.db.prepare(`SELECT model, profile_id, state_json FROM online_profiles`).all() as {
      model: string;
      profile_id: string;
      state_json: string;
    }[];
    const out = new Map<string, Record<string, ModelProfile>>();
    for (const r of rows) {
      let state;
      try {
        state = learnerFromJson(JSON.parse(r.state_json), `online_profiles ${r.model}/${r.profile_id}`);
      } catch {
        continue;
      }
      if (!state.profile) continue;
      out.set(r.profile_id, { ...out.get(r.profile_id), [r.model]: state.profile });
    }
    return out;
  }

  /** This store as the online-profiling decorator's state port (withOnlineProfiling's `store`). */
  onlineStatePort(nowIso: () => string): OnlineStatePort {
    return {
      load: (model, profileId) => this.onlineState(model, profileId),
      save: (model, profileId, state) => this.saveOnlineState(model, profileId, state, nowIso()),
    };
  }

  close(): void {
    this.db.close();
  }
}
