"""HF LlamaDynamicNTKScalingRotaryEmbedding._dynamic_frequency_update:
`seq_len = torch.max(position_ids) + 1; if seq_len > self.max_seq_len_cached:`."""

import torch
import torch.nn as nn


class DynamicRotary(nn.Module):
    def __init__(self, dim=8, base=10000.0, max_pos=16):
        super().__init__()
        self.dim = dim
        self.base = base
        self.max_seq_len_cached = max_pos
        self.original_max_seq_len = max_pos
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def _dynamic_frequency_update(self, position_ids):
        seq_len = torch.max(position_ids) + 1
        if seq_len > self.max_seq_len_cached:
            self.max_seq_len_cached = seq_len

    def forward(self, x, position_ids):
        self._dynamic_frequency_update(position_ids)
        freqs = position_ids[..., None].float() * self.inv_freq
        emb = torch.cat((freqs, freqs), dim=-1)
        return x * emb.cos() + x * emb.sin()


def compile_example():
    pos = torch.arange(6)[None]
    return DynamicRotary(), (torch.randn(1, 6, 8), pos)
