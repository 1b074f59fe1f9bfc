"""The PyTorch worker: serves one model over the worker protocol: a torchvision image classifier (the zoo;
--model) or a TorchScript module (--model-file, served by its --signature: signature.py, scripted.py).

The node agent starts one of these per (model, GPU, share), as `python3 native/torch_worker.py ...`, and
talks to it over stdin (agent -> worker) and stdout (worker -> agent) in the frames of
src/protocol/frames.ts with the messages of src/protocol/worker.ts; docs/worker-protocol.md is the
reference. Logs go to stderr only: at start the process moves its stdout to a private descriptor and
points fd 1 at stderr, so a stray print (ours, torch's, a C library's) can never corrupt the protocol
stream. Needs torch and torchvision only (Debian: python3-torch python3-torchvision, seen by
/usr/bin/python3).

Contract:
- `ready` once, after the model is built and warmed up; no batch is read before it is sent.
- Batches are run one at a time in arrival order. A batch whose message or tensors are wrong gets an
  `error` naming what is wrong, and the worker goes on. latencyMs is the GPU execution latency of
  the latency model, t_inf: host-to-device copy, forward pass, device-to-host copy, synchronised.
- The data socket (data_socket.py): batches from stdin and from data connections are served in one
  queue, in arrival order, each answered where it came from; a batch naming another worker identity
  gets an `error` with reason `wrong-worker`. Reader threads receive the next batch while one runs.
- Inputs whose samples arrive as UINT8 images or JPEG/PNG (the input's `samples`) are decoded first
  (torchvision.io; JPEG on the GPU when the worker runs on one) and preprocessed by the rule of
  src/serving/image.ts (preprocess.py); that time is not in latencyMs. A sample that fails to decode
  is listed in the output's `failed` (its row is zero): that task alone gets the error.
- Shared memory (shared_memory.py): an `attach` naming the scheduler's region is answered `attached`; the worker
  maps the file read-only (unless INSS_WORKER_SHM=off) and reads the samples a batch gives as `slots`
  in place, copied only into the batch tensor. A connection's mapping is dropped when it ends.
- SIGTERM (or SIGINT): the batches received before the signal are answered, then exit 0.
- stdin closing: the batches received are answered, then exit 0.
- A stream that is not frames, a CUDA error that leaves the context unusable, or any uncaught
  exception: `fatal`, then exit 1.

CUDA_VISIBLE_DEVICES, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE and CUDA_MPS_PIPE_DIRECTORY are read by the
CUDA driver from the environment the agent gives; this worker only logs them.

- A TorchScript module takes every input of the signature positionally, in its order; an output that
  differs from the signature (count, dtype, shape) gets an `error` for that batch naming it.

Modules: protocol (names, limits, errors), framing (frames in and out), inbox (the one queue and the
stdin reader), data_socket, shared_memory, signature (the tensors a model takes and gives), batch (what
is wrong with a batch), preprocess, models, scripted (TorchScript and the tensors of a signature), worker
(one batch served), cli (the command line), main (the process and its loop). Only preprocess, models,
scripted and worker touch torch, and main imports them after the protocol descriptor is set up.
"""
