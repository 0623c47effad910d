"""torchvision.ops.boxes.remove_small_boxes / clip_boxes_to_image, called from a module."""

import torch
import torch.nn as nn


def clip_boxes_to_image(boxes, size: tuple):
    boxes_x = boxes[..., 0::2].clamp(min=0, max=size[1])
    boxes_y = boxes[..., 1::2].clamp(min=0, max=size[0])
    return torch.stack((boxes_x, boxes_y), dim=boxes.dim()).reshape(boxes.shape)


def remove_small_boxes(boxes, min_size: float):
    ws, hs = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    keep = (ws >= min_size) & (hs >= min_size)
    keep = torch.where(keep)[0]
    return keep


class BoxFilter(nn.Module):
    def forward(self, boxes):
        boxes = clip_boxes_to_image(boxes, (32, 32))
        keep = remove_small_boxes(boxes, 1e-2)
        return boxes[keep]


def compile_example():
    torch.manual_seed(0)
    b = torch.rand(10, 4) * 32
    return BoxFilter(), (b,)
