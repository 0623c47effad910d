"""Token/class frequency with torch.bincount (class-balanced losses, codebook usage in VQ-VAE)."""

import torch
import torch.nn as nn


class CodebookUsage(nn.Module):
    def __init__(self, n_codes=8, dim=4):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(n_codes, dim))

    def forward(self, z):
        d = torch.cdist(z, self.codebook)
        codes = d.argmin(dim=-1)
        usage = torch.bincount(codes, minlength=self.codebook.shape[0])
        return self.codebook[codes], usage


def compile_example():
    torch.manual_seed(0)
    return CodebookUsage(), (torch.randn(10, 4),)
