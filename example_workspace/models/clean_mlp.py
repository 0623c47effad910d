"""Code that compiles to a single graph: no graph breaks and no recompiles."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class MLP(nn.Module):
    def __init__(self, d_in: int = 16, hidden: int = 64, d_out: int = 8) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(d_in)
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, d_out)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.dropout(F.gelu(self.fc1(self.norm(x)))))


def bias_gelu(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Fused bias + tanh-approximated GELU, the kind of function inductor fuses into one kernel."""
    y = x + bias
    return 0.5 * y * (1.0 + torch.tanh(0.7978845608028654 * (y + 0.044715 * y.pow(3))))


def compile_example_mlp():
    """Three batches of the same shape: one graph, compiled once."""
    torch.manual_seed(0)
    mlp = MLP().eval()
    return [(mlp, (torch.randn(8, 16),)) for _ in range(3)]


def compile_example_bias_gelu():
    torch.manual_seed(0)
    bias = torch.randn(64)
    return [(bias_gelu, (torch.randn(4, 64), bias)) for _ in range(2)]
