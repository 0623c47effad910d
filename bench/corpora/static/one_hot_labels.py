"""Label smoothing with F.one_hot: without num_classes (data-dependent) and with it."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def smooth_targets(labels, eps: float = 0.1):
    onehot = F.one_hot(labels).float()
    return onehot * (1 - eps) + eps / onehot.size(-1)


def smooth_targets_fixed(labels, num_classes: int = 5, eps: float = 0.1):
    onehot = F.one_hot(labels, num_classes=num_classes).float()
    return onehot * (1 - eps) + eps / num_classes


class SmoothedLoss(nn.Module):
    def forward(self, logits, labels):
        t1 = smooth_targets(labels)
        t2 = smooth_targets_fixed(labels)
        logp = F.log_softmax(logits, dim=-1)
        return -(t2 * logp).sum(-1).mean(), t1


def compile_example():
    torch.manual_seed(0)
    return SmoothedLoss(), (torch.randn(4, 5), torch.tensor([0, 4, 2, 1]))
