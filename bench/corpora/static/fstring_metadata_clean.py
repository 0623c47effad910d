"""Building error messages and cache keys from shapes with f-strings and format(). Clean."""

import torch
import torch.nn as nn


class KeyedCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        key = f"{tuple(x.shape)}-{x.dtype}"
        name = f"proj_{x.size(-1)}"
        y = self.fc(x)
        return y, key, name


def compile_example():
    return KeyedCache(), (torch.randn(3, 4),)
