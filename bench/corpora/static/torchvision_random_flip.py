"""torchvision.transforms.RandomHorizontalFlip.forward: `if torch.rand(1) < self.p`."""

import torch
import torch.nn as nn


class RandomHorizontalFlip(nn.Module):
    def __init__(self, p=0.5):
        super().__init__()
        self.p = p

    def forward(self, img):
        if torch.rand(1) < self.p:
            return img.flip(-1)
        return img


def compile_example():
    torch.manual_seed(0)
    return RandomHorizontalFlip(), (torch.randn(3, 8, 8),)
