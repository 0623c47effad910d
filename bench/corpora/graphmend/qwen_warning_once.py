"""Qwen2's attention (written here from the model's facts): ``logger.warning_once`` in a layer
the compiled model calls, when a caller asks for what the fast path cannot give."""

import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv = nn.Linear(8, 24)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        logger.warning(
            "sdpa does not return attention weights; falling back to the eager attention"
        )
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return torch.softmax(q @ k.transpose(-1, -2), dim=-1) @ v


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = Attention()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x) + x


def compile_example():
    torch.manual_seed(0)
    return Model(), (torch.randn(1, 4, 8),)
