"""The worker's process: the protocol descriptor, the signals, the slow start (torch, the model, the
warm-up), `ready`, then the main loop that serves the inbox in arrival order until stdin closes or a
signal asks to stop."""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
import time
from types import FrameType
from typing import TYPE_CHECKING

from .cli import Options, parse_args
from .data_socket import data_settings, listen_data, start_data_socket
from .framing import FdSender
from .inbox import Event, Item, read_stdin
from .protocol import PROTOCOL_VERSION, FrameStreamError, Message, UsageError, log

if TYPE_CHECKING:
    import torch

    from .worker import Worker

CUDA_ENV = ("CUDA_VISIBLE_DEVICES", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", "CUDA_MPS_PIPE_DIRECTORY")


def run(argv: list[str], proto: FdSender) -> int:
    """The worker until it stops: 0 once the batches received are answered. Raises on a fatal error."""
    args = parse_args(argv)
    if sys.byteorder != "little":
        raise RuntimeError("the worker protocol carries little-endian tensors; this host is big-endian")
    t_start = time.perf_counter()

    # Frames arrive on reader threads (torch releases the GIL while it computes, so the next batch is
    # read while this one runs); the main thread serves them in order. A signal handler only enqueues
    # STOP (SimpleQueue.put is reentrant), so what was received before the signal is answered first.
    # Installed before the slow start, so a worker stopped while warming up still exits 0.
    # The handler does nothing else: a print from it could re-enter stderr's writer mid-write.
    inbox: queue.SimpleQueue[Item] = queue.SimpleQueue()
    stopped_by: list[str] = []

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        stopped_by.append(signal.Signals(signum).name)
        inbox.put(Event.STOP)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    # Imported only now, after the protocol descriptor is set up, so whatever they print goes to stderr.
    import warnings

    import torch
    import torchvision

    from .models import choose_device

    # Samples in the scheduler's region are read through a read-only mapping, never written.
    warnings.filterwarnings("ignore", message="The given buffer is not writable")

    if args.threads is not None:
        torch.set_num_threads(args.threads)
    env = {k: os.environ.get(k, "(unset)") for k in CUDA_ENV}
    log(
        f"torch {torch.__version__}, torchvision {torchvision.__version__}, "
        f"python {sys.version.split()[0]} ({sys.executable}); " + ", ".join(f"{k}={v}" for k, v in env.items())
    )
    device, device_name = choose_device(args.device, env["CUDA_VISIBLE_DEVICES"], args.cudnn_benchmark)

    listen_at, secret, identity = data_settings()
    if identity is not None and identity.get("model") != args.model:
        named = json.dumps(identity.get("model"))
        raise UsageError(f"INSS_WORKER_IDENTITY names model {named} but --model is '{args.model}'")
    worker, what = start_model(args, device, identity)
    warmup_ms = (time.perf_counter() - t_start) * 1000.0
    log(
        f"model {args.model} ({what}) on {device_name}, "
        f"{torch.get_num_threads()} CPU threads, max batch {args.max_batch}, ready after {warmup_ms:.0f} ms"
    )

    if stopped_by:
        log(f"{stopped_by[0]} before ready: exiting")
        return 0
    ready: Message = {
        "v": PROTOCOL_VERSION,
        "type": "ready",
        "model": args.model,
        "pid": os.getpid(),
        "warmupMs": warmup_ms,
        "device": device_name,
    }
    if listen_at is not None and secret is not None:
        try:
            server, ready["listen"] = listen_data(listen_at)
        except OSError as e:
            where = os.environ.get("INSS_WORKER_LISTEN")
            raise UsageError(f"INSS_WORKER_LISTEN={where}: cannot listen: {e}") from e
        start_data_socket(server, secret, inbox)
    proto.send(ready)
    stdin = sys.stdin.buffer.raw
    threading.Thread(target=read_stdin, args=(stdin, inbox, proto), name="stdin-reader", daemon=True).start()

    served = 0
    while True:
        item = inbox.get()
        if isinstance(item, Event):
            why = "stdin closed" if item is Event.EOF else f"{stopped_by[0]}: answered the batches received before it"
            log(f"{why}; exiting after {served} batches")
            return 0
        if isinstance(item, FrameStreamError):
            raise item
        worker.serve(item)
        served += 1


def start_model(args: Options, device: torch.device, identity: Message | None) -> tuple[Worker, str]:
    """The model built or loaded, on `device`, warmed up: (its worker, what it is for the log). A TorchScript
    module that cannot run on its signature's inputs is a UsageError (its `fatal` names the file)."""
    import torch

    from .models import build_model
    from .scripted import check_dtypes, load_scripted
    from .worker import Worker

    if args.model_file is None or args.signature is None:
        builder, model = build_model(args.model, args.seed, args.weights)
        worker = Worker(model.to(device), device, args.max_batch, args.model, identity)
        worker.warm_up(args.warmup_batches)
        return worker, f"{builder}, seed {args.seed}" + (f", weights {args.weights}" if args.weights else "")
    check_dtypes(args.signature)
    scripted = load_scripted(args.model_file, device)
    worker = Worker(scripted, device, args.max_batch, args.model, identity, args.signature)
    try:
        worker.warm_up(args.warmup_batches)
    except (RuntimeError, torch.jit.Error) as e:
        log(f"warm-up failed: {e}")  # TorchScript's whole message: the module's code and where it failed
        lines = [line.strip() for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
        why = lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"
        raise UsageError(f"--model-file {args.model_file} cannot run on --signature's inputs (zeros): {why}") from e
    return worker, f"TorchScript {args.model_file}, {args.signature.describe()}"


def main() -> None:
    """The process entry (native/torch_worker.py): never returns."""
    # The protocol gets stdout's descriptor to itself; fd 1 and sys.stdout now lead to stderr.
    proto = FdSender(os.dup(1))
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    try:
        code = run(sys.argv[1:], proto)
    except UsageError as e:
        log(f"fatal: {e}")
        proto.fatal(str(e))
        code = 1
    except BaseException as e:  # the contract: report, then exit 1
        import traceback

        traceback.print_exc(file=sys.stderr)
        proto.fatal(f"{type(e).__name__}: {e}")
        code = 1
    sys.stderr.flush()
    # Skip interpreter teardown (the daemon reader thread sits in a read; torch's atexit work is not
    # needed): every answer is already written, unbuffered, to the protocol descriptor.
    os._exit(code)
