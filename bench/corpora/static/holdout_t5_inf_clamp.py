"""HF T5LayerFF (pre-4.30): fp16 overflow clamp guarded by `torch.isinf(hidden).any()`."""

import torch
import torch.nn as nn


class T5LayerFF(nn.Module):
    def __init__(self, d_model=8, d_ff=16):
        super().__init__()
        self.wi = nn.Linear(d_model, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, d_model, bias=False)

    def forward(self, hidden_states):
        h = self.wo(torch.relu(self.wi(hidden_states)))
        hidden_states = hidden_states + h
        if torch.isinf(hidden_states).any():
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


def compile_example():
    torch.manual_seed(0)
    return T5LayerFF(), (torch.randn(2, 3, 8),)
