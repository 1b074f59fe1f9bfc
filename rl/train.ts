// Offline training of the TS agent (paper Algorithm 2) on the latency-model environment.
// One episode = `stepsPerEpisode` decision epochs; each step: act (sampled), apply to the env, store
// the transition, update (SacDiscrete.step). The trainer holds the agent, the env and the curves;
// the CLI (cli/train.ts) owns files, the progress bar and the store.
import type { ClusterInfo } from '../src/policy/types.js';
import type { ScenarioModel } from '../src/scenario/schema.js';
import { mixSeed } from '../src/workload/random.js';
import { type EnvOptions, ProvisioningEnv } from './env.js';
import { actorSnapshot } from './actorForward.js';
import { staticMasks } from './mdp.js';
import { clusterSignature, type PolicyFile } from './policyFile.js';
import { SacDiscrete, type UpdateMetrics } from './sacDiscrete.js';
import type { SacSettingsInput } from './settings.js';

export interface TrainConfig {
  readonly scenario: string;
  readonly episodes: number;
  readonly env: EnvOptions;
  readonly sac: SacSettingsInput;
}

/** One row of the training curves (paper Figs. 13 and 14). */
export interface EpisodeRecord {
  readonly episode: number;
  /** Sum of eq. (3) over the episode's steps. */
  readonly reward: number;
  /** Mean predicted tasks served per second over the episode. */
  readonly throughputPerS: number;
  /** Mean predicted share of tasks missing their SLO, percent. */
  readonly sloViolationPct: number;
  readonly alpha: number;
  readonly entropy: number;
  readonly lossQ: number;
  readonly lossActor: number;
  /** Wall seconds the episode took (filled by the caller, who owns the clock). */
  seconds: number;
}

export interface Checkpoint {
  readonly format: 'inss-train-checkpoint/1';
  readonly config: TrainConfig;
  readonly episodesDone: number;
  readonly records: readonly EpisodeRecord[];
  readonly agent: unknown;
}

export class Trainer {
  private constructor(
    readonly config: TrainConfig,
    readonly cluster: ClusterInfo,
    readonly env: ProvisioningEnv,
    readonly agent: SacDiscrete,
    readonly records: EpisodeRecord[],
    public episodesDone: number,
  ) {}

  static async create(
    config: TrainConfig,
    cluster: ClusterInfo,
    models: readonly ScenarioModel[],
    resume?: Checkpoint,
  ): Promise<Trainer> {
    const episodesDone = resume?.episodesDone ?? 0;
    // A resumed run continues the environment's random stream where a fresh one would be.
    const env = new ProvisioningEnv(cluster, models, { ...config.env, seed: mixSeed(config.env.seed, episodesDone) });
    const heads = new Array<number>(env.space.heads).fill(env.space.options.length);
    const agent = resume
      ? await SacDiscrete.load(resume.agent)
      : await SacDiscrete.create(env.stateDim, heads, config.sac);
    return new Trainer(config, cluster, env, agent, [...(resume?.records ?? [])], episodesDone);
  }

  /** Runs one episode and returns its record (seconds = 0; the caller times it). */
  runEpisode(): EpisodeRecord {
    const masks = staticMasks(this.cluster, this.env.space);
    let state = this.env.reset();
    let reward = 0;
    let served = 0;
    let violation = 0;
    let steps = 0;
    let last: UpdateMetrics | null = null;
    for (;;) {
      const action = this.agent.act(state, { masks });
      const r = this.env.step(action);
      // An episode's end is a time limit, not a terminal state (done = false for bootstrapping).
      const m = this.agent.step({
        state,
        action,
        reward: r.reward,
        nextState: r.state,
        done: false,
        masks,
        nextMasks: masks,
      });
      if (m) last = m;
      reward += r.reward;
      served += r.info.servedPerS;
      violation += r.info.violationFrac;
      steps++;
      state = r.state;
      if (r.done) break;
    }
    this.episodesDone++;
    const rec: EpisodeRecord = {
      episode: this.episodesDone,
      reward,
      throughputPerS: served / steps,
      sloViolationPct: (100 * violation) / steps,
      alpha: last?.['charts/alpha'] ?? NaN,
      entropy: last?.['charts/entropy'] ?? NaN,
      lossQ: last ? (last['losses/qf1'] + last['losses/qf2']) / 2 : NaN,
      lossActor: last?.['losses/actor'] ?? NaN,
      seconds: 0,
    };
    this.records.push(rec);
    return rec;
  }

  checkpoint(): Checkpoint {
    return {
      format: 'inss-train-checkpoint/1',
      config: this.config,
      episodesDone: this.episodesDone,
      records: this.records,
      agent: this.agent.save(),
    };
  }

  policyFile(extra: Record<string, unknown> = {}): PolicyFile {
    return {
      format: 'inss-policy/1',
      scenario: this.config.scenario,
      cluster: clusterSignature(this.cluster),
      actionSpace: { options: [...this.env.space.options] },
      trainedWith: { episodes: this.episodesDone, env: this.config.env, sac: this.config.sac, ...extra },
      actor: actorSnapshot(this.agent.save()),
    };
  }

  dispose(): void {
    this.agent.dispose();
  }
}

/** The curves as CSV, one row per episode. */
export function recordsCsv(records: readonly EpisodeRecord[]): string {
  const head = 'episode,reward,throughput_per_s,slo_violation_pct,alpha,entropy,loss_q,loss_actor,seconds';
  return (
    [
      head,
      ...records.map((r) =>
        [r.episode, r.reward, r.throughputPerS, r.sloViolationPct, r.alpha, r.entropy, r.lossQ, r.lossActor, r.seconds]
          .map((v) => (Number.isFinite(v) ? Number(v.toPrecision(6)) : ''))
          .join(','),
      ),
    ].join('\n') + '\n'
  );
}
