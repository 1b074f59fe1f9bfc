"""The models: inss names -> torchvision builders, built randomly initialised after a seed (nothing is
downloaded; latency does not depend on the weights' values, and a seeded model is reproducible) or from
a state_dict file; and the device they run on. torch is imported inside the functions, so the name
table can be read (native/gpu_measure.py) without loading torch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .protocol import UsageError

if TYPE_CHECKING:
    import torch

# inss model names (the paper's eight) -> torchvision builders; any other builder name passes as is.
MODELS: dict[str, str] = {
    "alexnet": "alexnet",
    "resnet50": "resnet50",
    "vgg16": "vgg16",
    "mnasnet": "mnasnet1_0",
    "mobilenet": "mobilenet_v2",
    "efficientnet": "efficientnet_b0",
    "resnet18": "resnet18",
    "vgg19": "vgg19",
}


def build_model(model: str, seed: int, weights: str | None) -> tuple[str, torch.nn.Module]:
    """(torchvision builder name, the model in eval mode on the CPU) for an inss or torchvision name.
    UsageError when torchvision has no such classification model."""
    import torch
    import torchvision

    builder = MODELS.get(model, model)
    known = torchvision.models.list_models(module=torchvision.models)
    if builder not in known:
        raise UsageError(
            f"--model {model}: not a torchvision classification model "
            f"(inss names: {', '.join(MODELS)}; or one of torchvision's: {', '.join(known)})"
        )
    torch.manual_seed(seed)  # before building: the random init is the model
    net = torchvision.models.get_model(builder, weights=None)
    if weights:
        state = torch.load(weights, map_location="cpu")
        if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
            state = state["state_dict"]
        net.load_state_dict(state)
    return builder, net.eval()


def choose_device(want: str, visible_devices: str, cudnn_benchmark: bool) -> tuple[torch.device, str]:
    """(device, its name for `ready`) for --device auto|cpu|cuda. On CUDA, device 0 is the one GPU
    CUDA_VISIBLE_DEVICES (`visible_devices`, for the error message) leaves visible."""
    import torch

    if want == "auto":
        want = "cuda" if torch.cuda.is_available() else "cpu"
    if want == "cuda" and not torch.cuda.is_available():
        raise UsageError(
            f"--device cuda: torch sees no CUDA device (CUDA_VISIBLE_DEVICES={visible_devices}, "
            f"torch built with CUDA {torch.version.cuda})"
        )
    if want == "cuda":
        torch.backends.cudnn.benchmark = cudnn_benchmark
        return torch.device("cuda", 0), f"cuda:0 ({torch.cuda.get_device_name(0)})"
    return torch.device("cpu"), "cpu"
