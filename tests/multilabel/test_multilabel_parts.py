"""The parts of a multi-label classifier, fast: thresholds tuned per label, the rare labels'
weight, a loop that learns, and the answer over the thresholds."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from trainyard.artifact.multilabel_metrics import multilabel_metrics, tune_thresholds
from trainyard.inference.classify import over_thresholds
from trainyard.training.multilabel import MAX_POS_WEIGHT, evaluate_multilabel, multilabel_loss, pos_weights


def test_a_label_scored_low_gets_a_low_threshold_and_a_better_f1_than_at_one_half():
    rng = np.random.default_rng(0)
    targets = torch.as_tensor(rng.random((400, 2)) < 0.3)
    # label 0 well placed around 0.5; label 1 scored low: positives 0.2..0.4, negatives 0..0.2
    scores = torch.stack([torch.where(targets[:, 0], 0.6, 0.4), torch.where(targets[:, 1], 0.3, 0.1)], 1)
    scores = scores + torch.as_tensor(rng.uniform(-0.09, 0.09, (400, 2)), dtype=torch.float32)
    thresholds = tune_thresholds(scores, targets)
    assert 0.4 < thresholds[0] < 0.6 and 0.1 < thresholds[1] < 0.3
    tuned = multilabel_metrics(scores, targets, thresholds)["micro_f1"]
    at_half = multilabel_metrics(scores, targets, torch.full((2,), 0.5))["micro_f1"]
    assert tuned > 0.99 and at_half < 0.8


def test_a_rare_label_weighs_more_and_a_common_one_not_less():
    targets = np.zeros((1000, 3), np.uint8)
    targets[:10, 0], targets[:500, 1], targets[:900, 2] = 1, 1, 1
    weights = pos_weights(targets)
    assert weights[0] == MAX_POS_WEIGHT  # 990 negatives / 10 positives, held at the ceiling
    assert weights[1] == 1.0 and weights[2] == 1.0


class Loader:
    """What evaluate_multilabel reads of a BatchLoader: batches, the reader's labels, the device."""

    def __init__(self, images: torch.Tensor, targets: torch.Tensor):
        self.images, self.targets = images, targets
        self.reader = type("Reader", (), {"labels": targets.numpy(), "__len__": lambda s: len(targets)})()
        self.device, self.common_batches = torch.device("cpu"), 4

    def batches(self):
        for start in range(0, len(self.images), 16):
            yield self.images[start:start + 16], self.targets[start:start + 16]


def test_the_loss_and_validation_learn_independent_labels_and_keep_thresholds():
    torch.manual_seed(0)
    targets = (torch.rand(64, 3) < 0.4).long()
    images = targets.float() * 2 - 1 + 0.3 * torch.randn(64, 3)  # each label readable from one input
    model = nn.Linear(3, 3)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.05)
    weight = torch.as_tensor(pos_weights(targets.numpy()))
    for _ in range(60):
        loss, _ = multilabel_loss(model, images, targets, pos_weight=weight)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    kept: dict = {}
    figures = evaluate_multilabel(model, Loader(images, targets), keep=kept)
    assert figures["val_micro_f1"] > 0.95 and figures["val_map"] > 0.95 and figures["val_loss"] < 0.3
    assert len(kept["thresholds"]) == 3 and model.training


def test_the_answer_lists_every_label_over_its_own_threshold_best_first():
    scores = np.array([[0.9, 0.2, 0.35], [0.1, 0.1, 0.1]], np.float32)
    answer = over_thresholds(scores, ["a", "b", "c"], [0.5, 0.5, 0.3])
    assert answer == [[{"label": "a", "score": 0.9}, {"label": "c", "score": 0.35}], []]
