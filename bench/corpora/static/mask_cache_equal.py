"""Caching a derived mask and checking with torch.equal whether it can be reused."""

import torch
import torch.nn as nn


class CachedMask(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cached_mask", torch.ones(4, dtype=torch.bool))
        self.register_buffer("cached_bias", torch.zeros(4))

    def forward(self, x, mask):
        if torch.equal(mask, self.cached_mask):
            bias = self.cached_bias
        else:
            bias = torch.where(mask, 0.0, -1e4)
        return x + bias


def compile_example():
    return CachedMask(), (torch.randn(2, 4), torch.ones(4, dtype=torch.bool))
