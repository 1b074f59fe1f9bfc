// The project's SQLite store (better-sqlite3): training runs now; cluster state, placements and
// decision history as the scheduler service grows. One file per installation (default
// ~/.inss/inss.db, or --state-dir); ':memory:' for tests. Schema changes are numbered migrations
// applied in order inside a transaction, recorded in `user_version`.
import Database from 'better-sqlite3';
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
];

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

export class Store {
  private readonly db: Database.Database;

  constructor(path: string) {
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
    this.db = new Database(path);
    this.db.pragma('journal_mode = WAL');
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
      .prepare(`INSERT INTO training_runs (scenario, seed, settings_json, started_at, status, out_dir) VALUES (?, ?, ?, ?, 'running', ?)`)
      .run(r.scenario, r.seed, JSON.stringify(r.settings), r.nowIso, r.outDir);
    return Number(info.lastInsertRowid);
  }

  updateTrainingProgress(id: number, episodesDone: number): void {
    this.db.prepare(`UPDATE training_runs SET episodes_done = ? WHERE id = ?`).run(episodesDone, id);
  }

  finishTrainingRun(id: number, r: { status: 'finished' | 'interrupted' | 'failed'; final: unknown; policyPath: string | null; nowIso: string }): void {
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

  close(): void {
    this.db.close();
  }
}
