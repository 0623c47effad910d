"""HF transformers _ignore_causal_mask_sdpa: `torch.all(attention_mask == 1)` in an if."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SdpaAttention(nn.Module):
    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.o_proj = nn.Linear(dim, dim)

    def forward(self, hidden_states, attention_mask):
        b, t, c = hidden_states.shape
        q, k, v = self.qkv(hidden_states).view(b, t, 3, self.heads, c // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))
        is_causal = False
        if attention_mask is not None and torch.all(attention_mask == 1):
            attention_mask = None
            is_causal = True
        if attention_mask is not None:
            attention_mask = attention_mask[:, None, None, :].bool()
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=attention_mask, is_causal=is_causal)
        return self.o_proj(out.transpose(1, 2).reshape(b, t, c))


def compile_example():
    mask = torch.ones(2, 6, dtype=torch.long)
    return SdpaAttention(), (torch.randn(2, 6, 32), mask)
