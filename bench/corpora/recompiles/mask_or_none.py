"""Attention scores masked on some calls and not others: None and a tensor are two paths."""

import torch
from torch import nn


class Scores(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(8, 8)

    def forward(self, x, mask=None):
        s = self.q(x) @ x.transpose(-2, -1)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return torch.softmax(s, dim=-1)


def compile_example():
    torch.manual_seed(0)
    model = Scores().eval()
    x = torch.randn(2, 5, 8)
    mask = torch.ones(2, 5, 5, dtype=torch.bool).tril()
    return [(model, (x, mask)), (model, (x, None)), (model, (x, mask))]
