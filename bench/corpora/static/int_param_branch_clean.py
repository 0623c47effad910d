"""Python-number arguments driving control flow (num_steps, scale): specialised, no break."""

import torch
import torch.nn as nn


class Denoiser(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Linear(8, 8)

    def forward(self, x, num_steps: int, guidance):
        for step in range(num_steps):
            x = x - 0.1 * self.net(x)
            if step % 2 == 0 and guidance > 1.0:
                x = x * guidance
        return x


def compile_example():
    return Denoiser(), (torch.randn(2, 8), 3, 1.5)
