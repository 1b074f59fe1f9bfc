#!/usr/bin/env python3
"""A small text classifier as users serve them, for the tests and the padded-length measurement
(docs/model-repository.md, "Text models"): token ids and an attention mask in (INT64 [batch, length],
Hugging Face's convention, pad id 0 and mask 0 on padding), an embedding, one self-attention layer that
ignores padded keys, a feed-forward layer, a mean over the unpadded tokens and a linear head out (FP32
[batch, CLASSES]). Random weights, seeded. A batch padded to its longest sample answers each sample as
that sample run alone.

  python3 text_classifier.py save MODEL.pt          script it (torch.jit.script) and save it
  python3 text_classifier.py ref MODEL.pt SEQS.json  each sequence run alone: JSON [[logit, ...], ...]
  python3 text_classifier.py config NAME             the config.pbtxt that serves it
"""

import json
import sys

import torch

VOCAB = 1000
WIDTH = 64
HEADS = 4
CLASSES = 4


class TextClassifier(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, WIDTH, padding_idx=0)
        self.attention = torch.nn.MultiheadAttention(WIDTH, HEADS, batch_first=True)
        self.norm1 = torch.nn.LayerNorm(WIDTH)
        self.ff = torch.nn.Sequential(
            torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.GELU(), torch.nn.Linear(4 * WIDTH, WIDTH)
        )
        self.norm2 = torch.nn.LayerNorm(WIDTH)
        self.head = torch.nn.Linear(WIDTH, CLASSES)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        h = self.embed(input_ids)
        padding = attention_mask == 0
        a, _ = self.attention(h, h, h, key_padding_mask=padding, need_weights=False)
        h = self.norm1(h + a)
        h = self.norm2(h + self.ff(h))
        m = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(pooled)


CONFIG = """name: "{name}"
backend: "pytorch"
max_batch_size: 8
input [
  {{ name: "input_ids" data_type: TYPE_INT64 dims: [ -1 ] }},
  {{ name: "attention_mask" data_type: TYPE_INT64 dims: [ -1 ] }}
]
output [ {{ name: "logits" data_type: TYPE_FP32 dims: [ 4 ] }} ]
dynamic_batching {{ max_queue_delay_microseconds: 2000 }}
parameters {{ key: "slo_ms" value: {{ string_value: "5000" }} }}
parameters {{ key: "max_variable_dim" value: {{ string_value: "512" }} }}
parameters {{ key: "cost_classes" value: {{ string_value: "16:0.22 32:0.28 64:0.28 128:0.16 256:0.05 512:0.01" }} }}
"""


def main() -> None:
    torch.manual_seed(11)
    what = sys.argv[1]
    if what == "save":
        torch.jit.script(TextClassifier().eval()).save(sys.argv[2])
    elif what == "ref":
        model = torch.jit.load(sys.argv[2]).eval()
        answers = []
        with torch.inference_mode():
            for seq in json.load(open(sys.argv[3])):
                ids = torch.tensor([seq], dtype=torch.int64)
                answers.append(model(ids, torch.ones_like(ids))[0].tolist())
        print(json.dumps(answers))
    elif what == "config":
        print(CONFIG.format(name=sys.argv[2]), end="")
    else:
        raise SystemExit(f"unknown command {what!r} (save, ref, config)")


if __name__ == "__main__":
    main()
