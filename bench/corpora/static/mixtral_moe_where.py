"""HF Mixtral sparse MoE block: one_hot expert mask, then `torch.where(expert_mask[i])`
per expert inside a loop (a dynamic-shape op in a loop: Dynamo skips the frame)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class SparseMoeBlock(nn.Module):
    def __init__(self, dim=16, n_experts=4, top_k=2):
        super().__init__()
        self.num_experts = n_experts
        self.top_k = top_k
        self.gate = nn.Linear(dim, n_experts, bias=False)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_experts))

    def forward(self, hidden_states):
        b, t, d = hidden_states.shape
        hidden_states = hidden_states.view(-1, d)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        final = torch.zeros_like(hidden_states)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, d)
            current = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, current.to(hidden_states.dtype))
        return final.reshape(b, t, d)


def compile_example():
    torch.manual_seed(0)
    return SparseMoeBlock(), (torch.randn(2, 3, 16),)
