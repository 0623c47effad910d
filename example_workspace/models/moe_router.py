"""A top-k mixture-of-experts layer with an expert warm-up schedule."""

from __future__ import annotations

import torch
from torch import nn


class Expert(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # expect: recompile-info
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class MoELayer(nn.Module):
    def __init__(self, dim: int = 32, hidden: int = 64, n_experts: int = 4, top_k: int = 2):
        super().__init__()
        self.n_experts = n_experts
        self.top_k = top_k
        self.router = nn.Linear(dim, n_experts, bias=False)
        self.experts = nn.ModuleList(Expert(dim, hidden) for _ in range(n_experts))

    def forward(self, x: torch.Tensor, num_active: int) -> torch.Tensor:
        b, t, c = x.shape
        tokens = x.reshape(-1, c)
        # Warm-up schedule: only the first `num_active` experts may receive tokens.
        enabled = torch.zeros(self.n_experts, dtype=torch.bool, device=x.device)
        for e in range(num_active):  # expect: recompile-warning
            enabled[e] = True
        logits = self.router(tokens).masked_fill(~enabled, float("-inf"))
        weights, expert_idx = logits.softmax(dim=-1).topk(self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        out = self._dispatch(tokens, weights, expert_idx)
        return out.reshape(b, t, c)

    def _dispatch(
        self, tokens: torch.Tensor, weights: torch.Tensor, expert_idx: torch.Tensor
    ) -> torch.Tensor:
        """Send each token to its top-k experts and sum the weighted results."""
        # The data-dependent nonzero() inside this loop makes Dynamo skip the whole frame and
        # run it eagerly; each expert call below is then compiled as a frame of its own, on a
        # number of rows that changes from expert to expert.
        out = torch.zeros_like(tokens)
        for e, expert in enumerate(self.experts):
            rows, slot = torch.nonzero(expert_idx == e, as_tuple=True)  # expect: fallback GB0036
            if rows.numel() == 0:
                continue
            out.index_add_(0, rows, expert(tokens[rows]) * weights[rows, slot, None])
        return out


def compile_example():
    """The warm-up schedule enables one more expert per stage: 2, 3, then all 4."""
    torch.manual_seed(0)
    moe = MoELayer().eval()
    x = torch.randn(2, 6, 32)
    return [(moe, (x, n)) for n in (2, 3, 4)]
