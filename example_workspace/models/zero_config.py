"""A model with no compile_example: Dynamo Lens guesses its input from the first layer."""

from __future__ import annotations

import torch
from torch import nn


class TabularClassifier(nn.Module):
    """Classifies rows of 16 numeric features into 4 classes."""

    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Linear(16, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 4),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x).log_softmax(dim=-1)
