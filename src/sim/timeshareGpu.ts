// What a time-shared (Triton-style) GPU does when several models' batches are ready at once, for the
// simulator's `timeshare` GPUs (docs/simulator.md, "Time-shared GPUs"). Pure.
//
// Evidence: Triton's "Concurrent Model Execution" (docs.nvidia.com/deeplearning/triton-inference-server,
// user-guide/docs/model_execution.html): requests for two different models "arriving simultaneously"
// are both scheduled onto the GPU at once "and the GPU's hardware scheduler begins working on both
// computations in parallel"; requests for the same model are serialised, because by default each
// model has one instance (instance_group count 1) per GPU. So on a time-shared GPU, batches of
// DIFFERENT models overlap and contend for the SMs and DRAM, and a model runs one batch at a time.
//
// How long an overlapping batch takes: the GPU's hardware scheduler splits the SMs between the
// running kernels with no partition; we model n overlapping batches as n co-located workers with an
// even share (100/n %) each, timed by the same latency model and ground truth as MPS workers
// (including their interference and the ground truth's DRAM contention). On the V100, where that
// model is fitted on measured co-location data (data/v100), two models at 50/50 give 1.05-1.31x the
// summed throughput of running them one after the other, i.e. overlap is worth less than spatial
// sharing at tuned shares but more than nothing, which matches NVIDIA's published MPS-vs-time-slicing
// gains (+26% to +43%, issue 11). An even split with fixed partitions is pessimistic where one
// batch could fill the GPU alone (the hardware scheduler gives idle SMs to whichever kernel is
// ready), so overlapping is bounded by running in series: a batch takes at most its own solo time
// plus the solo times of the batches it overlaps (overlapBatchMs). The batch's time is fixed when it
// starts, from the batches running then (a running batch is not re-timed when a neighbour starts or ends).
//
// `serial` keeps the earlier model: one batch at a time on the whole GPU, nothing overlapping (what
// a GPU time-slicing separate processes without MPS does). It is selectable per run
// (`timeshareGpu` in a scenario or SimSettings; `inss bench --timeshare-gpu serial`).
//
// The live scheduler (scheduler/control.ts, `gpuRunning`) runs a time-shared GPU's batches one at a time:
// it holds the GPU from a batch's send to its answer, transport included, and its simulated workers
// time each batch alone. So where batches pay transport (the live system, and the simulator given a
// transport: its twin) one batch runs at a time whatever the GPU model says; the GPU model applies to
// the simulator without transport (`inss bench`'s default), whose results this leaves as they were.
// Decided on bench:twin (docs/serving.md, "Time-shared GPUs in the twin"): with the same arrivals, the
// live queueing and batch sizes follow the serial twin, not the overlapping one.

export type TimeshareGpuModel = 'overlap' | 'serial';

export const DEFAULT_TIMESHARE_GPU: TimeshareGpuModel = 'overlap';

/**
 * How many batches may run at once on a time-shared GPU, for the simulator and the live scheduler
 * alike. Where batches pay transport (`paysTransport`: the live scheduler, the simulator given a
 * transport), one: the live scheduler's rule (above). Otherwise the GPU model's: one in all when
 * serial; when overlapping, no limit beyond the workers themselves (each runs one batch at a time, and
 * the timeshare policy places one worker per model per GPU: Triton's default of one instance per model
 * per GPU).
 */
export function timeshareConcurrency(model: TimeshareGpuModel, paysTransport: boolean): number {
  return paysTransport || model === 'serial' ? 1 : Infinity;
}

/** The share (%) each of `running` overlapping batches is timed at: an even split of the GPU. */
export function timeshareSharePct(running: number): number {
  if (!(running >= 1) || !Number.isInteger(running)) throw new RangeError(`running batches must be a positive integer, got ${running}`);
  return 100 / running;
}

/**
 * The time of a batch overlapping others on a time-shared GPU (before the ground truth's error):
 * its even-split time, but never more than if the GPU had run it after the overlapping batches in
 * series (its solo time plus theirs).
 */
export function overlapBatchMs(evenSplitMs: number, soloMs: number, othersSoloMs: readonly number[]): number {
  return Math.min(evenSplitMs, othersSoloMs.reduce((s, t) => s + t, soloMs));
}
