"""Device-dependent code paths keyed by `str(x.device)` / `x.device.type`. Clean."""

import torch
import torch.nn as nn


class DeviceAware(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        dev = str(x.device)
        if x.device.type == "cuda" or dev.startswith("cuda"):
            x = x.half()
        if torch.cuda.is_available() and x.is_cuda:
            x = x.contiguous()
        return self.fc(x.float())


def compile_example():
    return DeviceAware(), (torch.randn(2, 4),)
