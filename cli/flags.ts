// Flag parsers the commands share; commander reports a parser's message with the flag it was given to.
import { InvalidArgumentError } from 'commander';
import { attainmentTargetProblem } from '../src/policy/attainment.js';
import { type MonitorKind, MONITOR_KINDS } from '../src/serving/monitor.js';

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

/** The help text of `--monitor`. */
export const MONITOR_FLAG_HELP =
  'the rate each policy is told: mean (over the monitor window) or envelope (raised by the tuner where the ' +
  "traffic envelope outgrows the plan's; docs/serving.md) (default: the scenario's monitor, else mean)";
