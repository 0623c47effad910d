"""Seq2seq greedy decoding with an early stop when every sequence emitted EOS."""

import torch
import torch.nn as nn


class Decoder(nn.Module):
    def __init__(self, vocab=10, dim=8, eos=2, max_len=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.cell = nn.Linear(2 * dim, dim)
        self.out = nn.Linear(dim, vocab)
        self.eos = eos
        self.max_len = max_len

    def forward(self, memory, bos):
        tokens = [bos]
        h = memory
        for _ in range(self.max_len):
            h = torch.tanh(self.cell(torch.cat([h, self.embed(tokens[-1])], -1)))
            next_token = self.out(h).argmax(-1)
            tokens.append(next_token)
            if (next_token == self.eos).all():
                break
        return torch.stack(tokens, 1)


def compile_example():
    torch.manual_seed(0)
    return Decoder(), (torch.randn(2, 8), torch.zeros(2, dtype=torch.long))
