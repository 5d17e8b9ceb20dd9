"""The YOLO family (networks/yolo): torchvision's detector API for every size, a loss that
learns, an assigner that picks cells inside their object, and its registry entries."""

from __future__ import annotations

import pytest
import torch

from trainyard.networks.table import get_network, load_builder, network_task
from trainyard.networks.yolo.assign import assign
from trainyard.networks.yolo.head import cell_centres

SIZES = ("yolo_n", "yolo_s", "yolo_m")


def _targets() -> list[dict[str, torch.Tensor]]:
    return [{"boxes": torch.tensor([[10.0, 12, 50, 60], [60, 30, 150, 110]]), "labels": torch.tensor([0, 2])},
            {"boxes": torch.zeros((0, 4)), "labels": torch.zeros(0, dtype=torch.long)}]


@pytest.mark.parametrize("name", SIZES)
def test_each_size_trains_and_answers_boxes_in_the_image(name):
    torch.manual_seed(0)
    model = load_builder(f"trainyard.networks.yolo:{name}")(3, 3, 160)
    assert model.label_offset == 0
    images = torch.rand(2, 3, 120, 150)  # not a multiple of 32: padded inside
    losses = model.train()(images, _targets())
    assert set(losses) == {"loss_box", "loss_classifier", "loss_dfl"}
    assert all(torch.isfinite(v) and v > 0 for v in losses.values())
    sum(losses.values()).backward()
    with torch.no_grad():
        found = model.eval()(images)
    assert len(found) == 2
    for answer in found:
        boxes = answer["boxes"]
        assert boxes.shape[1] == 4 and len(boxes) == len(answer["scores"]) == len(answer["labels"]) <= 300
        assert (boxes[:, 0::2] <= 150).all() and (boxes[:, 1::2] <= 120).all() and (boxes >= 0).all()
        assert ((answer["labels"] >= 0) & (answer["labels"] < 3)).all()


def test_sizes_grow_from_n_to_m():
    counts = [sum(p.numel() for p in load_builder(f"trainyard.networks.yolo:{n}")(5, 3, 160).parameters())
              for n in SIZES]
    assert 2e6 < counts[0] < 4e6 and counts[0] < counts[1] < counts[2]


def test_a_list_of_images_of_different_sizes_is_one_batch():
    model = load_builder("trainyard.networks.yolo:yolo_n")(2, 3, 64).eval()
    with torch.no_grad():
        found = model([torch.rand(3, 64, 64), torch.rand(3, 40, 70)])
    assert (found[1]["boxes"][:, 1::2] <= 40).all() and (found[1]["boxes"][:, 0::2] <= 70).all()


def test_the_loss_falls_when_fitting_one_batch():
    torch.manual_seed(0)
    model = load_builder("trainyard.networks.yolo:yolo_n")(3, 3, 160).train()
    images, targets = torch.rand(2, 3, 128, 160), _targets()
    optimizer = torch.optim.AdamW(model.parameters(), 2e-3)
    first = None
    for _ in range(12):
        loss = sum(model(images, targets).values())
        first = first if first is not None else loss.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.6 * first


def test_the_assigner_picks_cells_inside_their_object_only():
    features = [torch.zeros(1, 1, 128 // s, 160 // s) for s in (8, 16, 32)]
    centres, _ = cell_centres(features)
    a = len(centres)
    gt = torch.tensor([[[16.0, 16, 64, 64], [0, 0, 0, 0]]])
    scores = torch.full((1, a, 3), 0.5)
    pred = gt[:, :1].expand(1, a, 4).clone()  # every cell predicts the object's box exactly
    boxes, soft, foreground = assign(scores, pred, centres, gt, torch.tensor([[1, 0]]), torch.tensor([[True, False]]))
    chosen = centres[foreground[0]]
    assert 0 < len(chosen) <= 10
    assert ((chosen > 16) & (chosen < 64)).all()
    assert (boxes[0, foreground[0]] == gt[0, 0]).all()
    assert (soft[0, foreground[0]].argmax(-1) == 1).all() and soft[0, ~foreground[0]].sum() == 0
    assert soft.max() == pytest.approx(1.0)  # the best cell's target is its IoU: 1 for an exact box


def test_the_family_is_registered_as_detectors_with_a_recipe():
    for name in SIZES:
        info = get_network(name)
        assert network_task(name) == "detection" and info.min_image_size == 32
        recipe = info.recipe_settings()
        assert recipe["solver"] == "adamw" and recipe["ema"] > 0 and recipe["augment"]["mosaic"] > 0
        assert recipe["lr"]["warmup_percent"] > 0
    source = load_builder("trainyard.networks.yolo:yolo_s").source()
    assert "width=0.5" in source and "def build(num_classes, in_channels, image_size)" in source
