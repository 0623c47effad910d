"""Timestamping outputs with datetime.now() inside forward (experiment-tracking code)."""

import datetime

import torch
import torch.nn as nn


class Stamped(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.last_call = None

    def forward(self, x):
        y = self.fc(x)
        self.last_call = datetime.datetime.now()
        return y * 2


def compile_example():
    return Stamped(), (torch.randn(2, 4),)
