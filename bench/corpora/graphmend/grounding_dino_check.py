"""Grounding DINO (written here from the model's facts): a data check on the text features that
raises ``ValueError``, which a caller may catch, before the fusion layer."""

import torch
from torch import nn


class Fusion(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, text: torch.Tensor, text_mask: torch.Tensor) -> torch.Tensor:
        if (text.abs().amax(-1) == 0).any():
            raise ValueError("a text token's features are all zero")
        weights = text_mask.float() / text_mask.float().sum(-1, keepdim=True)
        return self.proj((text * weights[..., None]).sum(1))


def compile_example():
    torch.manual_seed(0)
    text = torch.randn(2, 5, 8)
    mask = torch.tensor([[1, 1, 0, 0, 0], [1, 1, 1, 1, 0]])
    return Fusion(), (text, mask)
