"""A model's tensor signature (src/repository/types.ts WorkerSignature, `--signature` JSON): its inputs and
outputs in order, each a name, a datatype of src/protocol/tensor.ts and a shape without the batch
dimension (an input's may have variable dimensions, -1: each batch gives their lengths), and whether the
model takes a batch dimension. The zoo's torchvision classifiers have the
signature IMAGE_SIGNATURE. Pure: no torch, no I/O."""

from __future__ import annotations

import json
from dataclasses import dataclass

from .protocol import IMAGE_SHAPE, INPUT_NAME, NUM_CLASSES, OUTPUT_NAME, UsageError

# Bytes per element of each datatype, as DATATYPE_BYTES in src/protocol/tensor.ts (BOOL: one byte).
DATATYPE_BYTES = {
    "BOOL": 1,
    "UINT8": 1,
    "UINT16": 2,
    "UINT32": 4,
    "UINT64": 8,
    "INT8": 1,
    "INT16": 2,
    "INT32": 4,
    "INT64": 8,
    "FP16": 2,
    "FP32": 4,
    "FP64": 8,
}
SIGNATURE_KEYS = {"inputs", "outputs", "batchDim"}
SPEC_KEYS = {"name", "datatype", "shape"}
VARIABLE_DIM = -1  # an input dimension whose length each batch gives (Triton's dims -1)


@dataclass(frozen=True)
class Spec:
    """One input or output: `shape` excludes the batch dimension."""

    name: str
    datatype: str
    shape: tuple[int, ...]
    image: bool = False  # an FP32 [3, S, S] image input: also takes per-sample UINT8/JPEG/PNG and slots

    @property
    def variable(self) -> bool:
        """Whether a dimension's length is each batch's (the batch pads its samples to the longest)."""
        return VARIABLE_DIM in self.shape

    def fits(self, sample: list[int]) -> bool:
        """Whether a sample shape (without the batch dimension) is this spec's: fixed dims equal, variable >= 1."""
        return len(sample) == len(self.shape) and all(
            isinstance(d, int) and not isinstance(d, bool) and (d >= 1 if w == VARIABLE_DIM else d == w)
            for d, w in zip(sample, self.shape)
        )

    @property
    def values(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def sample_bytes(self) -> int:
        """Bytes of one sample (one batch row) of this tensor."""
        return DATATYPE_BYTES[self.datatype] * self.values


@dataclass(frozen=True)
class Signature:
    inputs: tuple[Spec, ...]
    outputs: tuple[Spec, ...]
    batch_dim: bool

    @property
    def image(self) -> Spec | None:
        """The one image input of a one-input image model (the path with per-sample encodings and shared-memory
        slots), or None."""
        return self.inputs[0] if len(self.inputs) == 1 and self.inputs[0].image else None

    def shape_of(self, spec: Spec, size: int, length: int = 1) -> list[int]:
        """A batch tensor's shape: [size, ...shape], or exactly shape (size 1) without a batch dimension;
        each variable dimension `length` long (warm-up and measurement batches)."""
        shape = [length if d == VARIABLE_DIM else d for d in spec.shape]
        return [size, *shape] if self.batch_dim else shape

    def describe(self) -> str:
        def side(specs: tuple[Spec, ...]) -> str:
            return ", ".join(f"{s.name} {s.datatype} [{','.join(map(str, s.shape))}]" for s in specs)

        return f"({side(self.inputs)}) -> ({side(self.outputs)}){'' if self.batch_dim else ', no batch dimension'}"


IMAGE_SIGNATURE = Signature(
    inputs=(Spec(INPUT_NAME, "FP32", IMAGE_SHAPE, image=True),),
    outputs=(Spec(OUTPUT_NAME, "FP32", (NUM_CLASSES,)),),
    batch_dim=True,
)
"""The zoo's torchvision classifiers: one FP32 image [3, 224, 224] in, 1000 FP32 class scores out."""


def parse_signature(text: str) -> Signature:
    """`--signature` JSON -> Signature; UsageError naming the field otherwise."""
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise UsageError(f"--signature: not JSON ({e})") from e
    if not isinstance(doc, dict):
        raise UsageError("--signature: expected a JSON object {inputs, outputs, batchDim}")
    unknown = sorted(set(doc) - SIGNATURE_KEYS)
    if unknown:
        raise UsageError(f"--signature: unknown keys: {', '.join(unknown)} (expected inputs, outputs, batchDim)")
    batch_dim = doc.get("batchDim")
    if not isinstance(batch_dim, bool):
        raise UsageError(f"--signature.batchDim: expected true or false, got {json.dumps(batch_dim)}")
    inputs = _specs(doc.get("inputs"), "inputs")
    outputs = _specs(doc.get("outputs"), "outputs")
    for k, s in enumerate(inputs):
        if s.image and (len(inputs) != 1 or not batch_dim):
            raise UsageError(
                f"--signature.inputs.{k}.image: an image input must be the model's only input, with a batch dimension"
            )
    return Signature(inputs, outputs, batch_dim)


def _specs(raw: object, field: str) -> tuple[Spec, ...]:
    if not isinstance(raw, list) or not raw:
        raise UsageError(f"--signature.{field}: expected a non-empty array of {{name, datatype, shape}}")
    specs = tuple(_spec(x, f"--signature.{field}.{k}", field == "inputs") for k, x in enumerate(raw))
    names = [s.name for s in specs]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--signature.{field}: the name {', '.join(twice)} is used more than once")
    return specs


def _spec(raw: object, field: str, is_input: bool) -> Spec:
    allowed = SPEC_KEYS | ({"image"} if is_input else set())
    if not isinstance(raw, dict) or not SPEC_KEYS <= set(raw) <= allowed:
        raise UsageError(f"{field}: expected an object with keys {', '.join(sorted(allowed))} (image optional)")
    name, datatype, shape, image = raw["name"], raw["datatype"], raw["shape"], raw.get("image", False)
    if not isinstance(name, str) or not name:
        raise UsageError(f"{field}.name: expected a non-empty string, got {json.dumps(name)}")
    if datatype not in DATATYPE_BYTES:
        raise UsageError(f"{field}.datatype: {json.dumps(datatype)} is not one of {', '.join(DATATYPE_BYTES)}")
    least = VARIABLE_DIM if is_input else 1
    if not isinstance(shape, list) or not all(
        isinstance(d, int) and not isinstance(d, bool) and (d >= 1 or d == least) for d in shape
    ):
        dims = "positive integers, or -1 for a variable dimension" if is_input else "positive integers (fixed dims)"
        raise UsageError(f"{field}.shape: expected an array of {dims}, got {json.dumps(shape)}")
    if not isinstance(image, bool):
        raise UsageError(f"{field}.image: expected true or false, got {json.dumps(image)}")
    if image and (
        datatype != "FP32" or VARIABLE_DIM in shape or len(shape) != 3 or shape[0] != 3 or shape[1] != shape[2]
    ):
        raise UsageError(f"{field}.image: an image input is FP32 [3, S, S], not {datatype} {json.dumps(shape)}")
    return Spec(name, datatype, tuple(shape), image)
