"""Serving one batch: check it, preprocess it, time t_inf of the latency model (host-to-device copy,
forward pass, device-to-host copy, synchronised) and answer a `result` or an `error`. Imports torch:
the main loop imports this module only after the protocol descriptor is set up."""

from __future__ import annotations

import time

import torch

from .batch import batch_id, check_batch, wrong_worker
from .framing import Sender
from .inbox import Received
from .preprocess import Preprocess
from .protocol import IMAGE_SHAPE, NUM_CLASSES, OUTPUT_NAME, PROTOCOL_VERSION, Message, error_message, wall_ms
from .shared_memory import slot_samples


class Worker:
    """One model on one device. Called from the main thread only, one batch at a time."""

    def __init__(
        self, model: torch.nn.Module, device: torch.device, max_batch: int, name: str, identity: Message | None
    ) -> None:
        self.preprocess = Preprocess(device)
        self.name = name  # the inss model name (--model): a batch for another model is refused
        self.identity = identity  # INSS_WORKER_IDENTITY, or None: a batch naming another worker is refused
        self.model = model
        self.device = device
        self.max_batch = max_batch
        self.cuda = device.type == "cuda"

    def forward(self, x_host: torch.Tensor) -> tuple[torch.Tensor, float]:
        """t_inf of one batch: upload, forward, download, synchronised. Returns (output on host, ms)."""
        if self.cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.inference_mode():
            y = self.model(x_host.to(self.device, non_blocking=False))
            y = y.to("cpu", dtype=torch.float32)
        if self.cuda:
            torch.cuda.synchronize()
        return y, (time.perf_counter() - t0) * 1000.0

    def warm_up(self, batches: int) -> None:
        """Lazy initialisation (CUDA context, cuDNN handles, allocator pool) before `ready`. On a GPU the
        last warm-up batch is --max-batch, so the allocator pool is sized for the largest batch; on the
        CPU there is nothing lazy to size and a big batch would only delay `ready`."""
        for i in range(batches):
            size = self.max_batch if self.cuda and i == batches - 1 else 1
            self.forward(torch.zeros(size, *IMAGE_SHAPE))

    def serve(self, item: Received) -> None:
        """Answers one batch where it came from (stdin's answer stream or its data connection) with a
        `result` or an `error`. Raises (-> `fatal`) on a CUDA error other than out-of-memory, which
        leaves the context unusable; the agent then restarts the worker."""
        msg, out = item.msg, item.out
        bid = batch_id(msg)
        refused = wrong_worker(msg, self.identity)
        if refused:
            out.send(error_message(bid, refused, "wrong-worker"))
            return
        payload, problem = slot_samples(msg, item.payload, item.region)
        problem = problem or check_batch(msg, payload, self.max_batch, self.name)
        if problem:
            out.send(error_message(bid, problem))
            return
        assert payload is not None and isinstance(msg, dict)  # check_batch passed
        size = msg["size"]
        try:
            x, failed = self.preprocess.batch(msg["inputs"][0], payload, size)
            y, ms = self.forward(x)
        except RuntimeError as e:
            self._failed(e, bid, out)
            return
        if tuple(y.shape) != (size, NUM_CLASSES):
            shown = f"model output has shape {list(y.shape)}, expected [{size},{NUM_CLASSES}]"
            out.send(error_message(bid, shown))
            return
        y_bytes = y.contiguous().numpy().tobytes()  # little-endian: checked at start
        shape = [size, NUM_CLASSES]
        ref: Message = {"name": OUTPUT_NAME, "datatype": "FP32", "shape": shape, "byteLength": len(y_bytes)}
        if failed:
            ref["failed"] = failed
        result: Message = {
            "v": PROTOCOL_VERSION,
            "type": "result",
            "id": bid,
            "latencyMs": ms,
            "outputs": [ref],
            "receivedAtMs": item.received_at_ms,
            "answeredAtMs": wall_ms(),
        }
        out.send(result, y_bytes)

    def _failed(self, e: RuntimeError, bid: str, out: Sender) -> None:
        """Answers a batch whose preprocessing or forward pass raised; re-raises a CUDA error other than
        out-of-memory, which usually poisons the context (the agent restarts the worker)."""
        text = str(e)
        if "out of memory" in text:
            if self.cuda:
                torch.cuda.empty_cache()
            out.send(error_message(bid, f"out of memory: {text.splitlines()[0]}"))
            return
        if self.cuda and "CUDA" in text:
            raise e
        out.send(error_message(bid, f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"))
