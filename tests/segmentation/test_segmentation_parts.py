"""Segmentation's parts alone, fast: flips keep masks on their pixels, the IoU figures, the loss
ignores 255, and the network check names a segmenter's wrong output."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainyard.artifact.segmentation_metrics import confusion_counts, iou_figures
from trainyard.networks.check import run_check
from trainyard.training.segmentation.data import flipped
from trainyard.training.segmentation.steps import segmentation_loss


def test_flips_turn_each_mask_with_its_image():
    masks = torch.randint(0, 3, (16, 8, 8))
    x = masks[:, None].float().expand(-1, 3, -1, -1).clone() / 2  # the image is its mask's picture
    out, turned = flipped(x, masks.clone(), (-1, -2), torch.Generator().manual_seed(0))
    assert torch.equal(out[:, 0] * 2, turned.float())
    assert not torch.equal(turned, masks)  # some were turned


def test_iou_figures_leave_out_a_class_never_seen_nor_predicted_and_pixels_marked_ignore():
    truth = np.array([[0, 0, 1, 255]])
    predicted = np.array([[0, 1, 1, 2]])
    matrix = confusion_counts(truth, predicted, 3)
    assert matrix.sum() == 3  # the 255 pixel is not counted
    figures = iou_figures(matrix)
    assert figures.per_class_iou == [0.5, 0.5, None]
    assert figures.miou == 0.5 and figures.miou_no_background == 0.5
    assert figures.pixel_accuracy == pytest.approx(2 / 3)


def test_the_loss_ignores_pixels_marked_255():
    model = torch.nn.Conv2d(3, 3, 1)
    images = torch.rand(2, 3, 8, 8)
    masks = torch.randint(0, 3, (2, 8, 8))
    loss, parts = segmentation_loss(model, images, masks)
    ignored = masks.clone()
    ignored[:, :4] = 255
    loss_ignored, _ = segmentation_loss(model, images, ignored)
    assert torch.isfinite(loss) and set(parts) == {"train_ce_loss", "train_dice_loss"}
    assert torch.isfinite(loss_ignored) and loss_ignored != loss


def test_the_check_names_a_segmenter_that_answers_one_class_per_image():
    source = ("import torch.nn as nn\n"
              "def build(num_classes, in_channels, image_size):\n"
              "    return nn.Sequential(nn.Conv2d(in_channels, num_classes, 3), nn.AdaptiveAvgPool2d(1),\n"
              "                         nn.Flatten())\n")
    answer = run_check({"source": source, "num_classes": 3, "in_channels": 3, "image_size": 32,
                        "task": "segmentation"})
    assert not answer["ok"] and "(batch, num_classes, height, width)" in answer["error"]
    good = run_check({"network": "unet_resnet18", "num_classes": 3, "in_channels": 1, "image_size": 32,
                      "task": "segmentation"})
    assert good["ok"] and good["output_shape"] == [2, 3, 32, 32]


def test_segmenters_train_by_their_recipe_unless_told_otherwise():
    from trainyard.jobs.kinds.training import with_recipe

    given = with_recipe("unet_resnet18", {})
    assert given["solver"] == "adam" and given["lr"] == {"policy": "cosine", "base_lr": 0.001}
    told = with_recipe("lraspp_mobilenet_v3_large", {"lr": {"base_lr": 0.01}})
    assert told["solver"] == "adam" and told["lr"] == {"policy": "cosine", "base_lr": 0.01}
