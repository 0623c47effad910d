"""LayoutLMv3 (written here from the model's facts): a deprecation warning in the compiled
forward, and a debug print of a tensor's statistic."""

import warnings

import torch
from torch import nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, bbox: torch.Tensor) -> torch.Tensor:
        warnings.warn("The `bbox` scale is deprecated", FutureWarning)  # noqa: B028
        h = self.fc(bbox)
        print("mean activation", h.mean())
        return torch.tanh(h)


def compile_example():
    torch.manual_seed(0)
    return Model(), (torch.randn(2, 8),)
