"""An encoder block over sequences whose length varies (dim 1)."""

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(self.norm(x)).chunk(3, dim=-1)
        att = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
        return x + self.out(att @ v)


def compile_example():
    torch.manual_seed(0)
    model = Block().eval()
    return [(model, (torch.randn(2, n, 16),)) for n in (5, 9, 13)]
