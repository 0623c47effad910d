"""Lazily created projection inside forward (pre-LazyModule pattern in research code)."""

import torch
import torch.nn as nn


class LazyProj(nn.Module):
    def __init__(self, out_dim=4):
        super().__init__()
        self.out_dim = out_dim
        self.proj = None

    def forward(self, x):
        if self.proj is None:
            self.proj = nn.Linear(x.shape[-1], self.out_dim)
        return self.proj(x)


def compile_example():
    return LazyProj(), (torch.randn(2, 6),)
