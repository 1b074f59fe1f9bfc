"""The preprocessing rule of src/serving/image.ts (docs/http-api.md, "Images: what clients send") on
the worker's device, for an image input of [3, S, S] (S = 224 for the zoo's models): 8-bit RGB CHW ->
resize the shorter side to S (bilinear, align_corners=False, no antialiasing), crop the centre, scale
and normalise with ImageNet's mean and std, as x * scale - bias. Imports torch: the main loop imports
this module only after the protocol descriptor is set up."""

from __future__ import annotations

from typing import Any

import torch
import torchvision.io as tio

from .protocol import IMAGE_SHAPE, Message
from .shared_memory import Payload, Samples

# ImageNet's mean and standard deviation (R, G, B), as src/serving/image.ts.
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

Failed = dict[str, Any]
"""A sample that did not decode: {index, message}, listed in the output's `failed`."""


def resized_axis(length: int, other: int, side: int) -> tuple[int, int]:
    """Step 2 of the rule for one axis: the resized length and where the crop starts."""
    resized = side if length <= other else (side * length) // other
    return resized, (resized - side) // 2


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


class Preprocess:
    """Turns a checked batch input into the model's float32 [size, 3, S, S] on the device."""

    def __init__(self, device: torch.device, shape: tuple[int, ...] = IMAGE_SHAPE) -> None:
        self.device = device
        self.shape = shape  # the image input's [3, S, S]
        self.cuda = device.type == "cuda"
        f32 = torch.float32
        self.scale = torch.tensor([1.0 / (255.0 * s) for s in IMAGENET_STD], dtype=f32, device=device).view(3, 1, 1)
        bias = [m / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD)]
        self.bias = torch.tensor(bias, dtype=f32, device=device).view(3, 1, 1)

    def pixels(self, img: torch.Tensor) -> torch.Tensor:
        """uint8 [3, H, W] -> float32 [3, S, S] on the device."""
        side = self.shape[2]
        x = img.to(self.device, dtype=torch.float32)
        _, h, w = x.shape
        if (h, w) != (side, side):
            rh, top = resized_axis(h, w, side)
            rw, left = resized_axis(w, h, side)
            x = torch.nn.functional.interpolate(x[None], size=(rh, rw), mode="bilinear", align_corners=False)[0]
            x = x[:, top : top + side, left : left + side]
        return x * self.scale - self.bias

    def decode(self, encoding: str, data: memoryview) -> torch.Tensor:
        """An encoded image's bytes -> uint8 [3, H, W] (RGB). JPEG on the GPU (nvjpeg) when there is one."""
        raw = torch.frombuffer(data, dtype=torch.uint8) if len(data) > 0 else torch.empty(0, dtype=torch.uint8)
        if encoding == "JPEG":
            if self.cuda:
                try:
                    return tio.decode_jpeg(raw, mode=tio.ImageReadMode.RGB, device=self.device)
                except RuntimeError:
                    pass  # nvjpeg does not take every JPEG the CPU decoder does (e.g. some grey ones)
            return tio.decode_jpeg(raw, mode=tio.ImageReadMode.RGB)
        return tio.decode_png(raw, mode=tio.ImageReadMode.RGB)

    def batch(self, t: Message, payload: Payload, size: int) -> tuple[torch.Tensor, list[Failed]]:
        """A checked batch input -> (float32 [size, 3, S, S], failed samples). FP32 samples are taken
        as they are, UINT8 ones scaled and normalised, JPEG/PNG ones decoded first; a sample that fails
        to decode is reported (its row stays zero)."""
        views = payload.views if isinstance(payload, Samples) else None
        if "samples" not in t:
            if views is None:
                return torch.frombuffer(payload, dtype=torch.float32).view(size, *self.shape), []
            # Samples in place (shared memory): each copied once, into the batch tensor.
            x = torch.empty(size, *self.shape, dtype=torch.float32)
            for k, v in enumerate(views):
                x[k] = torch.frombuffer(v, dtype=torch.float32).view(*self.shape)
            return x, []
        x = torch.zeros(size, *self.shape, dtype=torch.float32, device=self.device)
        failed: list[Failed] = []
        inline = memoryview(payload) if views is None else memoryview(b"")
        at = 0
        for k, smp in enumerate(t["samples"]):
            n = smp["byteLength"]
            data = views[k] if views is not None else inline[at : at + n]
            at += n
            if smp["encoding"] == "FP32":
                x[k] = torch.frombuffer(data, dtype=torch.float32).view(*self.shape)
            elif smp["encoding"] == "UINT8":
                x[k] = self.pixels(torch.frombuffer(data, dtype=torch.uint8).view(*self.shape))
            else:
                try:
                    x[k] = self.pixels(self.decode(smp["encoding"], data))
                except RuntimeError as e:
                    what = f"the {smp['encoding']} image could not be decoded: {_first_line(e)}"
                    failed.append({"index": k, "message": f"input '{t['name']}': {what}"})
        return x, failed
