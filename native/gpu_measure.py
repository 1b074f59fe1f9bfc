#!/usr/bin/env python3
"""Measure DNN inference latency on a real NVIDIA GPU under MPS, for `inss profile fit`.

Writes an `inss-measurements/1` file (docs/measurement-format.md): each model alone over a grid of
batch sizes and MPS active-thread percentages, and pairs of models running together with shares
summing to 100. Latency is the GPU execution latency t_inf of the latency model: pinned host-to-
device copy of the batch, the forward pass, device-to-host copy of the output, synchronised.

One process per (model, share): CUDA_MPS_ACTIVE_THREAD_PERCENTAGE is fixed when a process creates
its CUDA context, so the orchestrator starts a worker process for each. Models are torchvision's,
randomly initialised (nothing is downloaded): latency does not depend on the weights' values. One
TorchScript model of a repository can be measured beside them: --model-file PATH --signature JSON (a
WorkerSignature, as the PyTorch worker takes it) name it, and the name in --models or --pairs that is not
a zoo model is it; its inputs are random (floating point) or zero (the other datatypes), shaped by the
signature, and a model without a batch dimension is measured at batch 1 only.

  python3 native/gpu_measure.py probe
  python3 native/gpu_measure.py solo  --out solo.json  [--models ...] [--pcts ...] [--batches ...]
  python3 native/gpu_measure.py pairs --out pairs.json [--pairs a:b,...] [--splits 30,50,70] [--batches 4,16]
  python3 native/gpu_measure.py merge --out measurements.json solo.json pairs.json
  (solo and pairs also take [--model-file PATH --signature JSON])
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

from inss_worker.models import MODELS
from inss_worker.protocol import UsageError
from inss_worker.signature import IMAGE_SIGNATURE, Signature, parse_signature
from measure_model import Model

MB = 2**20
Json = dict[str, Any]


def log(*a: object) -> None:
    print(*a, file=sys.stderr, flush=True)


def time_batch(model: Model, batch: int, min_seconds: float, min_iters: int, warmup: int) -> tuple[float, int]:
    """(mean ms of the fastest 90% of timed batches, batches timed): at least min_iters and min_seconds."""
    import torch

    xs = model.inputs(batch)
    with torch.inference_mode():
        for _ in range(warmup):
            model.run(xs)
        torch.cuda.synchronize()
        times: list[float] = []
        start = time.perf_counter()
        while len(times) < min_iters or time.perf_counter() - start < min_seconds:
            t0 = time.perf_counter()
            model.run(xs)  # blocks until the batch is done
            times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    trimmed = times[: max(1, int(len(times) * 0.9))]  # drop the slowest 10% (host hiccups)
    return sum(trimmed) / len(trimmed), len(times)


def kernel_stats(model: Model) -> tuple[int, float]:
    """Kernels per batch-1 forward and their summed run time in ms (under the profiler, which slows the
    host side, so the idle gaps it shows are not used)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    xs = model.inputs(1, "cuda")
    with torch.inference_mode():
        for _ in range(3):
            model.net(*xs)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            model.net(*xs)
            torch.cuda.synchronize()
    kernels = []
    for e in prof.events():
        copy = "memcpy" in e.name.lower() or "memset" in e.name.lower()
        if e.device_type.name == "CUDA" and not copy:
            kernels.append((e.time_range.start, e.time_range.end))
    kernels.sort()
    busy_us = sum(end - start for start, end in kernels)
    return len(kernels), busy_us / 1000.0


def worker(args: argparse.Namespace) -> None:
    """One (model, share) process: measures every batch alone, or runs continuously beside a peer.
    Prints its points as one JSON line on stdout."""
    import torch

    ctx_free, total = torch.cuda.mem_get_info()
    model = Model(args.model, args.model_file, args.signature)
    out: Json = {"model": args.model, "pct": args.pct, "points": []}
    if args.mode == "solo":
        for b in model.batches(args.batches):
            torch.cuda.reset_peak_memory_stats()
            ms, n = time_batch(model, b, args.seconds, 5, 3)
            reserved_mb = torch.cuda.max_memory_reserved() / MB
            out["points"].append({"batch": b, "latencyMs": ms, "iters": n, "reservedMb": reserved_mb})
            log(f"  {args.model} pct {args.pct} batch {b}: {ms:.3f} ms ({n} iters)")
        out["contextMb"] = (total - ctx_free) / MB
        if args.kernels:
            out["kernels"], out["kernelMs"] = kernel_stats(model)
    else:
        batch = model.batches(args.batches)[0]
        out["points"].append(run_beside_peer(model, batch, args.seconds, args.ready, args.go))
    print(json.dumps(out), flush=True)


def run_beside_peer(model: Model, batch: int, seconds: float, ready: str, go: str) -> Json:
    """Pair mode: warm up, say ready (the file `ready`), wait for `go`, then run batches until the stop
    time; the point is the mean of the kept batches."""
    import torch

    xs = model.inputs(batch)
    with torch.inference_mode():
        for _ in range(5):
            model.run(xs)
        torch.cuda.synchronize()
        open(ready, "w").close()
        while not os.path.exists(go):
            time.sleep(0.005)
        stop = time.time() + seconds
        times: list[float] = []
        while time.time() < stop:
            t0 = time.perf_counter()
            model.run(xs)
            times.append((time.perf_counter() - t0) * 1000)
    skip = max(1, len(times) // 10)  # the first tenth: the peer may still be starting
    kept = sorted(times[skip:])[: max(1, int((len(times) - skip) * 0.9))]
    return {"batch": batch, "latencyMs": sum(kept) / len(kept), "iters": len(times)}


def spawn(model: str, pct: int, extra: list[str], args: argparse.Namespace) -> subprocess.Popen[str]:
    """A worker process for (model, pct) under its MPS share; the TorchScript model's with its file."""
    env = dict(os.environ, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=str(pct))
    argv = [sys.executable, __file__, "worker", "--model", model, "--pct", str(pct), *extra]
    if model not in MODELS:
        argv += ["--model-file", args.model_file, "--signature", args.signature_json]
    return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)


def last_json_line(p: subprocess.Popen[str]) -> Json:
    """The JSON line a worker printed last, once it has exited."""
    return json.loads(p.communicate()[0].strip().splitlines()[-1])


def gpu_facts() -> Json:
    import torch

    p = torch.cuda.get_device_properties(0)
    # Host-to-device bandwidth with pinned memory, 64 MiB copies.
    x = torch.empty(64 * MB, dtype=torch.uint8).pin_memory()
    for _ in range(3):
        x.to("cuda")
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        x.to("cuda", non_blocking=True)
    torch.cuda.synchronize()
    bytes_per_ms = 20 * x.numel() / ((time.perf_counter() - t0) * 1000)
    l2 = getattr(p, "L2_cache_size", 0) / MB
    return {
        "name": p.name,
        "smCount": p.multi_processor_count,
        "memMb": round(p.total_memory / MB),
        "l2Mb": round(l2, 2) if l2 else 1,
        "pcieBytesPerMs": round(bytes_per_ms),
        # MPS accepts any integer percentage; the scheduler hands out steps of one SM's worth or 1%.
        "mpsUnitPct": max(1, round(100 / p.multi_processor_count, 2)),
    }


def model_facts(name: str, r: Json, pcie_bytes_per_ms: float, args: argparse.Namespace) -> Json:
    """A model's entry of the measurement file from its full-GPU worker's output `r`."""
    scripted = name not in MODELS
    sig: Signature = args.signature if scripted else IMAGE_SIGNATURE
    input_bytes = sum(s.sample_bytes for s in sig.inputs)
    output_bytes = sum(s.sample_bytes for s in sig.outputs)
    # Memory: context + reserved, linear in batch (least squares).
    bs = [pt["batch"] for pt in r["points"]]
    mem = [pt["reservedMb"] + r["contextMb"] for pt in r["points"]]
    n = len(bs)
    b1 = next(pt["latencyMs"] for pt in r["points"] if pt["batch"] == min(bs))
    transfer_ms = (input_bytes + output_bytes) / pcie_bytes_per_ms
    mb, mm = sum(bs) / n, sum(mem) / n
    slope = sum((b - mb) * (m - mm) for b, m in zip(bs, mem)) / max(1e-9, sum((b - mb) ** 2 for b in bs))
    return {
        "inputBytes": input_bytes,
        "outputBytes": output_bytes,
        "kernels": max(1, r["kernels"]),
        # o_sch * n: what batch 1 at the full GPU spends outside its kernels and copies
        # (launches, scheduling, host overhead), from the timed run, not the profiler.
        "schedSoloMs": round(max(0.0, b1 - r["kernelMs"] - transfer_ms), 5),
        "memory": {"baseMb": round(max(0, mm - slope * mb), 1), "perBatchMb": round(max(0, slope), 3)},
        "notes": [
            (
                f"TorchScript {args.model_file} (torch.jit.load), {sig.describe()}"
                if scripted
                else f"torchvision.models.{MODELS[name]}(weights=None), fp32, eager PyTorch"
            )
            + ", cudnn.benchmark; kernel count and kernel time from torch.profiler at batch 1"
        ],
    }


def write_json(path: str, doc: Json) -> None:
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)


def read_json(path: str) -> Json:
    with open(path) as f:
        return json.load(f)


def solo(args: argparse.Namespace) -> None:
    facts = gpu_facts()
    log("gpu", json.dumps(facts))
    models: Json = {}
    points: list[Json] = []
    for name in args.models:
        for pct in args.pcts:
            extra = ["--mode", "solo", "--batches", ",".join(map(str, args.batches)), "--seconds", str(args.seconds)]
            if pct == 100:
                extra.append("--kernels")
            r = last_json_line(spawn(name, pct, extra, args))
            for pt in r["points"]:
                points.append({"model": name, "batch": pt["batch"], "pct": pct, "latencyMs": round(pt["latencyMs"], 5)})
            if pct == 100:
                models[name] = model_facts(name, r, facts["pcieBytesPerMs"], args)
    doc = {"format": "inss-measurements/1", "gpu": facts, "models": models, "solo": points, "colocated": []}
    write_json(args.out, doc)
    log("wrote", args.out)


def pair_run(a: str, b: str, split: int, batch: int, args: argparse.Namespace) -> list[Json]:
    """Models a and b together, at split% and (100 - split)%, started at once after both are ready."""
    d = tempfile.mkdtemp()
    procs = []
    for name, pct, tag in ((a, split, "a"), (b, 100 - split, "b")):
        extra = ["--mode", "pair", "--batches", str(batch), "--seconds", str(args.seconds)]
        procs.append(spawn(name, pct, extra + ["--ready", f"{d}/{tag}.ready", "--go", f"{d}/go"], args))
    t0 = time.time()
    while not (os.path.exists(f"{d}/a.ready") and os.path.exists(f"{d}/b.ready")):
        if time.time() - t0 > 120:
            raise SystemExit("pair workers never became ready")
        time.sleep(0.01)
    open(f"{d}/go", "w").close()
    outs = [last_json_line(p) for p in procs]
    return [
        {
            "model": o["model"],
            "batch": o["points"][0]["batch"],  # 1 for a model without a batch dimension
            "pct": o["pct"],
            "latencyMs": round(o["points"][0]["latencyMs"], 5),
        }
        for o in outs
    ]


def pairs(args: argparse.Namespace) -> None:
    runs = []
    for pair in args.pairs:
        a, b = pair.split(":")
        for split in args.splits:
            for batch in args.batches:
                run = pair_run(a, b, split, batch, args)
                log("  pair", json.dumps(run))
                runs.append({"runs": run})
    write_json(args.out, {"colocated": runs})
    log("wrote", args.out)


def merge(args: argparse.Namespace) -> None:
    base = read_json(args.files[0])
    for f in args.files[1:]:
        base["colocated"] += read_json(f)["colocated"]
    write_json(args.out, base)


def probe(_args: argparse.Namespace) -> None:
    import torch
    import torchvision

    log("torch", torch.__version__, "torchvision", torchvision.__version__, "cuda", torch.cuda.is_available())
    log("gpu", json.dumps(gpu_facts()))
    log("MPS env", os.environ.get("CUDA_MPS_PIPE_DIRECTORY"))


def ints(s: str) -> list[int]:
    return [int(x) for x in s.split(",")]


def names(s: str) -> list[str]:
    return s.split(",")


DEFAULT_PAIRS = ["resnet50:vgg16", "alexnet:resnet50", "mobilenet:efficientnet", "resnet18:vgg19"]


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("worker")
    w.add_argument("--model", required=True, help="a zoo model, or the TorchScript model's name with --model-file")
    w.add_argument("--pct", type=int, required=True)
    w.add_argument("--mode", choices=["solo", "pair"], required=True)
    w.add_argument("--batches", type=ints, required=True)
    w.add_argument("--seconds", type=float, default=1.0)
    w.add_argument("--kernels", action="store_true")
    w.add_argument("--ready")
    w.add_argument("--go")
    s = sub.add_parser("solo")
    s.add_argument("--out", required=True)
    s.add_argument("--models", type=names, default=list(MODELS))
    s.add_argument("--pcts", type=ints, default=[10, 25, 50, 100])
    s.add_argument("--batches", type=ints, default=[1, 2, 4, 8, 16, 32])
    s.add_argument("--seconds", type=float, default=0.6)
    p = sub.add_parser("pairs")
    p.add_argument("--out", required=True)
    p.add_argument("--pairs", type=names, default=DEFAULT_PAIRS)
    p.add_argument("--splits", type=ints, default=[30, 50, 70])
    p.add_argument("--batches", type=ints, default=[4, 16])
    p.add_argument("--seconds", type=float, default=2.0)
    m = sub.add_parser("merge")
    m.add_argument("--out", required=True)
    m.add_argument("files", nargs="+")
    sub.add_parser("probe")
    for sp in (w, s, p):
        sp.add_argument("--model-file", default=None, help="a TorchScript module (torch.jit.save) to measure")
        sp.add_argument("--signature", default=None, help="with --model-file: its WorkerSignature as JSON")
    args = ap.parse_args()
    try:
        check_torchscript(args)
    except UsageError as e:
        ap.error(str(e))
    return args


def check_torchscript(args: argparse.Namespace) -> None:
    """--model-file and --signature go together and name the one model outside the zoo in --model, --models
    or --pairs; the signature JSON is parsed here (args.signature becomes a Signature)."""
    if args.cmd not in ("worker", "solo", "pairs"):
        return
    if (args.model_file is None) != (args.signature is None):
        raise UsageError("--model-file and --signature go together (a TorchScript module and its tensors)")
    args.signature_json = args.signature
    if args.signature is not None:
        args.signature = parse_signature(args.signature)
    if args.cmd == "worker":
        named = {args.model}
    elif args.cmd == "solo":
        named = set(args.models)
    else:
        named = {m for pair in args.pairs for m in pair.split(":")}
    outside = sorted(named - set(MODELS))
    if outside and args.model_file is None:
        raise UsageError(
            f"{', '.join(outside)}: not a zoo model ({', '.join(MODELS)}); a TorchScript model needs "
            "--model-file and --signature"
        )
    if len(outside) > 1:
        raise UsageError(f"{', '.join(outside)}: one TorchScript model (--model-file) per run")


def main() -> None:
    args = parse_args()
    {"worker": worker, "solo": solo, "pairs": pairs, "merge": merge, "probe": probe}[args.cmd](args)


if __name__ == "__main__":
    main()
