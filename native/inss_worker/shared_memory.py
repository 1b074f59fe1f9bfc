"""Shared memory (docs/worker-protocol.md, "Shared memory"): the scheduler's region, mapped read-only,
and the samples a batch gives as `slots` in it, found as src/protocol/shm.ts sampleViews finds them.
No view of a slot is kept once its batch is answered."""

from __future__ import annotations

import mmap
import os
from typing import Union

Region = memoryview


class Samples:
    """A batch input whose samples are views (of the region, or of the payload); len() is their total
    bytes, as a payload's would be."""

    def __init__(self, views: list[memoryview]) -> None:
        self.views = views

    def __len__(self) -> int:
        return sum(len(v) for v in self.views)


Payload = Union[bytearray, Samples]
"""A batch's input bytes: the frame's payload, or its samples found in place."""


def map_region(shm: dict[str, object]) -> tuple[Region | None, str | None]:
    """(read-only mapping of the scheduler's region, None) or (None, why not), for an `attach`'s `shm`."""
    if os.environ.get("INSS_WORKER_SHM") == "off":
        return None, "INSS_WORKER_SHM=off"
    path, size = shm.get("path"), shm.get("bytes")
    if not isinstance(path, str) or not isinstance(size, int) or size <= 0:
        return None, "attach.shm: expected {path, bytes}"
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            region = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
    except (OSError, ValueError) as e:
        return None, f"{path}: {e}"
    if len(region) != size:
        return None, f"{path} has {len(region)} bytes, attach says {size}"
    return memoryview(region), None


def _is_slot(slot: object) -> bool:
    """[offset, byteLength], both integers."""
    if not isinstance(slot, list) or len(slot) != 2:
        return False
    return all(isinstance(x, int) and not isinstance(x, bool) for x in slot)


def slot_samples(
    msg: object, payload: bytearray, region: Region | None, sample_bytes: int
) -> tuple[Payload | None, str | None]:
    """(Samples, None) for a batch with `slots`, (payload, None) for one without, or (None, why refused).
    `sample_bytes`: one sample of the image input as its own datatype (FP32 [3, S, S])."""
    if not isinstance(msg, dict) or msg.get("slots") is None:
        return payload, None
    slots = msg["slots"]
    inputs = msg.get("inputs")
    size = msg.get("size")
    if (
        not isinstance(slots, list)
        or not isinstance(inputs, list)
        or len(inputs) != 1
        or not isinstance(inputs[0], dict)
        or not isinstance(size, int)
        or len(slots) != size
    ):
        return None, "slots: expected one entry per sample of the one input"
    t = inputs[0]
    name = t.get("name")
    smps = t.get("samples")
    if isinstance(smps, list):
        lengths = [s.get("byteLength") if isinstance(s, dict) else None for s in smps]
    else:
        lengths = [sample_bytes] * size
    if len(lengths) != size:
        return None, f"input '{name}': samples: expected a list of {size}"
    views: list[memoryview] = []
    at = 0
    data = memoryview(payload)
    for k, (slot, n) in enumerate(zip(slots, lengths)):
        if not isinstance(n, int):
            return None, f"input '{name}': sample {k}: no byteLength"
        if slot is None:
            if at + n > len(data):
                return None, f"input '{name}': the payload has {len(data)} bytes, fewer than its inline samples need"
            views.append(data[at : at + n])
            at += n
            continue
        if region is None:
            return None, f"input '{name}': sample {k} is in shared memory, but this worker has not mapped a region"
        if not _is_slot(slot):
            return None, f"slots.{k}: expected [offset, byteLength] or null"
        offset, length = slot
        if length != n:
            return None, f"input '{name}': sample {k}: its slot holds {length} bytes, the input says {n}"
        if offset < 0 or offset + length > len(region):
            return None, (
                f"input '{name}': sample {k}: slot [{offset}, {length}] is outside the region of {len(region)} bytes"
            )
        views.append(region[offset : offset + length])
    if at != len(data):
        return None, f"input '{name}': the payload has {len(data)} bytes, its inline samples add up to {at}"
    return Samples(views), None
