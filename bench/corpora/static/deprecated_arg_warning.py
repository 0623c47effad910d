"""HF-style deprecation: `warnings.warn` when a deprecated kwarg is passed to forward."""

import warnings

import torch
import torch.nn as nn


class Pooler(nn.Module):
    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(6, 6)

    def forward(self, hidden_states, head_mask=None, return_dict: bool = True):
        if not return_dict:
            warnings.warn("return_dict=False is deprecated", FutureWarning, stacklevel=2)
        pooled = torch.tanh(self.dense(hidden_states[:, 0]))
        return pooled if return_dict else (pooled,)


def compile_example():
    return Pooler(), (torch.randn(2, 3, 6), None, False)
