"""The workload of the trace benchmark: a small transformer trained for a few steps with
``torch.compile`` (inductor), a logging call that breaks the graph, and a batch size that
changes once (a recompile). Its structured trace seeds the large generated traces, and it is
the command whose run overhead is measured."""

from __future__ import annotations

import sys

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d: int = 64) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.layer(x)
        print("step")  # a graph break, as real training code has
        return self.head(h.mean(1))


def main(steps: int) -> None:
    torch.manual_seed(0)
    model = Block()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    step = torch.compile(model)
    for i in range(steps):
        batch = 8 if i < steps // 2 else 16  # one change of shape: a recompile
        x = torch.randn(batch, 32, 64)
        loss = step(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
