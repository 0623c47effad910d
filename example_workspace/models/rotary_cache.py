"""Attention with rotary position embeddings and a lazily grown cos/sin cache."""

from __future__ import annotations

import torch
from torch import Tensor, nn


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, head_dim: int, base: float = 10000.0, initial_len: int = 16) -> None:
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.max_seq_cached = 0
        self._build_cache(initial_len)

    def _build_cache(self, seq_len: int) -> None:
        # Plain tensor attributes, rebuilt whenever a longer sequence arrives.
        t = torch.arange(seq_len, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.cos_cached = emb.cos()
        self.sin_cached = emb.sin()
        self.max_seq_cached = seq_len

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        seq_len = q.shape[-2]
        if seq_len > self.max_seq_cached:  # expect: recompile-warning
            self._build_cache(seq_len)
        cos = self.cos_cached[:seq_len]
        sin = self.sin_cached[:seq_len]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class RotaryAttention(nn.Module):
    def __init__(self, dim: int = 32, n_heads: int = 2) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.rotary = RotaryEmbedding(self.head_dim)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:  # expect: recompile-info
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.n_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k = self.rotary(q, k)
        scores = q @ k.transpose(-2, -1) * self.head_dim**-0.5
        if mask is not None:  # expect: recompile-info
            scores = scores.masked_fill(~mask, float("-inf"))
        out = scores.softmax(dim=-1) @ v
        return self.out(out.transpose(1, 2).reshape(b, t, c))


def compile_example_long_context():
    """Prompts that keep outgrowing the rotary cache: every rebuild is a recompile."""
    torch.manual_seed(0)
    attn = RotaryAttention().eval()
    return [(attn, (torch.randn(1, t, 32),)) for t in (16, 24, 32, 40)]


def compile_example_padding_mask():
    """Batches with and without a padding mask: the `None` check is specialised."""
    torch.manual_seed(0)
    attn = RotaryAttention().eval()
    x = torch.randn(2, 8, 32)
    pad = torch.ones(2, 1, 1, 8, dtype=torch.bool)
    pad[1, ..., 6:] = False
    return [(attn, (x,)), (attn, (x,), {"mask": pad}), (attn, (x,))]
