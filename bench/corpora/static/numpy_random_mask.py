"""Span masking with numpy.random (wav2vec2 _compute_mask_indices style) in the model."""

import numpy as np
import torch
import torch.nn as nn


class SpecAugment(nn.Module):
    def __init__(self, p=0.3):
        super().__init__()
        self.p = p

    def forward(self, feats):
        b, t, _ = feats.shape
        mask = np.random.binomial(1, self.p, size=(b, t)).astype(bool)
        mask_t = torch.from_numpy(mask)
        return feats.masked_fill(mask_t[..., None], 0.0)


def compile_example():
    np.random.seed(0)
    return SpecAugment(), (torch.randn(2, 6, 3),)
