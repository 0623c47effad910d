"""Loss NaN guard (fairseq/apex style): `if torch.isnan(loss).any()` inside the step."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 1)

    def forward(self, x, target):
        pred = self.fc(x).squeeze(-1)
        loss = F.mse_loss(pred, target)
        if torch.isnan(loss).any() or torch.isinf(loss).any():
            loss = torch.zeros_like(loss)
        return loss


def compile_example():
    torch.manual_seed(0)
    return Regressor(), (torch.randn(5, 6), torch.randn(5))
