"""Training losses and metrics: a label-smoothed cross-entropy and a top-1 accuracy."""

from __future__ import annotations

import torch
from torch import Tensor
from torch.nn import functional as F

SMOOTHING = 0.1


def label_smoothing_loss(logits: Tensor, target: Tensor) -> Tensor:  # expect: recompile-warning
    logp = F.log_softmax(logits.float(), dim=-1)
    nll = -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1)
    uniform = -logp.mean(dim=-1)
    return ((1.0 - SMOOTHING) * nll + SMOOTHING * uniform).mean()


def compile_example():
    """The same loss on float32, float64 and bfloat16 logits: one compile per dtype."""
    torch.manual_seed(0)
    logits = torch.randn(8, 10)
    target = torch.randint(0, 10, (8,))
    return [
        (label_smoothing_loss, (logits.to(dtype), target))
        for dtype in (torch.float32, torch.float64, torch.bfloat16)
    ]


def top1_accuracy(logits: Tensor, target: Tensor) -> float:
    """A host-side metric for the progress bar: `.item()` ends the graph."""
    correct = logits.argmax(dim=-1) == target
    return correct.float().mean().item()  # expect: graph_break GB0124


def compile_example_accuracy():
    torch.manual_seed(0)
    target = torch.randint(0, 10, (8,))
    return [(top1_accuracy, (torch.randn(8, 10), target)) for _ in range(2)]
