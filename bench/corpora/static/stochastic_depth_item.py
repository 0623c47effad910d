"""Layer-drop as written in many research repos (e.g. fairseq LayerDrop variants):
`torch.rand(1).item() < p` decides on the host whether to skip a layer."""

import torch
import torch.nn as nn


class LayerDropEncoder(nn.Module):
    def __init__(self, dim=16, n_layers=3, p=0.2):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_layers))
        self.p = p

    def forward(self, x):
        for layer in self.layers:
            dropout_probability = torch.rand(1).item()
            if self.training and dropout_probability < self.p:
                continue
            x = torch.relu(layer(x))
        return x


def compile_example():
    torch.manual_seed(0)
    return LayerDropEncoder().train(), (torch.randn(4, 16),)
