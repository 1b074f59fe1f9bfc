"""What is wrong with a batch, as the simulated worker finds it: ToWorkerSchema of src/protocol/worker.ts
plus the model's signature (one FP32 `input` of [size, 3, 224, 224]) and the worker identity it names.
Pure: no torch, no I/O."""

from __future__ import annotations

import json
from collections.abc import Sized

from .protocol import IDENTITY_KEYS, IMAGE_SHAPE, IMAGE_VALUES, INPUT_NAME, PROTOCOL_VERSION, Message

BATCH_KEYS = {"v", "type", "id", "model", "size", "inputs", "running", "worker", "slots"}
TENSOR_KEYS = {"name", "datatype", "shape", "byteLength"}
SAMPLE_ENCODINGS = ("FP32", "UINT8", "JPEG", "PNG")
FIXED_SAMPLE_BYTES = {"FP32": 4 * IMAGE_VALUES, "UINT8": IMAGE_VALUES}


def batch_id(msg: object) -> str:
    """The batch's id to answer with; empty when it has none."""
    bid = msg.get("id") if isinstance(msg, dict) else None
    return bid if isinstance(bid, str) else ""


def check_batch(msg: object, payload: Sized, max_batch: int, model: str) -> str | None:
    """What is wrong with a batch message and its payload (its bytes, or its samples in place), or None."""
    if not isinstance(msg, dict):
        return "message is not a JSON object"
    if msg.get("v") != PROTOCOL_VERSION:
        return f"v: expected {PROTOCOL_VERSION}, got {json.dumps(msg.get('v'))}"
    if msg.get("type") != "batch":
        return f"type: expected 'batch', got {json.dumps(msg.get('type'))}"
    unknown = sorted(set(msg) - BATCH_KEYS)
    if unknown:
        return f"unknown keys: {', '.join(unknown)}"
    if not isinstance(msg.get("id"), str) or not msg["id"]:
        return "id: expected a non-empty string"
    if msg.get("model") != model:
        return f"batch for model {json.dumps(msg.get('model'))} refused: this worker runs '{model}'"
    size = msg.get("size")
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        return f"size: expected a positive integer, got {json.dumps(size)}"
    if size > max_batch:
        return f"size: {size} is over this worker's --max-batch {max_batch}"
    inputs = msg.get("inputs")
    if not isinstance(inputs, list):
        return "inputs: expected an array"
    if len(inputs) != 1:
        return f"expected 1 input, got {len(inputs)}"
    t = inputs[0]
    if not isinstance(t, dict) or not TENSOR_KEYS <= set(t) <= TENSOR_KEYS | {"samples"}:
        return f"inputs.0: expected an object with keys {', '.join(sorted(TENSOR_KEYS))} (and samples)"
    return _check_input(t, payload, size)


def _check_input(t: Message, payload: Sized, size: int) -> str | None:
    name = t["name"]
    if name != INPUT_NAME:
        return f"input '{name}': expected '{INPUT_NAME}'"
    if t["datatype"] != "FP32":
        return f"input '{name}': datatype {t['datatype']}, expected FP32"
    want = [size, *IMAGE_SHAPE]
    shape = t["shape"]
    if not isinstance(shape, list) or shape != want:
        shown = ",".join(str(d) for d in shape) if isinstance(shape, list) else json.dumps(shape)
        return f"input '{name}': shape [{shown}], expected [{','.join(str(d) for d in want)}]"
    if "samples" not in t:
        expected = 4 * size * IMAGE_VALUES
        if t["byteLength"] != expected or len(payload) != expected:
            return f"input '{name}': {len(payload)} payload bytes (byteLength {t['byteLength']}), expected {expected}"
        return None
    # As agent/decode.ts checkBatchInput: one sample per batch row, sizes fixed for FP32 and UINT8.
    samples = t["samples"]
    if not isinstance(samples, list) or len(samples) != size:
        return f"input '{name}': samples: expected a list of {size}"
    total = 0
    for k, smp in enumerate(samples):
        if not _is_sample(smp):
            return f"input '{name}': sample {k}: expected {{encoding: {'|'.join(SAMPLE_ENCODINGS)}, byteLength}}"
        fixed = FIXED_SAMPLE_BYTES.get(smp["encoding"])
        if fixed is not None and smp["byteLength"] != fixed:
            return f"input '{name}': sample {k} ({smp['encoding']}) is {smp['byteLength']} bytes, expected {fixed}"
        total += smp["byteLength"]
    if t["byteLength"] != total or len(payload) != total:
        return (
            f"input '{name}': {len(payload)} payload bytes (byteLength {t['byteLength']}), "
            f"its samples add up to {total}"
        )
    return None


def _is_sample(smp: object) -> bool:
    if not isinstance(smp, dict) or set(smp) != {"encoding", "byteLength"}:
        return False
    n = smp["byteLength"]
    return smp["encoding"] in SAMPLE_ENCODINGS and isinstance(n, int) and not isinstance(n, bool) and n >= 0


def describe_worker(w: Message) -> str:
    """As describeWorker in src/protocol/agent.ts: 'w2 (mobilenet on GPU 0 at 50%, generation 7)'."""
    pct = w.get("pct")
    pct = int(pct) if isinstance(pct, float) and pct.is_integer() else pct
    return f"{w.get('workerId')} ({w.get('model')} on GPU {w.get('gpu')} at {pct}%, generation {w.get('generation')})"


def wrong_worker(msg: object, identity: Message | None) -> str | None:
    """Why a batch naming a worker identity is not for the worker `identity`, or None."""
    named = msg.get("worker") if isinstance(msg, dict) else None
    if not isinstance(named, dict) or identity is None:
        return None
    if all(named.get(k) == identity.get(k) for k in IDENTITY_KEYS):
        return None
    return f"batch for worker {describe_worker(named)} refused: this worker is {describe_worker(identity)}"
