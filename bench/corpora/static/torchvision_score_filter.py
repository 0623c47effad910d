"""torchvision detection postprocess (RetinaNet/FCOS postprocess_detections): keep boxes
above a score threshold with boolean-mask indexing, then torch.where(keep)[0]."""

import torch
import torch.nn as nn


class Postprocess(nn.Module):
    def __init__(self, score_thresh=0.05, topk=10):
        super().__init__()
        self.score_thresh = score_thresh
        self.topk = topk

    def forward(self, boxes, logits):
        scores = torch.sigmoid(logits).flatten()
        keep_idxs = scores > self.score_thresh
        scores = scores[keep_idxs]
        topk_idxs = torch.where(keep_idxs)[0]
        num_topk = min(self.topk, topk_idxs.size(0))
        scores, idxs = scores.topk(num_topk)
        return boxes[topk_idxs[idxs]], scores


def compile_example():
    torch.manual_seed(0)
    return Postprocess(), (torch.randn(20, 4), torch.randn(20))
