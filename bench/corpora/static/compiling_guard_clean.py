"""Logging guarded by torch.compiler.is_compiling() (the recipe in the torch.compile docs)
and a module-level DEBUG flag. Clean."""

import logging

import torch
import torch.nn as nn

log = logging.getLogger(__name__)
DEBUG = False


class Guarded(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        if not torch.compiler.is_compiling():
            print("eager forward", y.shape)
            log.info("eager forward")
        if DEBUG:
            print("debug", y.sum().item())
        return y


def compile_example():
    return Guarded(), (torch.randn(2, 4),)
