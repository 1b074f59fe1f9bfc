// One run of `inss loadgen`: the plans, the open-loop sends against the clock, the progress line and the
// report. The sends go over HTTP (cli/loadgenHttp.ts) or gRPC (cli/loadgenGrpc.ts).
import { accessSync, constants, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import { dirname } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Writable } from 'node:stream';
import { setImmediate as yieldToIo, setTimeout as sleep } from 'node:timers/promises';
import {
  buildReport,
  formatReport,
  type LoadgenReport,
  type LoadgenSettings,
  type RequestRecord,
} from '../tools/loadgen/report.js';
import { SendSchedule } from '../tools/loadgen/schedule.js';
import { GrpcTarget } from './loadgenGrpc.js';
import { planModel } from './loadgenHttp.js';
import { EXIT_OK, EXIT_SETUP, type LoadgenOptions, LoadgenSetupError, type ModelPlan } from './loadgenPlan.js';

export interface LoadgenIo {
  readonly stdout: Writable;
  readonly stderr: Writable;
}

const PROGRESS_EVERY_MS = 1000;
/** Most sends in one go when catching up, before reading answers again. */
const MAX_BURST = 256;

/** Live counts for the progress line. */
interface Counters {
  sent: number;
  answered: number;
  errors: number;
}

/**
 * Sends the schedule open-loop against the clock and resolves once every request has its outcome.
 * Timers wake the loop at the next send time; after each wake it sends everything that is due (catching
 * up if the event loop was late), at most MAX_BURST at once before letting answers be read.
 */
async function sendOpenLoop(
  plans: readonly ModelPlan[],
  schedule: SendSchedule,
  timeoutMs: number,
  counters: Counters,
): Promise<RequestRecord[]> {
  const records: RequestRecord[] = [];
  let inFlight = 0;
  let sending = true;
  let drained: () => void = () => undefined;
  const allAnswered = new Promise<void>((resolve) => (drained = resolve));
  const t0 = performance.now();
  const fire = (model: number, scheduledAtMs: number): void => {
    const plan = plans[model]!;
    const sentAtMs = performance.now() - t0;
    inFlight++;
    counters.sent++;
    plan.send(timeoutMs, (x) => {
      const r: RequestRecord = {
        model: plan.name,
        scheduledAtMs,
        sentAtMs,
        latencyMs: performance.now() - t0 - sentAtMs,
        ...x,
      };
      records.push(r);
      counters.answered++;
      if (r.outcome !== 'ok') counters.errors++;
      inFlight--;
      if (!sending && inFlight === 0) drained();
    });
  };
  let next = schedule.next();
  while (next !== undefined) {
    const aheadMs = next.atMs - (performance.now() - t0);
    if (aheadMs > 0) {
      await sleep(aheadMs);
      continue;
    }
    for (let burst = 0; next !== undefined && next.atMs <= performance.now() - t0 && burst < MAX_BURST; burst++) {
      fire(next.model, next.atMs);
      next = schedule.next();
    }
    await yieldToIo();
  }
  sending = false;
  if (inFlight > 0) await allAnswered;
  return records;
}

function checkOutWritable(out: string): void {
  const dir = dirname(out);
  try {
    if (!statSync(dir).isDirectory()) throw new Error(`${dir} is not a folder`);
    accessSync(dir, constants.W_OK);
  } catch (err) {
    throw new LoadgenSetupError(
      `--out ${out}: cannot write there: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
      EXIT_SETUP,
    );
  }
}

function settingsOf(opts: LoadgenOptions): LoadgenSettings {
  return {
    url: opts.url,
    protocol: opts.protocol,
    durationS: opts.durationS,
    arrival: opts.arrival,
    seed: opts.seed,
    encoding: opts.encoding,
    input: opts.input,
    timeoutMs: opts.timeoutMs,
    connections: opts.connections,
    ...(opts.traces.size > 0 ? { traces: Object.fromEntries(opts.traces) } : {}),
  };
}

/**
 * One whole run: metadata, the open-loop sends, the report on `io.stdout` (and in --out). Resolves to
 * the exit status (EXIT_*); a setup failure is one line on `io.stderr`, not an exception.
 */
export async function runLoadgen(opts: LoadgenOptions, io: LoadgenIo): Promise<number> {
  const sockets = { keepAlive: true, maxSockets: opts.connections, maxFreeSockets: opts.connections };
  const agent = opts.url.startsWith('https:')
    ? new https.Agent({ ...sockets, ...(opts.ca !== undefined ? { ca: opts.ca } : {}) })
    : new http.Agent(sockets);
  const grpc = opts.protocol === 'grpc' ? new GrpcTarget(opts) : null;
  const say = (line: string): void => void io.stderr.write(`${line}\n`);
  try {
    if (opts.out !== undefined) checkOutWritable(opts.out);
    const plans: ModelPlan[] = [];
    for (const m of opts.models) plans.push(grpc ? await grpc.plan(m) : await planModel(opts, m, agent));
    const schedule = new SendSchedule(opts.models, {
      durationS: opts.durationS,
      arrival: opts.arrival,
      seed: opts.seed,
    });
    const counters: Counters = { sent: 0, answered: 0, errors: 0 };
    let progress: NodeJS.Timeout | undefined;
    if (!opts.json) {
      const arrival = opts.arrival.kind === 'gamma' ? `gamma arrivals (CV ${opts.arrival.cv})` : 'Poisson arrivals';
      const rateOf = (p: ModelPlan): string => {
        const trace = opts.traces.get(p.name);
        return trace !== undefined ? `trace ${trace} (${p.ratePerS.toFixed(2)}/s)` : `${p.ratePerS}/s`;
      };
      const models = plans.map((p) => `${p.name} ${rateOf(p)} (SLO ${p.sloMs} ms, ${p.bytes} bytes)`);
      say(
        `loadgen: ${models.join(', ')}; ${arrival}, ${opts.encoding} encoding, ` +
          `${opts.durationS} s to ${opts.url}${grpc ? ' over gRPC' : ''}`,
      );
      const startMs = performance.now();
      progress = setInterval(() => {
        const s = ((performance.now() - startMs) / 1000).toFixed(0);
        say(
          `loadgen: ${s} s: sent ${counters.sent}, answered ${counters.answered}, errors ${counters.errors}, ` +
            `in flight ${counters.sent - counters.answered}`,
        );
      }, PROGRESS_EVERY_MS);
    }
    let records: RequestRecord[];
    try {
      records = await sendOpenLoop(plans, schedule, opts.timeoutMs, counters);
    } finally {
      clearInterval(progress);
    }
    const report: LoadgenReport = buildReport(
      settingsOf(opts),
      plans.map((p) => ({ name: p.name, ratePerS: p.ratePerS, sloMs: p.sloMs })),
      records,
    );
    io.stdout.write(`${opts.json ? JSON.stringify(report) : formatReport(report)}\n`);
    if (opts.out !== undefined) {
      try {
        writeFileSync(opts.out, `${JSON.stringify(report, null, 1)}\n`);
      } catch (err) {
        throw new LoadgenSetupError(
          `--out ${opts.out}: cannot write: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`,
          EXIT_SETUP,
        );
      }
      if (!opts.json) say(`loadgen: wrote ${opts.out}`);
    }
    return EXIT_OK;
  } catch (err) {
    if (!(err instanceof LoadgenSetupError)) throw err;
    say(`inss loadgen: ${err.message}`);
    return err.exitCode;
  } finally {
    agent.destroy();
    grpc?.close();
  }
}
