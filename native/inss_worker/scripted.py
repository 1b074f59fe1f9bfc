"""The tensors of a signature in torch: TorchScript models (--model-file) loaded, each datatype's torch dtype,
a batch's inputs as tensors over its payload, and a model's outputs checked against the signature (one
tensor, a tuple or list of tensors in the signature's order, or a dict keyed by output name). Imports
torch: the main loop imports this module only after the protocol descriptor is set up; gpu_measure.py
uses it too."""

from __future__ import annotations

import math
import os
from typing import Any

import torch

from .protocol import UsageError
from .signature import DATATYPE_BYTES, Signature, Spec

# torch's name of each datatype of src/protocol/tensor.ts. UINT16/32/64 have no torch dtype before torch 2.3.
TORCH_NAMES = {
    "BOOL": "bool",
    "UINT8": "uint8",
    "UINT16": "uint16",
    "UINT32": "uint32",
    "UINT64": "uint64",
    "INT8": "int8",
    "INT16": "int16",
    "INT32": "int32",
    "INT64": "int64",
    "FP16": "float16",
    "FP32": "float32",
    "FP64": "float64",
}


def torch_dtype(datatype: str) -> torch.dtype:
    """The torch dtype of a datatype the signature's check found torch has (check_dtypes)."""
    dtype = getattr(torch, TORCH_NAMES[datatype], None)
    assert isinstance(dtype, torch.dtype), datatype
    return dtype


def check_dtypes(sig: Signature) -> None:
    """UsageError naming the first tensor of the signature whose datatype this torch has no dtype for."""
    for field, specs in (("inputs", sig.inputs), ("outputs", sig.outputs)):
        for k, s in enumerate(specs):
            if not isinstance(getattr(torch, TORCH_NAMES[s.datatype], None), torch.dtype):
                raise UsageError(
                    f"--signature.{field}.{k}.datatype: {s.datatype} ('{s.name}') has no torch dtype in torch "
                    f"{torch.__version__}; use a signed type (INT32, INT64) in the model and its configuration"
                )


def load_scripted(path: str, device: torch.device) -> torch.jit.ScriptModule:
    """The TorchScript module saved at `path` (torch.jit.save), on `device`, in eval mode. UsageError with
    torch's message when the file is not one."""
    if not os.path.isfile(path):
        raise UsageError(f"--model-file {path}: no such file")
    try:
        module = torch.jit.load(path, map_location=device)
    except Exception as e:  # torch raises RuntimeError, ValueError or its own for a file it cannot read
        text = " | ".join(line.strip() for line in str(e).splitlines()[:6] if line.strip())
        raise UsageError(
            f"--model-file {path}: not a TorchScript model torch.jit.load can read: {text} (a state_dict or a "
            "model pickled by torch.save is not: export with torch.jit.script or torch.jit.trace and torch.jit.save)"
        ) from e
    return module.eval()


def input_tensors(sig: Signature, payload: bytearray, shapes: list[list[int]]) -> list[torch.Tensor]:
    """A checked batch's inputs over its payload (their bytes one after another in signature order), each
    of its shape in the batch message (a variable dimension's length is the batch's), in place where the
    offset suits the element size; BOOL bytes read as nonzero = true."""
    xs = []
    at = 0
    for spec, shape in zip(sig.inputs, shapes):
        n = DATATYPE_BYTES[spec.datatype] * math.prod(shape)
        xs.append(_tensor(payload, at, n, spec).view(*shape))
        at += n
    return xs


def _tensor(payload: bytearray, at: int, n: int, spec: Spec) -> torch.Tensor:
    if spec.datatype == "BOOL":
        return torch.frombuffer(payload, dtype=torch.uint8, count=n, offset=at) != 0
    dtype = torch_dtype(spec.datatype)
    width = torch.empty(0, dtype=dtype).element_size()
    if at % width != 0:  # the payload itself is allocated aligned; an odd offset gets an aligned copy
        return torch.frombuffer(bytearray(memoryview(payload)[at : at + n]), dtype=dtype)
    return torch.frombuffer(payload, dtype=dtype, count=n // width, offset=at)


def zero_inputs(sig: Signature, size: int) -> list[torch.Tensor]:
    """Inputs of zeros for a batch of `size` (warm-up)."""
    return [torch.zeros(sig.shape_of(s, size), dtype=torch_dtype(s.datatype)) for s in sig.inputs]


def to_host(y: Any) -> Any:
    """A model's result with its tensors copied to the CPU (a tensor, a tuple/list or a dict of them)."""
    if isinstance(y, torch.Tensor):
        return y.to("cpu")
    if isinstance(y, (tuple, list)):
        return [to_host(v) for v in y]
    if isinstance(y, dict):
        return {k: to_host(v) for k, v in y.items()}
    return y


def outputs_of(y: Any, sig: Signature, size: int) -> tuple[list[torch.Tensor], str | None]:
    """(the outputs in the signature's order, None), or ([], what differs from the signature)."""
    names = [s.name for s in sig.outputs]
    if isinstance(y, torch.Tensor):
        ys = [y]
    elif isinstance(y, (tuple, list)):
        ys = list(y)
    elif isinstance(y, dict):
        missing = [n for n in names if n not in y]
        if missing:
            return [], f"the model's dict has no output {', '.join(missing)} (its keys: {', '.join(map(str, y))})"
        ys = [y[n] for n in names]
    else:
        return [], f"the model returned a {type(y).__name__}, expected a tensor, a tuple or list of them, or a dict"
    if len(ys) != len(names):
        return [], f"the model returned {len(ys)} outputs, the signature has {len(names)} ({', '.join(names)})"
    for spec, t in zip(sig.outputs, ys):
        problem = _output_problem(t, spec, sig.shape_of(spec, size))
        if problem:
            return [], f"output '{spec.name}': {problem}"
    return ys, None


def _output_problem(t: object, spec: Spec, want: list[int]) -> str | None:
    if not isinstance(t, torch.Tensor):
        return f"the model returned a {type(t).__name__}, expected a tensor"
    dtype = torch_dtype(spec.datatype)
    if t.dtype != dtype:
        return f"dtype {str(t.dtype).replace('torch.', '')}, the signature says {spec.datatype} ({str(dtype)[6:]})"
    if list(t.shape) != want:
        return f"shape [{','.join(map(str, t.shape))}], the signature says [{','.join(map(str, want))}]"
    return None


def tensor_bytes(t: torch.Tensor) -> memoryview:
    """A host tensor's bytes, row-major, in the host's byte order (little-endian: checked at start); BOOL
    one byte per element."""
    return memoryview(t.contiguous().reshape(-1).numpy()).cast("B")
