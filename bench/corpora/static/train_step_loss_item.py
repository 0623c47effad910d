"""A compiled training step that returns `loss.item()` for the progress bar (a very common
pattern in tutorials and Lightning-style loops)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))


def train_step(x, y):
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    return loss, loss.item()


def compile_example():
    torch.manual_seed(0)
    return train_step, (torch.randn(4, 8), torch.randint(0, 3, (4,)))
