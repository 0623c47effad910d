"""Eval step collecting predictions as Python lists (sklearn-metrics style loops)."""

import torch
import torch.nn as nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x, labels):
        logits = self.fc(x)
        preds = logits.argmax(dim=-1).tolist()
        correct = (logits.argmax(dim=-1) == labels).sum()
        return logits, preds, correct


def compile_example():
    torch.manual_seed(0)
    return Classifier(), (torch.randn(4, 8), torch.randint(0, 4, (4,)))
