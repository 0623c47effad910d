"""Longformer's self-attention (written here from the model's facts): whether any token is
global is read with ``.item()``, and the layer branches on it."""

import torch
from torch import nn


class SelfAttention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)
        self.g = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, is_index_global_attn: torch.Tensor) -> torch.Tensor:
        is_global_attn = is_index_global_attn.flatten().any().item()
        out = self.q(x)
        if is_global_attn:
            out = out + self.g(x)
        return out


def compile_example():
    torch.manual_seed(0)
    x = torch.randn(1, 6, 8)
    on = torch.tensor([[True, False, False, False, False, False]])
    return [(SelfAttention(), (x, on)), (SelfAttention(), (x, torch.zeros_like(on)))]
