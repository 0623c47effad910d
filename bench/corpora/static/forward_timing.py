"""Ad-hoc profiling inside forward with time.perf_counter (common in benchmarking repos)."""

import time

import torch
import torch.nn as nn


class TimedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 8)
        self.last_ms = 0.0

    def forward(self, x):
        t0 = time.perf_counter()
        y = self.fc2(torch.relu(self.fc1(x)))
        self.last_ms = (time.perf_counter() - t0) * 1000
        return y


def compile_example():
    return TimedMLP(), (torch.randn(2, 8),)
