"""A decode step with a cache that grows by one position per call."""

import torch
from torch import nn


class Step(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.q = nn.Linear(16, 16)
        self.kv = nn.Linear(16, 32)

    def forward(self, x, cache):
        k, v = self.kv(x).chunk(2, dim=-1)
        keys = torch.cat([cache[..., :16], k], dim=1)
        vals = torch.cat([cache[..., 16:], v], dim=1)
        att = torch.softmax(self.q(x) @ keys.transpose(1, 2) / 4.0, dim=-1)
        return att @ vals


def compile_example():
    torch.manual_seed(0)
    model = Step().eval()
    x = torch.randn(2, 1, 16)
    return [(model, (x, torch.randn(2, t, 32))) for t in (3, 4, 5)]
