// Control of the NVIDIA MPS control daemon (`nvidia-cuda-mps-control`) with inss's own pipe and log
// directories, so it never collides with an operator's daemon in /tmp/nvidia-mps.
//
// One daemon per GPU. The agent gives each daemon one GPU (`gpu`, which becomes the daemon's
// CUDA_VISIBLE_DEVICES) and its own directories. Reasons: a client fault puts the MPS server of
// that GPU into a failed state in which it refuses new clients until its clients exit; with one
// daemon (one server) for several GPUs, that also blocks new workers on the healthy GPUs (NVIDIA's
// forum: a fault on one A30 refused new clients on the other), and recovery (killing the clients,
// restarting the daemon) would stop every worker on the machine. Per GPU, a fault costs one GPU's
// workers. Pass the GPU's UUID (from nvidia-smi), not its index: see `mpsClientEnv`.
//
// The pure parts (reading the daemon's answers and logs, the client environment, the backoff) are
// exported functions (agent/mpsParse.ts); `MpsDaemon` runs the executable (agent/mpsDaemon.ts);
// `MpsSupervisor` watches one daemon (agent/mpsSupervisor.ts). This module is the one the rest of inss
// imports. Expected failures are result values with a reason; nothing here throws for an outcome of
// the daemon.
export * from './mpsParse.js';
export * from './mpsDaemon.js';
export * from './mpsSupervisor.js';
