"""Greedy CTC decoding as in torchaudio tutorials / ESPnet: argmax, unique_consecutive,
drop blanks with a mask."""

import torch
import torch.nn as nn


class GreedyCTCDecoder(nn.Module):
    def __init__(self, blank=0):
        super().__init__()
        self.blank = blank

    def forward(self, emission):
        indices = torch.argmax(emission, dim=-1)
        indices = torch.unique_consecutive(indices, dim=-1)
        indices = indices[indices != self.blank]
        return indices


def compile_example():
    torch.manual_seed(0)
    return GreedyCTCDecoder(), (torch.randn(12, 5),)
