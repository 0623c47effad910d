"""Confidence gating with a per-batch data-dependent count: `int(mask.sum())` sizes a topk."""

import torch
import torch.nn as nn


class Gate(nn.Module):
    def __init__(self, thresh=0.5):
        super().__init__()
        self.thresh = thresh

    def forward(self, scores):
        mask = scores.sigmoid() > self.thresh
        k = int(mask.sum())
        top = scores.flatten().topk(max(k, 1)).values
        return torch.where(mask, scores, torch.zeros_like(scores)), top


def compile_example():
    torch.manual_seed(0)
    return Gate(), (torch.randn(3, 4),)
