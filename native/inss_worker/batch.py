"""What is wrong with a batch, as the simulated worker finds it: ToWorkerSchema of src/protocol/worker.ts
plus the model's signature (signature.py: every input in order, each [size, ...shape], or exactly shape
and size 1 without a batch dimension; per-sample encodings only for a one-input image model) and the
worker identity it names. Pure: no torch, no I/O."""

from __future__ import annotations

import json
import math
from collections.abc import Sized

from .protocol import IDENTITY_KEYS, PROTOCOL_VERSION, Message
from .signature import DATATYPE_BYTES, Signature, Spec

BATCH_KEYS = {"v", "type", "id", "model", "size", "inputs", "running", "worker", "slots"}
TENSOR_KEYS = {"name", "datatype", "shape", "byteLength"}
SAMPLE_ENCODINGS = ("FP32", "UINT8", "JPEG", "PNG")


def batch_id(msg: object) -> str:
    """The batch's id to answer with; empty when it has none."""
    bid = msg.get("id") if isinstance(msg, dict) else None
    return bid if isinstance(bid, str) else ""


def check_batch(msg: object, payload: Sized, max_batch: int, model: str, sig: Signature) -> str | None:
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
    if not sig.batch_dim and size != 1:
        return f"size: {size}, expected 1: model '{model}' takes no batch dimension"
    inputs = msg.get("inputs")
    if not isinstance(inputs, list):
        return "inputs: expected an array"
    if len(inputs) != len(sig.inputs):
        n = len(sig.inputs)
        names = "" if n == 1 else f" ({', '.join(s.name for s in sig.inputs)})"
        return f"expected {n} input{'' if n == 1 else 's'}{names}, got {len(inputs)}"
    for k, t in enumerate(inputs):
        if not isinstance(t, dict) or not TENSOR_KEYS <= set(t) <= TENSOR_KEYS | {"samples"}:
            return f"inputs.{k}: expected an object with keys {', '.join(sorted(TENSOR_KEYS))} (and samples)"
    if sig.image is not None:
        return _check_image_input(inputs[0], payload, size, sig.image)
    return _check_inputs(inputs, payload, size, sig)


def _check_head(t: Message, k: int, spec: Spec, want: list[int], order: str) -> str | None:
    """The name, datatype and shape of the input at position k."""
    name = t["name"]
    if name != spec.name:
        return f"input '{name}': expected '{spec.name}'" if not order else f"inputs.{k}: '{name}', expected {order}"
    if t["datatype"] != spec.datatype:
        return f"input '{name}': datatype {t['datatype']}, expected {spec.datatype}"
    shape = t["shape"]
    if not isinstance(shape, list) or shape != want:
        shown = ",".join(str(d) for d in shape) if isinstance(shape, list) else json.dumps(shape)
        return f"input '{name}': shape [{shown}], expected [{','.join(str(d) for d in want)}]"
    return None


def _check_inputs(inputs: list[Message], payload: Sized, size: int, sig: Signature) -> str | None:
    """Every input of a signature without an image input: in order, each its bytes, one after another."""
    names = ", ".join(f"'{s.name}'" for s in sig.inputs)
    total = 0
    for k, (t, spec) in enumerate(zip(inputs, sig.inputs)):
        order = f"'{spec.name}' (the inputs in the signature's order: {names})" if len(inputs) > 1 else ""
        shape = t["shape"]
        # A variable dimension is the batch's own length (the samples padded to the longest).
        if spec.variable and isinstance(shape, list) and spec.fits(shape[1:] if sig.batch_dim else shape):
            want = shape
        else:  # an error names a variable dimension as -1
            want = [size, *spec.shape] if sig.batch_dim else list(spec.shape)
        problem = _check_head(t, k, spec, want, order)
        if problem:
            return problem
        if "samples" in t:
            return f"input '{spec.name}': samples: only an image input takes per-sample encodings"
        expected = DATATYPE_BYTES[spec.datatype] * math.prod(want)
        if t["byteLength"] != expected:
            return f"input '{spec.name}': byteLength {json.dumps(t['byteLength'])}, expected {expected}"
        total += expected
    if len(payload) != total:
        return f"the payload has {len(payload)} bytes, the inputs' byteLengths add up to {total}"
    return None


def _check_image_input(t: Message, payload: Sized, size: int, spec: Spec) -> str | None:
    problem = _check_head(t, 0, spec, [size, *spec.shape], "")
    if problem:
        return problem
    name = t["name"]
    if "samples" not in t:
        expected = size * spec.sample_bytes
        if t["byteLength"] != expected or len(payload) != expected:
            return f"input '{name}': {len(payload)} payload bytes (byteLength {t['byteLength']}), expected {expected}"
        return None
    # As agent/decode.ts checkBatchInput: one sample per batch row, sizes fixed for FP32 and UINT8.
    fixed_bytes = {"FP32": spec.sample_bytes, "UINT8": spec.values}
    samples = t["samples"]
    if not isinstance(samples, list) or len(samples) != size:
        return f"input '{name}': samples: expected a list of {size}"
    total = 0
    for k, smp in enumerate(samples):
        if not _is_sample(smp):
            return f"input '{name}': sample {k}: expected {{encoding: {'|'.join(SAMPLE_ENCODINGS)}, byteLength}}"
        fixed = fixed_bytes.get(smp["encoding"])
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
