"""kornia-style input validation: isinstance, len(shape) and dtype checks. Clean."""

import torch
import torch.nn as nn


def rgb_to_grayscale(image):
    if not isinstance(image, torch.Tensor):
        raise TypeError(f"Input type is not a torch.Tensor. Got {type(image)}")
    if len(image.shape) < 3 or image.shape[-3] != 3:
        raise ValueError(f"Input size must have a shape of (*, 3, H, W). Got {image.shape}")
    r, g, b = image.unbind(dim=-3)
    if image.dtype == torch.uint8:
        image = image.float()
    return (0.299 * r + 0.587 * g + 0.114 * b).unsqueeze(-3)


class Gray(nn.Module):
    def forward(self, x):
        return rgb_to_grayscale(x)


def compile_example():
    return Gray(), (torch.rand(2, 3, 4, 4),)
