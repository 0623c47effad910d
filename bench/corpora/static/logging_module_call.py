"""Module-level logging.info in a forward (scripts that never create a named logger)."""

import logging

import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        logits = self.fc(x)
        logging.info("head output %s", tuple(logits.shape))
        return logits.log_softmax(-1)


def compile_example():
    return Head(), (torch.randn(2, 4),)
