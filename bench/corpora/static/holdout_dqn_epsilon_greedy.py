"""DQN epsilon-greedy action selection (PyTorch RL tutorial select_action)."""

import math
import random

import torch
import torch.nn as nn


class Agent(nn.Module):
    def __init__(self, n_obs=4, n_actions=3):
        super().__init__()
        self.q = nn.Sequential(nn.Linear(n_obs, 16), nn.ReLU(), nn.Linear(16, n_actions))
        self.n_actions = n_actions
        self.steps_done = 0

    def forward(self, state):
        sample = random.random()
        eps = 0.05 + 0.85 * math.exp(-1.0 * self.steps_done / 200)
        self.steps_done += 1
        if sample > eps:
            with torch.no_grad():
                return self.q(state).max(1).indices.view(1, 1)
        return torch.tensor([[random.randrange(self.n_actions)]], dtype=torch.long)


def compile_example():
    random.seed(3)
    agent = Agent()
    agent.steps_done = 10_000
    return agent, (torch.randn(1, 4),)
