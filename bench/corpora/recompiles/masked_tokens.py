"""Token features and their padding mask, both as long as the batch's longest sequence."""

import torch
from torch import nn


class Pool(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, mask):
        h = self.proj(x) * mask.unsqueeze(-1)
        return h.sum(1) / mask.sum(1, keepdim=True).clamp(min=1)


def compile_example():
    torch.manual_seed(0)
    model = Pool().eval()
    calls = []
    for t in (5, 7, 9):
        calls.append((model, (torch.randn(2, t, 8), torch.ones(2, t))))
    return calls
