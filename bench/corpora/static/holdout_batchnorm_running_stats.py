"""A hand-written BatchNorm with running statistics updated in place (d2l.ai). Clean."""

import torch
import torch.nn as nn


class BatchNorm(nn.Module):
    def __init__(self, num_features=4, momentum=0.1, eps=1e-5):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(num_features))
        self.beta = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("moving_mean", torch.zeros(num_features))
        self.register_buffer("moving_var", torch.ones(num_features))
        self.momentum = momentum
        self.eps = eps

    def forward(self, x):
        if not self.training:
            x_hat = (x - self.moving_mean) / torch.sqrt(self.moving_var + self.eps)
        else:
            mean = x.mean(dim=0)
            var = ((x - mean) ** 2).mean(dim=0)
            x_hat = (x - mean) / torch.sqrt(var + self.eps)
            with torch.no_grad():
                self.moving_mean.mul_(1 - self.momentum).add_(self.momentum * mean)
                self.moving_var.mul_(1 - self.momentum).add_(self.momentum * var)
        return self.gamma * x_hat + self.beta


def compile_example():
    torch.manual_seed(0)
    return BatchNorm().train(), (torch.randn(8, 4),)
