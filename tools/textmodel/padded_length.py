#!/usr/bin/env python3
"""The text classifier's batch time against its padded length, as the PyTorch worker times a batch
(native/inss_worker/worker.py Worker.forward: inference mode, upload, forward, download): for each
batch size and padded length, the median of --repeats batches after --warmup, printed as the Markdown
table of docs/model-repository.md ("Text models: cost against padded length").

  /usr/bin/python3 tools/textmodel/padded_length.py [--lengths 16,32,...] [--batches 1,8] [--repeats 31]
      [--warmup 5] [--threads 1] [--device cpu]
"""

import argparse
import os
import statistics
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "native"))

from inss_worker.worker import Worker  # noqa: E402
from text_classifier import VOCAB, TextClassifier  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", default="16,32,64,128,256,512")
    p.add_argument("--batches", default="1,8")
    p.add_argument("--repeats", type=int, default=31)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--device", default="cpu")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(11)
    device = torch.device(args.device)
    model = torch.jit.script(TextClassifier().eval()).to(device)
    worker = Worker(model, device, 64, "text", None)
    lengths = [int(x) for x in args.lengths.split(",")]
    batches = [int(x) for x in args.batches.split(",")]
    ms: dict[tuple[int, int], float] = {}
    for b in batches:
        for n in lengths:
            ids = torch.randint(1, VOCAB, (b, n), dtype=torch.int64)
            mask = torch.ones_like(ids)
            for _ in range(args.warmup):
                worker.forward([ids, mask])
            ms[(b, n)] = statistics.median(worker.forward([ids, mask])[1] for _ in range(args.repeats))
    head = " | ".join(f"batch {b} (ms)" for b in batches)
    per = " | ".join(f"batch {b} (µs per padded token)" for b in batches)
    print(f"| padded length | {head} | {per} |")
    print("| ---: " * (1 + 2 * len(batches)) + "|")
    for n in lengths:
        times = " | ".join(f"{ms[(b, n)]:.2f}" for b in batches)
        rates = " | ".join(f"{ms[(b, n)] * 1000 / (b * n):.0f}" for b in batches)
        print(f"| {n} | {times} | {rates} |")

if __name__ == "__main__":
    main()
