"""NumPy code on tensors that Dynamo traces (trace_numpy): argsort/clip/from_numpy. Clean."""

import numpy as np
import torch
import torch.nn as nn


class Ranker(nn.Module):
    def forward(self, scores):
        arr = scores.detach().cpu().numpy()
        order = np.argsort(-arr, axis=-1)
        clipped = np.clip(arr, -1.0, 1.0)
        return torch.from_numpy(order), torch.from_numpy(clipped) * 2


def compile_example():
    torch.manual_seed(0)
    return Ranker(), (torch.randn(3, 5),)
