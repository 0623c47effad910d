"""nanoGPT GPT.generate's sampling step: top-k filter with an index_put, multinomial. Clean."""

import torch
import torch.nn as nn
from torch.nn import functional as F


class Sampler(nn.Module):
    def __init__(self, vocab=50, n_embd=16):
        super().__init__()
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, h, temperature: float = 1.0, top_k: int = 5):
        logits = self.lm_head(h[:, -1, :]) / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        return torch.multinomial(probs, num_samples=1)


def compile_example():
    return Sampler(), (torch.randn(2, 4, 16), 0.8, 5)
