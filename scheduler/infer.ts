// The inference front: what every protocol (HTTP/REST in kserveRoutes.ts, gRPC) does with a validated infer
// request, written once. It resolves the request's system shared-memory regions (the registry is the
// server's, shared by both protocols, as Triton's is), hands each of the request's k samples to the
// control plane as a task of its own (the dispatcher batches them with other requests' samples), waits
// for all k, and gathers their outputs into one response: k rows in sample order, in the order the
// request named the outputs, written into output regions where asked. Protocol framing, body buffers
// and status codes of the wire are the callers'.
//
// A k-sample request counts as k tasks everywhere: in its model's queue (and its queue policy's
// max size), in the dispatch rule's batches, in the SLO metrics (each sample within its SLO or not)
// and in the simulator (docs/http-api.md, "Requests that carry a batch"). It is answered once, when its
// last sample is; with an error when any sample ended with one (the first, in sample order).
import type { Control, ServedModelConfig, TaskAnswer, TaskErrorReason, TaskInput, TaskOutput } from './control.js';
import { type InferRequest, type InferResponse, inputSamples, requestBatch, type ResponseOutput } from './kserve.js';
import { resolveRegions, type SharedMemoryRegistry } from './sharedMemory.js';
import { classifyAnswer, modelLabels } from './classes.js';
import { type SampleEncoding, tensorBytes } from '../src/protocol/tensor.js';

/** HTTP status of each reason a task ends with an error (gRPC maps these statuses to its codes). */
export const ERROR_STATUS: Record<TaskErrorReason, number> = {
  slo: 503,
  'not-deployed': 503,
  'worker-failed': 503,
  shutdown: 503,
  'bad-input': 400,
  'queue-full': 503,
};

export interface InferContext {
  /** When the request reached the scheduler (the control plane's clock); absent: when submitted. */
  readonly receivedMs?: number;
  /** The client is on this host: it may name registered system shared-memory regions. */
  readonly local: boolean;
  /** A pipeline step's request: its tasks' deadline stamp (TaskArrival.stampMs); needs `receivedMs`. */
  readonly stampMs?: number;
  /** Whether its tasks measure their request's way in (TaskArrival.wayIn). */
  readonly wayIn?: boolean;
}

export type InferOutcome =
  | {
      readonly ok: true;
      readonly response: InferResponse;
      /** When the last sample was answered (the control plane's clock). */
      readonly answeredMs: number;
    }
  | {
      readonly ok: false;
      /** The HTTP status this error answers with (400 bad request, 403, 404, 503 ...). */
      readonly status: number;
      /** Why a task ended with an error; absent for an error found before any task ran (shared memory). */
      readonly reason?: TaskErrorReason;
      readonly error: string;
      readonly answeredMs?: number;
    };

export class InferFront {
  /** Each model's output labels by output name (the classification extension's label files, read once here). */
  private readonly labels: ReadonlyMap<string, ReadonlyMap<string, readonly string[]>>;

  constructor(
    private readonly control: Control,
    private readonly models: readonly ServedModelConfig[],
    private readonly regions: SharedMemoryRegistry,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.labels = new Map(models.map((c) => [c.name, modelLabels(c.signature)]));
  }

  /**
   * Serves one validated request to model `m` (`request` from parseInferRequest / parseInferFields).
   * Resolves once every sample was answered; never rejects.
   */
  infer(m: number, request: InferRequest, ctx: InferContext): Promise<InferOutcome> {
    const c = this.models[m]!;
    const k = requestBatch(request);
    const outputBytes = (name: string) => {
      const o = c.signature.outputs.find((s) => s.name === name)!;
      return tensorBytes(o.datatype, request.batchDim === false ? o.shape : [k, ...o.shape]);
    };
    const shm = resolveRegions(this.regions, request, outputBytes, ctx.local);
    if (!shm.ok) return Promise.resolve({ ok: false, status: shm.status, error: shm.error });
    const resolved = shm.value;
    const tasks = taskInputs(resolved, k);
    return new Promise((resolve) => {
      const answers = new Array<TaskAnswer | undefined>(k);
      let left = k;
      const stamp = {
        ...(ctx.stampMs !== undefined ? { stampMs: ctx.stampMs } : {}),
        ...(ctx.wayIn !== undefined ? { wayIn: ctx.wayIn } : {}),
      };
      const arrival = ctx.receivedMs !== undefined ? { receivedMs: ctx.receivedMs, ...stamp } : undefined;
      for (let i = 0; i < k; i++)
        this.control.submit(
          m,
          tasks(i),
          (a) => {
            answers[i] = a;
            if (--left === 0) resolve(this.gather(c, resolved, answers as TaskAnswer[]));
          },
          arrival,
        );
    });
  }

  /** Tells the control plane how long an answer took to leave once it was ready (the learned way out). */
  answerSent(wayOutMs: number): void {
    this.control.answerSent(wayOutMs);
  }

  private gather(c: ServedModelConfig, request: InferRequest, answers: readonly TaskAnswer[]): InferOutcome {
    const answeredMs = this.clock();
    const failed = answers.find((a): a is Extract<TaskAnswer, { ok: false }> => !a.ok);
    if (failed) {
      const of = answers.length > 1 ? ` (sample ${answers.indexOf(failed)} of ${answers.length})` : '';
      return {
        ok: false,
        status: ERROR_STATUS[failed.reason],
        reason: failed.reason,
        error: `${failed.error}${of}`,
        answeredMs,
      };
    }
    const ok = answers as readonly Extract<TaskAnswer, { ok: true }>[];
    // In the order the request named them (all of the signature's when it named none).
    const gathered: ResponseOutput[] = [];
    for (const want of request.outputs) {
      const rows = ok.map((a) => a.outputs.find((o) => o.name === want.name));
      if (rows.some((r) => r === undefined)) continue;
      const joined = joinRows(rows as TaskOutput[]);
      gathered.push({ ...joined, binary: want.binary, ...(want.region ? { region: want.region } : {}) });
    }
    // Triton's classification extension: outputs asked for classes are answered as their top classes
    // (scheduler/classes.ts). An error only when a worker's output does not fill its shape.
    const labels = this.labels.get(c.name) ?? new Map<string, readonly string[]>();
    const classified = classifyAnswer(gathered, request.outputs, labels, request.batchDim !== false);
    if (!classified.ok) return { ok: false, status: 500, error: classified.error, answeredMs };
    const outputs = classified.outputs;
    for (const o of outputs) {
      const wrote = o.region ? this.regions.write(o.region, o.data, `output '${o.name}'`) : undefined;
      if (wrote && !wrote.ok)
        return {
          ok: false,
          status: wrote.status,
          error: `${wrote.error} (the region was unregistered while the task ran)`,
          answeredMs,
        };
    }
    return {
      ok: true,
      response: {
        modelName: c.name,
        modelVersion: '1',
        ...(request.id !== undefined ? { id: request.id } : {}),
        outputs,
      },
      answeredMs,
    };
  }
}

/** One output's rows of k samples (each of batch dimension 1) as one tensor of batch dimension k. */
function joinRows(rows: readonly TaskOutput[]): TaskOutput {
  const first = rows[0]!;
  if (rows.length === 1) return first;
  const shape = [...first.shape];
  shape[0] = rows.reduce((n, r) => n + (r.shape[0] ?? 1), 0);
  return { name: first.name, datatype: first.datatype, shape, data: Buffer.concat(rows.map((r) => r.data)) };
}

/**
 * Sample i's task input(s): for a one-input model, its one TaskInput (an image input's sample may be
 * UINT8 pixels or an encoded image: its encoding goes with it); otherwise one per input, in signature
 * order (each its own datatype). Views of the request's buffers, no copies.
 */
function taskInputs(request: InferRequest, k: number): (i: number) => TaskInput | TaskInput[] {
  const per = request.inputs.map((input) => {
    const shape = request.batchDim === false ? input.shape : [1, ...input.shape.slice(1)];
    return { input, shape, samples: inputSamples(input, k) };
  });
  const one = (p: (typeof per)[number], i: number): TaskInput => {
    const s = p.samples[i]!;
    const { name, datatype } = p.input;
    if (s.encoding === datatype) return { name, datatype, shape: p.shape, data: s.data };
    return { name, datatype, shape: p.shape, encoding: s.encoding as SampleEncoding, data: s.data };
  };
  if (per.length === 1) return (i) => one(per[0]!, i);
  return (i) => per.map((p) => one(p, i));
}
