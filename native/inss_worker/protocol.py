"""The names, limits and errors of the worker protocol (src/protocol/worker.ts, src/protocol/frames.ts,
docs/worker-protocol.md) that every module of the worker shares. Imports nothing heavy."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

PROTOCOL_VERSION = 1
MAX_HEADER_BYTES = 1 << 20  # as src/protocol/frames.ts
MAX_PAYLOAD_BYTES = 1 << 30
INPUT_NAME = "input"
OUTPUT_NAME = "output"
IMAGE_SHAPE = (3, 224, 224)  # per sample, CHW as torchvision takes it
IMAGE_VALUES = IMAGE_SHAPE[0] * IMAGE_SHAPE[1] * IMAGE_SHAPE[2]
NUM_CLASSES = 1000
IDENTITY_KEYS = ("workerId", "model", "gpu", "pct", "generation")

Message = dict[str, Any]
"""A decoded frame header: one JSON object of src/protocol/worker.ts."""


class FrameStreamError(Exception):
    """A stream is not a frame stream; nothing after this can be trusted on it."""


class UsageError(Exception):
    """Bad command-line arguments or environment: reported as `fatal`, exit 1."""


def log(msg: str) -> None:
    """One line on stderr, the worker's log (stdout carries the protocol)."""
    print(f"torch_worker[{os.getpid()}]: {msg}", file=sys.stderr, flush=True)


def wall_ms() -> float:
    """Wall-clock ms since the Unix epoch (per-hop tracing; comparable across processes of one host)."""
    return time.time() * 1000.0


def error_message(bid: str, message: str, reason: str | None = None) -> Message:
    """The `error` answer to the batch `bid` (an empty id when the batch had none)."""
    msg: Message = {"v": PROTOCOL_VERSION, "type": "error", "id": bid, "message": message}
    if reason is not None:
        msg["reason"] = reason
    return msg
