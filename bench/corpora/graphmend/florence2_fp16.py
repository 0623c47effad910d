"""Florence-2's language encoder layer (written here from the model's facts): in fp16, an
activation that overflowed is clamped, behind a dtype test joined to a tensor test."""

import torch
from torch import nn


class EncoderLayer(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.attn = nn.Linear(dim, dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        hidden_states = hidden_states + self.attn(hidden_states)
        hidden_states = hidden_states + self.fc2(torch.relu(self.fc1(hidden_states)))
        if hidden_states.dtype == torch.float16 and (
            torch.isinf(hidden_states).any() or torch.isnan(hidden_states).any()
        ):
            clamp_value = torch.finfo(hidden_states.dtype).max - 1000
            hidden_states = torch.clamp(hidden_states, min=-clamp_value, max=clamp_value)
        return hidden_states


def compile_example():
    torch.manual_seed(0)
    return EncoderLayer().half(), (torch.randn(2, 5, 16).half(),)
