"""Manual split point with torch._dynamo.graph_break() (Dynamo docs, debugging recipes)."""

import torch
import torch.nn as nn


class TwoStage(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        h = torch.relu(self.a(x))
        torch._dynamo.graph_break()
        return self.b(h)


def compile_example():
    return TwoStage(), (torch.randn(2, 8),)
