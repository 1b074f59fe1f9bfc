// The latency model of paper section 4, one pure function per equation. The compiled predictor
// (predictor.ts) calls these same functions on its hot path; nothing here allocates.
//
// Units: times in ms, sizes in bytes, bandwidth in bytes per ms, shares as MPS active-thread
// percentages (0, 100], L2 utilisation as a fraction of peak, rates in tasks per second.

/** `t^d = p^d * b / B_k`: upload of a batch's input over PCIe (section 4.1). */
export function uploadMs(inputBytes: number, batch: number, pcieBytesPerMs: number): number {
  return (inputBytes * batch) / pcieBytesPerMs;
}

/** `t^f = p^f * b / B_k`: feedback of a batch's output over PCIe (section 4.1). */
export function feedbackMs(outputBytes: number, batch: number, pcieBytesPerMs: number): number {
  return (outputBytes * batch) / pcieBytesPerMs;
}

/**
 * `int`: the extra scheduling latency per kernel from co-located models: 0 when the model is alone
 * on its GPU, `alpha_s * (models on the GPU) + beta_s` otherwise (section 4.1). Clamped at 0 so that
 * a fitted line with a negative intercept never makes sharing faster than running alone.
 */
export function schedInterferencePerKernelMs(modelsOnGpu: number, alphaSMs: number, betaSMs: number): number {
  if (modelsOnGpu <= 1) return 0;
  const v = alphaSMs * modelsOnGpu + betaSMs;
  return v > 0 ? v : 0;
}

/** `t^s = (o^sch + int) * n`: kernel-scheduling latency of one batch (section 4.1). */
export function schedulingMs(schedPerKernelMs: number, interferencePerKernelMs: number, kernels: number): number {
  return (schedPerKernelMs + interferencePerKernelMs) * kernels;
}

/** `l = alpha_u * rho + beta_u`: L2 utilisation of a model running alone at a share (Fig. 12). */
export function l2Utilisation(alphaU: number, betaU: number, pct: number): number {
  const l = alphaU * (pct / 100) + betaU;
  return l > 0 ? l : 0;
}

/**
 * `t^r = o^r * (1 + alpha^cache * sum_{j != i} l_j)`: running time under L2 contention (section 4.1).
 * `selfL2 * selfWeight` adds the model's own utilisation to the contention while it shares the GPU
 * (docs/latency-model.md); with `selfWeight = 0`, or alone on the GPU, this is the paper's formula.
 */
export function runningMs(
  soloRunMs: number,
  alphaCache: number,
  othersL2: number,
  selfL2: number,
  selfWeight: number,
  shared: boolean,
): number {
  if (!shared) return soloRunMs;
  return soloRunMs * (1 + alphaCache * (othersL2 + selfWeight * selfL2));
}

/** `t^inf = t^d + t^s + t^r + t^f`: GPU execution latency of one batch. */
export function execLatencyMs(uploadMs_: number, schedMs: number, runMs: number, feedbackMs_: number): number {
  return uploadMs_ + schedMs + runMs + feedbackMs_;
}

/** `h = b / t^inf`, in tasks per second. */
export function throughputPerS(batch: number, tInfMs: number): number {
  return (batch * 1000) / tInfMs;
}

/** `m_i(b)`: GPU memory of a worker at batch b (MB). */
export function memoryMb(baseMb: number, perBatchMb: number, batch: number): number {
  return baseMb + perBatchMb * batch;
}

/** Inputs of eq. (2) for one task of model i. */
export interface TaskLatencyInput {
  /** `G_i(a_{i,j})`: tasks of this model already queued when the task arrives. */
  readonly queuedTasks: number;
  /** `d_{i,j}`: the task's own size in batch units (1 in the paper). */
  readonly taskSize?: number;
  /** `b_i`: the model's batch size. */
  readonly batch: number;
  /** `t^inf_{i,k}` of one batch on the model's GPU. */
  readonly tInfMs: number;
  /** `exec_k`: remaining execution time of the batch now running for this model (0 if none). */
  readonly execRemainingMs: number;
  /** `lambda_i`: arrival rate, tasks per second. */
  readonly ratePerS: number;
}

/**
 * Task latency by eq. (2). With `W = G + d`:
 * - `W >= b` (a full batch is already queued): the task waits for the batch on the GPU, then for
 *   `ceil(W / b)` batches including its own: `exec + ceil(W/b) * t^inf`;
 * - `W < b` (its batch is still filling): it waits for the running batch or for `b - W` more tasks
 *   at rate lambda, whichever is longer, then its batch runs: `max(exec, (b - W)/lambda) + t^inf`.
 * Returns Infinity when the batch can never fill (rate 0).
 */
export function taskLatencyMs(input: TaskLatencyInput): number {
  const w = input.queuedTasks + (input.taskSize ?? 1);
  if (w >= input.batch) {
    return input.execRemainingMs + Math.ceil(w / input.batch) * input.tInfMs;
  }
  const waitMs = input.ratePerS > 0 ? ((input.batch - w) * 1000) / input.ratePerS : Infinity;
  return Math.max(input.execRemainingMs, waitMs) + input.tInfMs;
}
