// `inss train`: trains the TS agent on a scenario, with progress (a bar on a terminal, a line per
// episode elsewhere: cli/progress.ts), checkpoints, resume after
// interruption, training curves (CSV and SVG) and the trained policy file; each run is recorded in
// the SQLite store.
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { initTf, type BackendName } from '../rl/backend.js';
import { type Checkpoint, recordsCsv, type TrainConfig, Trainer } from '../rl/train.js';
import { parseSacSettings } from '../rl/settings.js';
import { lineChart } from '../tools/report/svg.js';
import { scenarioCluster } from '../src/scenario/build.js';
import { formatIssues, InvalidInputError } from '../src/profile/schema.js';
import { Store } from '../scheduler/store.js';
import { readJsonFile } from './profiles.js';
import { startProgress } from './progress.js';
import { loadScenario } from './scenarios.js';

export interface TrainCliOptions {
  readonly scenario: string;
  readonly episodes: number;
  readonly steps?: number;
  readonly seed: number;
  readonly out: string;
  readonly resume?: boolean;
  readonly settings?: string;
  readonly checkpointEvery: number;
  readonly stateDir?: string;
  readonly backend?: BackendName;
  readonly quiet?: boolean;
  readonly noInterference?: boolean;
}

/**
 * Defaults of the training recipe (docs/inss.md, "Training fast"): Table 1's values except where
 * learning in minutes on a 2-core machine needs otherwise, each stated there with its reason.
 */
export const TRAIN_RECIPE = {
  hidden: [256, 128],
  lrQ: 1e-3,
  lrActor: 3e-4,
  lrAlpha: 1e-3,
  initialTemperature: 0.2,
  gamma: 0.9,
} as const;

const CheckpointSchema = z
  .object({
    format: z.literal('inss-train-checkpoint/1'),
    config: z.unknown(),
    episodesDone: z.number().int().min(0),
    records: z.array(z.unknown()),
    agent: z.unknown(),
  })
  .loose();

function writeAtomic(path: string, text: string): void {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

export async function runTrain(opts: TrainCliOptions, argv: readonly string[]): Promise<number> {
  const loaded = loadScenario(opts.scenario);
  const cluster = scenarioCluster(loaded.scenario, loaded.profiles);
  const out = resolve(opts.out);
  mkdirSync(out, { recursive: true });
  const ckptPath = join(out, 'checkpoint.json');
  let resume: Checkpoint | undefined;
  if (opts.resume) {
    if (!existsSync(ckptPath)) throw new InvalidInputError(`--resume: no checkpoint at ${ckptPath}`);
    const parsed = CheckpointSchema.safeParse(readJsonFile(ckptPath));
    if (!parsed.success) throw new InvalidInputError(`${ckptPath}: ${formatIssues(parsed.error)}`);
    resume = parsed.data as unknown as Checkpoint;
  }
  let userSettings: Record<string, unknown> = {};
  if (opts.settings) {
    const raw = opts.settings.trim().startsWith('{')
      ? (JSON.parse(opts.settings) as unknown)
      : readJsonFile(opts.settings);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      throw new InvalidInputError('--settings: must be a JSON object');
    userSettings = raw as Record<string, unknown>;
  }
  const config: TrainConfig = resume?.config ?? {
    scenario: loaded.scenario.name,
    episodes: opts.episodes,
    env: {
      stepS: loaded.scenario.epochS,
      stepsPerEpisode: opts.steps ?? Math.round(loaded.scenario.durationS / loaded.scenario.epochS),
      rateJitter: 0.2,
      startSpreadS: loaded.scenario.durationS * 2,
      interference: !opts.noInterference,
      seed: opts.seed,
    },
    sac: parseSacSettings({ ...TRAIN_RECIPE, seed: opts.seed, ...userSettings }),
  };
  const episodes = resume ? Math.max(opts.episodes, config.episodes) : config.episodes;
  const tf = await initTf(opts.backend);
  const store = new Store(join(opts.stateDir ?? join(homedir(), '.inss'), 'inss.db'));
  const runId = store.startTrainingRun({
    scenario: config.scenario,
    seed: opts.seed,
    settings: config,
    outDir: out,
    nowIso: new Date().toISOString(),
  });
  const trainer = await Trainer.create(config, cluster, loaded.scenario.models, resume);
  const progress = startProgress({
    total: episodes,
    start: trainer.episodesDone,
    ...(opts.quiet ? { quiet: true } : {}),
  });
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const saveAll = (final: boolean) => {
    writeAtomic(ckptPath, JSON.stringify(trainer.checkpoint()));
    writeFileSync(join(out, 'curves.csv'), recordsCsv(trainer.records));
    const pts = (f: (r: (typeof trainer.records)[number]) => number) =>
      trainer.records.map((r) => [r.episode, f(r)] as const);
    writeFileSync(
      join(out, 'reward.svg'),
      lineChart(`Training reward: ${config.scenario}`, 'episode', 'episode reward (eq. 3)', [
        { name: 'reward', points: pts((r) => r.reward) },
      ]),
    );
    writeFileSync(
      join(out, 'throughput.svg'),
      lineChart(`Training throughput: ${config.scenario}`, 'episode', 'predicted tasks/s', [
        { name: 'throughput', points: pts((r) => r.throughputPerS) },
      ]),
    );
    writeFileSync(
      join(out, 'slo-violation.svg'),
      lineChart(`Training SLO violation: ${config.scenario}`, 'episode', 'predicted % of tasks', [
        { name: 'SLO violation', points: pts((r) => r.sloViolationPct) },
      ]),
    );
    if (final)
      writeAtomic(
        join(out, 'policy.json'),
        JSON.stringify(trainer.policyFile({ command: ['inss', ...argv.slice(2)].join(' '), backend: tf.backend })),
      );
    store.updateTrainingProgress(runId, trainer.episodesDone);
  };
  try {
    while (trainer.episodesDone < episodes && !interrupted) {
      const t0 = performance.now();
      const rec = trainer.runEpisode();
      rec.seconds = (performance.now() - t0) / 1000;
      progress.update(
        trainer.episodesDone,
        `episode ${trainer.episodesDone}: reward ${rec.reward.toFixed(0)} | thr ` +
          `${rec.throughputPerS.toFixed(0)}/s | SLO viol ${rec.sloViolationPct.toFixed(2)}% | ` +
          `${rec.seconds.toFixed(1)} s`,
      );
      if (trainer.episodesDone % opts.checkpointEvery === 0) saveAll(false);
    }
    progress.stop();
    const done = trainer.episodesDone >= episodes;
    saveAll(done);
    const last = trainer.records.slice(-10);
    const mean = (f: (r: (typeof last)[number]) => number) =>
      last.reduce((s, r) => s + f(r), 0) / Math.max(1, last.length);
    const final = {
      episodes: trainer.episodesDone,
      rewardLast10: mean((r) => r.reward),
      throughputLast10: mean((r) => r.throughputPerS),
      sloViolationPctLast10: mean((r) => r.sloViolationPct),
      backend: tf.backend,
    };
    store.finishTrainingRun(runId, {
      status: done ? 'finished' : 'interrupted',
      final,
      policyPath: done ? join(out, 'policy.json') : null,
      nowIso: new Date().toISOString(),
    });
    console.error(
      done
        ? `trained ${trainer.episodesDone} episodes; policy: ${join(out, 'policy.json')} (run ${runId})`
        : `interrupted after ${trainer.episodesDone} episodes; resume with --resume --out ${opts.out} (run ${runId})`,
    );
    return done ? 0 : 130;
  } catch (err) {
    progress.stop();
    store.finishTrainingRun(runId, {
      status: 'failed',
      final: { error: String(err) },
      policyPath: null,
      nowIso: new Date().toISOString(),
    });
    throw err;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    trainer.dispose();
    store.close();
  }
}
