"""Debug prints of shapes left in forward (ubiquitous; torch.compile troubleshooting docs)."""

import torch
import torch.nn as nn


class UNetBlock(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1)

    def forward(self, x):
        h = torch.relu(self.conv1(x))
        print(f"after conv1: {h.shape}")
        h = self.conv2(h)
        return x + h


def compile_example():
    return UNetBlock(), (torch.randn(1, 4, 8, 8),)
