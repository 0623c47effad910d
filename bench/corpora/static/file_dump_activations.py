"""Dumping activations to disk from forward with torch.save (debugging numerics)."""

import os
import tempfile

import torch
import torch.nn as nn

DUMP_DIR = tempfile.gettempdir()


class Dumper(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        torch.save(h.detach(), os.path.join(DUMP_DIR, "dynamo_lens_act.pt"))
        return torch.relu(h)


def compile_example():
    return Dumper(), (torch.randn(2, 4),)
