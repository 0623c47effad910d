"""RNN with pack_padded_sequence: lengths from a mask via `.tolist()` (classic NLP code)."""

import torch
import torch.nn as nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence


class Tagger(nn.Module):
    def __init__(self, dim=4, hidden=6):
        super().__init__()
        self.rnn = nn.GRU(dim, hidden, batch_first=True)

    def forward(self, x, mask):
        lengths = mask.sum(dim=1).tolist()
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = self.rnn(packed)
        out, _ = pad_packed_sequence(out, batch_first=True)
        return out


def compile_example():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=torch.bool)
    return Tagger(), (torch.randn(2, 4, 4), mask)
