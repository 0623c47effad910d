"""A residual stack whose block prints a debug statistic: the break is reached through
nn.ModuleList iteration (transformer encoders in many repos)."""

import torch
import torch.nn as nn


class ResBlock(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        h = self.fc(self.norm(x))
        print("block act mean", h.mean())
        return x + torch.relu(h)


class Stack(nn.Module):
    def __init__(self, dim=8, depth=2):
        super().__init__()
        self.blocks = nn.ModuleList([ResBlock(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, 2)

    def forward(self, x):
        for blk in self.blocks:
            x = blk(x)
        return self.head(x)


def compile_example():
    return Stack(), (torch.randn(2, 8),)
