// Flag parsers the commands share; commander reports a parser's message with the flag it was given to.
import { InvalidArgumentError } from 'commander';
import { attainmentTargetProblem } from '../src/policy/attainment.js';
import { MAX_FRONT_DOORS } from '../src/serving/frontDoors.js';
import { type MonitorKind, MONITOR_KINDS } from '../src/serving/monitor.js';
import { type PooledPrediction, POOLED_PREDICTIONS } from '../src/serving/settings.js';

export function nonNegativeInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('must be an integer >= 0');
  return n;
}

export function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('must be an integer >= 1');
  return n;
}

/** `--front-doors`: 1 to MAX_FRONT_DOORS (src/serving/frontDoors.ts). */
export function frontDoorCount(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > MAX_FRONT_DOORS)
    throw new InvalidArgumentError(`must be an integer from 1 to ${MAX_FRONT_DOORS}`);
  return n;
}

/** `--attainment-target`: the fraction of tasks to plan for within SLO (src/policy/attainment.ts). */
export function attainmentTarget(v: string): number {
  const n = v.trim() === '' ? NaN : Number(v);
  const why = attainmentTargetProblem(n);
  if (why !== null) throw new InvalidArgumentError(`must be a number in (0.5, 1), e.g. 0.95, got '${v}'`);
  return n;
}

/** `--monitor`: the rate the policy is told (src/serving/monitor.ts): mean or envelope. */
export function monitorKind(v: string): MonitorKind {
  if (!(MONITOR_KINDS as readonly string[]).includes(v))
    throw new InvalidArgumentError(`must be ${MONITOR_KINDS.join(' or ')}, got '${v}'`);
  return v as MonitorKind;
}

/** `--pooled-prediction`: how the dispatch rule predicts a batch on a pooled overlap GPU (src/serving/settings.ts). */
export function pooledPrediction(v: string): PooledPrediction {
  if (!(POOLED_PREDICTIONS as readonly string[]).includes(v))
    throw new InvalidArgumentError(`must be ${POOLED_PREDICTIONS.join(' or ')}, got '${v}'`);
  return v as PooledPrediction;
}

/** The help text of `--pooled-prediction`. */
export const POOLED_PREDICTION_FLAG_HELP =
  'how the dispatch rule predicts a batch on a pooled overlap GPU: solo (alone on the GPU) or running (beside the ' +
  "batches running there; docs/dispatch.md) (default: the scenario's pooledPrediction, else running)";

/** The help text of `--monitor`. */
export const MONITOR_FLAG_HELP =
  'the rate each policy is told: mean (over the monitor window) or envelope (raised by the tuner where the ' +
  "traffic envelope outgrows the plan's; docs/serving.md) (default: the scenario's monitor, else mean)";
