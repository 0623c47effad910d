"""A training script: prints, .item() and timing live in the loop, outside the compiled
model. Only the model is compiled, so none of the loop's calls are graph breaks."""

import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return self.fc(x)


def train(model, steps=2):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    t0 = time.time()
    for step in range(steps):
        x, y = torch.randn(8, 4), torch.randint(0, 2, (8,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if loss.item() < 0.01:
            break
        print(f"step {step}: loss {loss.item():.3f} ({time.time() - t0:.1f}s)")


def compile_example():
    return TinyNet(), (torch.randn(8, 4),)


if __name__ == "__main__":
    train(torch.compile(TinyNet()))
