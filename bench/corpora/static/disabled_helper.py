"""A stats helper excluded with @torch.compiler.disable (PyTorch "compiler.disable" recipe)."""

import torch
import torch.nn as nn


@torch.compiler.disable
def record_activation_stats(name, t):
    return {name: (t.mean(), t.std())}


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        record_activation_stats("fc1", h)
        return self.fc2(h)


def compile_example():
    return Net(), (torch.randn(2, 8),)
