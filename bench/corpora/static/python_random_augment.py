"""Augmentation with Python's `random` (albumentations/old torchvision style)."""

import random

import torch
import torch.nn as nn


class RandomScale(nn.Module):
    def __init__(self, low=0.8, high=1.2):
        super().__init__()
        self.low = low
        self.high = high

    def forward(self, x):
        scale = random.uniform(self.low, self.high)
        return x * scale


def compile_example():
    random.seed(0)
    return RandomScale(), (torch.randn(2, 4),)
