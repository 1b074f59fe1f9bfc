#!/usr/bin/env python3
"""The PyTorch worker's entry point (the package inss_worker/ beside this file is the worker).

  python3 native/torch_worker.py --model NAME [--device cpu|cuda|auto] [--weights FILE]
      [--max-batch 32] [--warmup-batches 3] [--seed 0] [--threads N] [--cudnn-benchmark]
  python3 native/torch_worker.py --model NAME --model-file MODEL.pt --signature JSON [same options]

The first serves a torchvision classifier, the second a TorchScript module (native/README.md).

docs/worker-protocol.md ("The PyTorch worker") is the reference; agent/torchWorker.ts starts it.
"""

from inss_worker.main import main

if __name__ == "__main__":
    main()
