"""The batch's row count varies from call to call: torch compiles again for a new size."""

import torch
from torch import nn


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))).log_softmax(-1)


def compile_example():
    torch.manual_seed(0)
    model = Head().eval()
    return [(model, (torch.randn(n, 16),)) for n in (8, 12, 20)]
