"""A pre-norm GPT-style transformer block: causal self-attention and a SwiGLU MLP."""

from __future__ import annotations

import logging
import math

import torch
from torch import nn

from models.common import FeedForward, RMSNorm

logger = logging.getLogger(__name__)


class CausalSelfAttention(nn.Module):
    def __init__(self, dim: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=-1)
        q = q.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        k = k.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        v = v.view(b, t, self.n_heads, self.head_dim).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.head_dim)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = scores.masked_fill(~causal, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(b, t, c))


class TransformerBlock(nn.Module):
    def __init__(self, dim: int = 32, n_heads: int = 4, hidden: int = 64) -> None:
        super().__init__()
        self.norm1 = RMSNorm(dim)
        self.attn = CausalSelfAttention(dim, n_heads)
        self.norm2 = RMSNorm(dim)
        self.mlp = FeedForward(dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # expect: recompile-info
        h = x + self.attn(self.norm1(x))
        if self.training:
            # Training-log statistic; the logging call cannot be traced and breaks the graph.
            rms = h.detach().pow(2).mean().sqrt()
            logger.debug("residual rms %.4f", rms)  # expect: graph_break GB0291
        return h + self.mlp(self.norm2(h))


def compile_example_train():
    """Two training steps on same-shaped batches: the logging statistic breaks the graph."""
    torch.manual_seed(0)
    block = TransformerBlock().train()
    return [(block, (torch.randn(2, 8, 32),)) for _ in range(2)]


def compile_example():
    """Inference over prompts of three lengths: one recompile, then dynamic shapes."""
    torch.manual_seed(0)
    block = TransformerBlock().eval()
    return [(block, (torch.randn(2, t, 32),)) for t in (8, 12, 16)]
