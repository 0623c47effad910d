"""fairseq utils.item(): `tensor.item()` behind a hasattr check, used to log a statistic."""

import torch
import torch.nn as nn


def item(tensor):
    if hasattr(tensor, "item"):
        return tensor.item()
    if hasattr(tensor, "__getitem__"):
        return tensor[0]
    return tensor


class Criterion(nn.Module):
    def forward(self, logits, target):
        loss = nn.functional.cross_entropy(logits, target, reduction="sum")
        logging_output = {"loss": item(loss.data), "ntokens": target.numel()}
        return loss, logging_output


def compile_example():
    torch.manual_seed(0)
    return Criterion(), (torch.randn(4, 5), torch.randint(0, 5, (4,)))
