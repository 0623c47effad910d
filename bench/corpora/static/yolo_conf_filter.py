"""YOLOv5 non_max_suppression candidate step: `xc = prediction[..., 4] > conf_thres`,
then `x = x[xc[xi]]` per image."""

import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self, conf_thres=0.25):
        super().__init__()
        self.conf_thres = conf_thres

    def forward(self, prediction):
        xc = prediction[..., 4] > self.conf_thres
        output = []
        for xi, x in enumerate(prediction):
            x = x[xc[xi]]
            x[:, 5:] *= x[:, 4:5]
            output.append(x)
        return output


def compile_example():
    torch.manual_seed(0)
    return Detect(), (torch.rand(2, 12, 7),)
