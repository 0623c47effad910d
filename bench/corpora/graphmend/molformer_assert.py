"""MoLFormer (written here from the model's facts): an ``assert`` on the embeddings' values in
the compiled forward, with its message."""

import torch
from torch import nn


class Embeddings(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(20, 8)
        self.proj = nn.Linear(8, 8)

    def forward(self, ids: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        h = self.emb(ids) * scale
        assert h.abs().max() < 1e3, "embeddings out of range"
        return self.proj(h)


def compile_example():
    torch.manual_seed(0)
    ids = torch.tensor([[1, 2, 3, 4]])
    return Embeddings(), (ids, torch.tensor(1.0))
