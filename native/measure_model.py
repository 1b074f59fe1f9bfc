"""The model gpu_measure.py measures, on the GPU: a zoo model (torchvision, random weights) or a TorchScript
module (--model-file) with its signature, and the inputs of a batch of it. Imports torch inside its methods,
so gpu_measure.py reads its arguments without loading torch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from inss_worker.models import MODELS
from inss_worker.signature import IMAGE_SIGNATURE, Signature

if TYPE_CHECKING:
    import torch


class Model:
    """A model on the GPU and its signature: a zoo model (torchvision, random weights) or a TorchScript one."""

    def __init__(self, name: str, model_file: str | None, sig: Signature | None) -> None:
        import torch
        import torchvision

        torch.backends.cudnn.benchmark = True
        if model_file is not None and sig is not None:
            from inss_worker.scripted import check_dtypes, load_scripted

            check_dtypes(sig)
            self.net: Any = load_scripted(model_file, torch.device("cuda", 0))
            self.sig = sig
        else:
            self.net = getattr(torchvision.models, MODELS[name])(weights=None).eval().cuda()
            self.sig = IMAGE_SIGNATURE

    def inputs(self, batch: int, device: str = "cpu") -> list[torch.Tensor]:
        """Inputs for a batch (pinned when on the host): random floating point, zero for other datatypes."""
        import torch

        from inss_worker.scripted import torch_dtype

        xs = []
        for s in self.sig.inputs:
            dtype = torch_dtype(s.datatype)
            shape = self.sig.shape_of(s, batch)
            x = torch.randn(shape).to(dtype) if dtype.is_floating_point else torch.zeros(shape, dtype=dtype)
            xs.append(x.to(device) if device != "cpu" else x.pin_memory())
        return xs

    def run(self, xs: list[torch.Tensor]) -> None:
        """One batch: upload, forward, download; returns once the outputs are on the host."""
        from inss_worker.scripted import to_host

        to_host(self.net(*[x.to("cuda", non_blocking=True) for x in xs]))

    def batches(self, wanted: list[int]) -> list[int]:
        """The batch sizes this model can be measured at: 1 only without a batch dimension."""
        return wanted if self.sig.batch_dim else [1]
