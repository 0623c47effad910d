"""A small image classifier: conv stem, two residual stages and a linear head."""

from __future__ import annotations

import torch
from torch import nn

from models.common import center_if_shifted


class ConvBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.skip = nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(h)) + self.skip(x))


class SmallCNN(nn.Module):
    def __init__(self, n_classes: int = 10) -> None:
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.stage1 = ConvBlock(8, 8)
        self.stage2 = ConvBlock(8, 16, stride=2)
        self.head = nn.Linear(16, n_classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        h = center_if_shifted(self.stem(images))
        h = self.stage2(self.stage1(torch.relu(h)))
        return self.head(h.mean(dim=(2, 3)))


def compile_example():
    """A raw [0, 1] batch and an already-centred one: both branches of the helper run."""
    torch.manual_seed(0)
    model = SmallCNN().eval()
    raw = torch.rand(4, 3, 16, 16)
    centred = torch.rand(4, 3, 16, 16) - 0.6
    return [(model, (raw,)), (model, (centred,))]
