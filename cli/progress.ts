// Progress of long CLI jobs (`inss train`, `inss bench --suite`, `inss profile measure`), one reporter
// for all three: on a terminal a bar rewritten in place (cli-progress); anywhere else (a pipe, a log
// file, CI) one line per step, `[done/total] what the step did (elapsed, time left)`, so logs show
// how far a job got and how fast it goes. Progress goes to stderr: stdout keeps the results.
import { performance } from 'node:perf_hooks';
import cliProgress from 'cli-progress';

export interface Progress {
  /** `value` of `total` steps are done; `detail` says what the last one did. */
  update(value: number, detail: string): void;
  /** One more step is done. */
  increment(detail: string): void;
  /** Ends the bar (a terminal); nothing more is written after. */
  stop(): void;
}

export interface ProgressOptions {
  readonly total: number;
  /** Steps already done (a resumed job). */
  readonly start?: number;
  /** Default process.stderr. */
  readonly stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Nothing at all. */
  readonly quiet?: boolean;
  /** Steps the bar's time-left estimate averages over (cli-progress's etaBuffer). */
  readonly etaBuffer?: number;
  /** ms, monotonic (tests give their own). */
  readonly now?: () => number;
}

/** A duration as the lines print it: `42 s`, `3 min 05 s`, `2 h 07 min`. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(s / 3600)} h ${String(Math.floor((s % 3600) / 60)).padStart(2, '0')} min`;
}

/** One progress line (no newline): `[3/10] detail (12 s elapsed, about 28 s left)`. */
export function progressLine(
  value: number,
  total: number,
  detail: string,
  elapsedS: number,
  leftS: number | null,
): string {
  const left = leftS === null ? '' : value >= total ? ', done' : `, about ${formatDuration(leftS)} left`;
  return `[${value}/${total}] ${detail} (${formatDuration(elapsedS)} elapsed${left})`;
}

const NONE: Progress = { update() {}, increment() {}, stop() {} };

export function startProgress(o: ProgressOptions): Progress {
  if (o.quiet) return NONE;
  const stream = o.stream ?? process.stderr;
  const start = o.start ?? 0;
  let current = start;
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        stream,
        format: '[{value}/{total}] |{bar}| {detail} | {duration_formatted} elapsed, {eta_formatted} left',
        etaBuffer: o.etaBuffer ?? 20,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(o.total, start, { detail: '' });
    return {
      update(value, detail) {
        current = value;
        bar.update(value, { detail });
      },
      increment(detail) {
        this.update(current + 1, detail);
      },
      stop: () => bar.stop(),
    };
  }
  const now = o.now ?? (() => performance.now());
  const t0 = now();
  return {
    update(value, detail) {
      current = value;
      const elapsedS = (now() - t0) / 1000;
      const doneHere = value - start;
      const etaS = doneHere > 0 ? (elapsedS / doneHere) * (o.total - value) : null;
      stream.write(`${progressLine(value, o.total, detail, elapsedS, etaS)}\n`);
    },
    increment(detail) {
      this.update(current + 1, detail);
    },
    stop() {},
  };
}
