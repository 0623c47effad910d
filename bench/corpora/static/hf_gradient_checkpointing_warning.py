"""HF decoder forward: `logger.warning` when use_cache meets gradient checkpointing."""

import logging

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class Decoder(nn.Module):
    def __init__(self, dim=16, n_layers=2):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_layers))
        self.gradient_checkpointing = True

    def forward(self, hidden_states, use_cache: bool = True):
        if self.gradient_checkpointing and self.training and use_cache:
            logger.warning("`use_cache=True` is incompatible with gradient checkpointing.")
            use_cache = False
        for layer in self.layers:
            hidden_states = torch.tanh(layer(hidden_states))
        return hidden_states


def compile_example():
    return Decoder().train(), (torch.randn(2, 4, 16), True)
