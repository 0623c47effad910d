"""Sanity asserts on activations: `assert not torch.isnan(x).any(), "NaN in activations"`."""

import torch
import torch.nn as nn


class Checked(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        assert not torch.isnan(h).any(), "NaN in activations"
        assert h.shape[-1] == 4, f"bad width {h.shape}"
        return torch.relu(h)


def compile_example():
    return Checked(), (torch.randn(3, 4),)
