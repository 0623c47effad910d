"""Mapping a predicted class to a Python-side table: `labels[int(idx)]` and `str(tensor)`."""

import torch
import torch.nn as nn

LABELS = ["cat", "dog", "bird"]


class Namer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        logits = self.fc(x)
        idx = logits[0].argmax()
        name = LABELS[int(idx)]
        desc = str(logits[0, 0])
        return logits, name, desc


def compile_example():
    torch.manual_seed(0)
    return Namer(), (torch.randn(2, 4),)
