"""HF warn_if_padding_and_no_attention_mask: `pad_token_id in input_ids[:, [-1, 0]]`."""

import logging

import torch
import torch.nn as nn

logger = logging.getLogger(__name__)


class Encoder(nn.Module):
    def __init__(self, vocab=100, dim=16, pad_token_id=0):
        super().__init__()
        self.pad_token_id = pad_token_id
        self.embed = nn.Embedding(vocab, dim)
        self.proj = nn.Linear(dim, dim)

    def warn_if_padding_and_no_attention_mask(self, input_ids, attention_mask):
        if attention_mask is not None or self.pad_token_id is None:
            return
        if self.pad_token_id in input_ids[:, [-1, 0]]:
            logger.warning("We strongly recommend passing in an `attention_mask`.")

    def forward(self, input_ids, attention_mask=None):
        self.warn_if_padding_and_no_attention_mask(input_ids, attention_mask)
        return self.proj(self.embed(input_ids))


def compile_example():
    ids = torch.tensor([[0, 5, 7, 0], [3, 4, 5, 6]])
    return Encoder(), (ids,)
