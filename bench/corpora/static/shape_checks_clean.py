"""Shape/None/dtype checks that Dynamo specialises on: no graph break. Clean."""

import torch
import torch.nn as nn


class Projector(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.dim = dim
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        if x.dim() == 2:
            x = x.unsqueeze(0)
        if x.shape[-1] != self.dim:
            raise ValueError(f"expected last dim {self.dim}, got {x.shape[-1]}")
        assert x.size(0) > 0, "empty batch"
        if x.dtype != torch.float32:
            x = x.float()
        if mask is not None:
            x = x.masked_fill(~mask, 0.0)
        if x.numel() == 0 or not x.is_contiguous():
            x = x.contiguous()
        return self.fc(x)


def compile_example():
    return Projector(), (torch.randn(3, 8),)
