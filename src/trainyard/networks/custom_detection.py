"""The custom detection network convention, and the file the editor starts a detector from.

A custom network file on a detection dataset defines the same ``build(num_classes, in_channels,
image_size)`` as a classifier's (custom.py), called the same way:

- ``num_classes``: the dataset's classes, without background;
- ``in_channels``: the dataset's channels; the detector always receives 3 (grey is repeated);
- ``image_size``: the short side of the stored images; the input is the stored height x width.

It returns an ``nn.Module`` that honours torchvision's detection contract, which training,
validation, detect, evaluate and the ONNX export rely on (detection_check.py checks it):

- training mode: ``model(images, targets)``, images a (N, 3, H, W) float tensor in 0..1 and
  targets one ``{"boxes": (b, 4) float x1 y1 x2 y2 in pixels, "labels": (b,) int64}`` per image,
  returns a dict of scalar losses (training sums them and charts each);
- eval mode: ``model(images)`` returns one ``{"boxes", "labels", "scores"}`` dict per image.

Labels are the dataset's class index plus ``model.label_offset``: 1 (the default) where the
model keeps label 0 for background (Faster R-CNN, SSD), 0 where it has none (RetinaNet, FCOS).
A torchvision detector's internal resize (``GeneralizedRCNNTransform``) is set to the stored size
after ``build`` (detection.fit_input), so images are not upscaled to 800 pixels. Torch-free: the
server hands the template out without importing torch.
"""

from __future__ import annotations

TEMPLATE = '''"""A custom detector: build() returns a torchvision-style detection model.

Training calls model(images, targets) and sums the dict of losses it returns; eval mode
model(images) returns one {"boxes", "labels", "scores"} dict per image. num_classes excludes
background; label_offset = 1 keeps label 0 for it (Faster R-CNN, SSD), 0 for RetinaNet or FCOS.
The heads are sized for a CPU: a small box head, 64 sampled anchors and regions per image.
"""
from torch import nn
from torchvision.models.detection import FasterRCNN
from torchvision.models.detection.anchor_utils import AnchorGenerator
from torchvision.models.detection.faster_rcnn import FastRCNNPredictor, TwoMLPHead
from torchvision.ops import MultiScaleRoIAlign


def build(num_classes, in_channels, image_size):
    backbone = nn.Sequential(
        nn.Conv2d(3, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
        nn.Conv2d(64, 128, 3, stride=2, padding=1), nn.BatchNorm2d(128), nn.ReLU(),
    )
    backbone.out_channels = 128  # what the detection heads read
    side = max(image_size // 8, 8)
    anchors = AnchorGenerator(sizes=((side, 2 * side, 4 * side),), aspect_ratios=((0.5, 1.0, 2.0),))
    model = FasterRCNN(
        backbone, rpn_anchor_generator=anchors,
        box_roi_pool=MultiScaleRoIAlign(featmap_names=["0"], output_size=7, sampling_ratio=2),
        box_head=TwoMLPHead(128 * 7 * 7, 256), box_predictor=FastRCNNPredictor(256, num_classes + 1),
        min_size=image_size, max_size=4 * image_size,
        rpn_batch_size_per_image=64, box_batch_size_per_image=64,
        rpn_pre_nms_top_n_train=300, rpn_post_nms_top_n_train=100,
        rpn_pre_nms_top_n_test=300, rpn_post_nms_top_n_test=100,
    )
    model.label_offset = 1
    return model
'''

TEMPLATES = {"detection": TEMPLATE}
