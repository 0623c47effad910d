"""Masked token loss with torch.masked_select (BERT MLM heads in older codebases)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class MLMHead(nn.Module):
    def __init__(self, dim=8, vocab=20):
        super().__init__()
        self.decoder = nn.Linear(dim, vocab)

    def forward(self, hidden, labels):
        logits = self.decoder(hidden)
        mask = labels != -100
        selected = torch.masked_select(labels, mask)
        return F.cross_entropy(logits[mask], selected)


def compile_example():
    torch.manual_seed(0)
    labels = torch.randint(0, 20, (2, 6))
    labels[0, :3] = -100
    return MLMHead(), (torch.randn(2, 6, 8), labels)
