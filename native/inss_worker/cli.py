"""The worker's command line (docs/worker-protocol.md, "The PyTorch worker"). Bad arguments are a
UsageError, reported as `fatal` rather than argparse's exit 2."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import NoReturn

from .protocol import UsageError
from .signature import Signature, parse_signature


@dataclass(frozen=True)
class Options:
    model: str  # an inss name (resnet50, mobilenet, ...) or a torchvision builder name; any name with model_file
    model_file: str | None  # a TorchScript module (torch.jit.save); a torchvision model otherwise
    signature: Signature | None  # the TorchScript module's tensors (--signature), exactly when model_file is set
    device: str  # auto, cpu or cuda; auto: cuda when torch sees one
    weights: str | None  # a state_dict .pth file; random init after `seed` otherwise
    max_batch: int
    warmup_batches: int
    seed: int
    threads: int | None  # CPU threads for torch; torch's default otherwise
    cudnn_benchmark: bool


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def parse_args(argv: list[str]) -> Options:
    ap = _Parser(prog="torch_worker.py", description="inss PyTorch worker (docs/worker-protocol.md)")
    ap.add_argument(
        "--model", required=True, help="inss name (resnet50, mobilenet, ...) or a torchvision builder name"
    )
    ap.add_argument("--model-file", default=None, help="a TorchScript module saved by torch.jit.save")
    ap.add_argument("--signature", default=None, help="with --model-file: its WorkerSignature as JSON")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"], help="auto: cuda when available")
    ap.add_argument("--weights", default=None, help="a state_dict .pth file (random init otherwise)")
    ap.add_argument("--max-batch", type=int, default=32)
    ap.add_argument("--warmup-batches", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=None, help="CPU threads for torch (torch's default otherwise)")
    ap.add_argument(
        "--cudnn-benchmark",
        action="store_true",
        help="let cuDNN autotune per input shape (faster kernels; the first batch of each size is slow)",
    )
    a = ap.parse_args(argv)
    if a.max_batch < 1:
        raise UsageError(f"--max-batch: expected >= 1, got {a.max_batch}")
    if a.warmup_batches < 0:
        raise UsageError(f"--warmup-batches: expected >= 0, got {a.warmup_batches}")
    if a.threads is not None and a.threads < 1:
        raise UsageError(f"--threads: expected >= 1, got {a.threads}")
    if (a.model_file is None) != (a.signature is None):
        raise UsageError("--model-file and --signature go together (a TorchScript module and its tensors)")
    if a.model_file is not None and a.weights is not None:
        raise UsageError("--weights: only for a torchvision model; a TorchScript module (--model-file) has its own")
    if a.model_file is not None and not os.path.isfile(a.model_file):
        raise UsageError(f"--model-file {a.model_file}: no such file")
    return Options(
        model=a.model,
        model_file=a.model_file,
        signature=parse_signature(a.signature) if a.signature is not None else None,
        device=a.device,
        weights=a.weights,
        max_batch=a.max_batch,
        warmup_batches=a.warmup_batches,
        seed=a.seed,
        threads=a.threads,
        cudnn_benchmark=a.cudnn_benchmark,
    )
