"""Phi-3/Phi-4 LongRoPE (written here from the model's facts): the rotary embedding swaps its
frequency table by the longest position it is given, a Python ``if`` on a tensor. The original
table is the very tensor first registered as ``inv_freq`` (they share storage)."""

import torch
from torch import nn


class LongRopeAttention(nn.Module):
    def __init__(self, dim: int = 16, original_max: int = 16) -> None:
        super().__init__()
        self.q = nn.Linear(dim, dim)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.original_inv_freq = self.inv_freq
        self.long_inv_freq = inv_freq / torch.linspace(1.0, 4.0, dim // 2)
        self.original_max_position_embeddings = original_max

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> torch.Tensor:
        if torch.max(position_ids) + 1 > self.original_max_position_embeddings:
            self.register_buffer("inv_freq", self.long_inv_freq, persistent=False)
        else:
            self.register_buffer("inv_freq", self.original_inv_freq, persistent=False)
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat([freqs, freqs], dim=-1)
        q = self.q(x)
        return q * emb.cos() + q.flip(-1) * emb.sin()


def compile_example():
    torch.manual_seed(0)
    model = LongRopeAttention()
    x = torch.randn(1, 24, 16)
    # A long call, then a short one: the short one must read the original table again.
    return [
        (model, (x, torch.arange(24)[None])),
        (model, (x[:, :8], torch.arange(8)[None])),
    ]
