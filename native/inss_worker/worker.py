"""Serving one batch of the model's signature (signature.py): check it, make its inputs (the image path
preprocesses per-sample encodings; every other input is its bytes in place), time t_inf of the latency
model (host-to-device copy, forward pass, device-to-host copy, synchronised), check the outputs against
the signature and answer a `result` or an `error`. Imports torch: the main loop imports this module only
after the protocol descriptor is set up."""

from __future__ import annotations

import time
from typing import Any, Callable

import torch

from .batch import batch_id, check_batch, wrong_worker
from .framing import Sender
from .inbox import Received
from .preprocess import Failed, Preprocess
from .protocol import PROTOCOL_VERSION, Message, error_message, log, wall_ms
from .scripted import input_tensors, outputs_of, tensor_bytes, to_host, zero_inputs
from .shared_memory import slot_samples
from .signature import IMAGE_SIGNATURE, Signature


class Worker:
    """One model on one device. Called from the main thread only, one batch at a time."""

    def __init__(
        self,
        model: Callable[..., Any],
        device: torch.device,
        max_batch: int,
        name: str,
        identity: Message | None,
        sig: Signature = IMAGE_SIGNATURE,
    ) -> None:
        self.sig = sig
        image = sig.image
        # The one image input's per-sample encodings and slots (the zoo's models, or a repository model's
        # one `image` input); every other signature takes each input's own bytes.
        self.preprocess = Preprocess(device, image.shape) if image is not None else None
        self.sample_bytes = image.sample_bytes if image is not None else 0
        self.name = name  # the inss model name (--model): a batch for another model is refused
        self.identity = identity  # INSS_WORKER_IDENTITY, or None: a batch naming another worker is refused
        self.model = model
        self.device = device
        self.max_batch = max_batch
        self.cuda = device.type == "cuda"
        # The allocator's peak while the last batch ran (MB), reported as `memoryMb`; None on the CPU.
        self.memory_mb: float | None = None

    def forward(self, xs: list[torch.Tensor]) -> tuple[Any, float]:
        """t_inf of one batch: upload, forward, download, synchronised. Returns (outputs on host, ms)."""
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats(self.device)
        t0 = time.perf_counter()
        with torch.inference_mode():
            y = to_host(self.model(*[x.to(self.device, non_blocking=False) for x in xs]))
        if self.cuda:
            torch.cuda.synchronize()
            self.memory_mb = torch.cuda.max_memory_reserved(self.device) / 2**20
        return y, (time.perf_counter() - t0) * 1000.0

    def warm_up(self, batches: int) -> None:
        """Lazy initialisation (CUDA context, cuDNN handles, allocator pool) before `ready`. On a GPU the
        last warm-up batch is --max-batch, so the allocator pool is sized for the largest batch; on the
        CPU there is nothing lazy to size and a big batch would only delay `ready`. Outputs that differ
        from the signature are logged here and answered as an `error` for each batch."""
        for i in range(batches):
            size = self.max_batch if self.cuda and i == batches - 1 and self.sig.batch_dim else 1
            y, _ = self.forward(zero_inputs(self.sig, size))
            _, problem = outputs_of(y, self.sig, size)
            if problem and i == batches - 1:
                log(f"warm-up: {problem}: every batch will be answered with that error")

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
        if self.preprocess is None and isinstance(msg, dict) and msg.get("slots") is not None:
            out.send(error_message(bid, f"slots: only for a model with one image input; '{self.name}' has none"))
            return
        payload, problem = slot_samples(msg, item.payload, item.region, self.sample_bytes)
        problem = problem or check_batch(msg, payload, self.max_batch, self.name, self.sig)
        if problem:
            out.send(error_message(bid, problem))
            return
        assert payload is not None and isinstance(msg, dict)  # check_batch passed
        size = msg["size"]
        failed: list[Failed] = []
        try:
            if self.preprocess is not None:
                x, failed = self.preprocess.batch(msg["inputs"][0], payload, size)
                xs = [x]
            else:
                assert isinstance(payload, bytearray)  # no slots
                xs = input_tensors(self.sig, payload, [t["shape"] for t in msg["inputs"]])
            y, ms = self.forward(xs)
        except (RuntimeError, torch.jit.Error) as e:  # a TorchScript `raise` is a torch.jit.Error
            self._failed(e, bid, out)
            return
        ys, problem = outputs_of(y, self.sig, size)
        if problem:
            out.send(error_message(bid, problem))
            return
        blobs = [tensor_bytes(t) for t in ys]
        refs: list[Message] = []
        for spec, t, blob in zip(self.sig.outputs, ys, blobs):
            shape = list(t.shape)
            ref: Message = {"name": spec.name, "datatype": spec.datatype, "shape": shape, "byteLength": len(blob)}
            if failed:
                ref["failed"] = failed
            refs.append(ref)
        result: Message = {
            "v": PROTOCOL_VERSION,
            "type": "result",
            "id": bid,
            "latencyMs": ms,
            "outputs": refs,
            "receivedAtMs": item.received_at_ms,
            "answeredAtMs": wall_ms(),
        }
        if self.memory_mb:
            result["memoryMb"] = self.memory_mb
        out.send(result, blobs[0] if len(blobs) == 1 else b"".join(blobs))

    def _failed(self, e: Exception, bid: str, out: Sender) -> None:
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
