"""Metrics against counts done by hand on a small example."""

from __future__ import annotations

import numpy as np
import pytest

from trainyard.inference import metrics
from trainyard.inference.evaluate import evaluation

CLASSES = ["cat", "dog", "fox"]
# 10 images: true labels and top-1 predictions, written out so the counts can be checked by eye.
LABELS = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2, 2])
PREDICTED = np.array([0, 0, 1, 2, 1, 1, 0, 2, 1, 1])
# Hand count: rows true, columns predicted.
#            cat dog fox
HAND = [[2, 1, 1],   # cat: 2 right, 1 as dog, 1 as fox
        [1, 2, 0],   # dog: 2 right, 1 as cat
        [0, 2, 1]]   # fox: 1 right, 2 as dog


def test_confusion_matrix_matches_a_hand_count():
    assert metrics.confusion_matrix(LABELS, PREDICTED, 3).tolist() == HAND


def test_precision_recall_f1_by_hand():
    rows = {r["class"]: r for r in metrics.per_class(np.array(HAND), CLASSES)}
    # dog: predicted 5 times (1 + 2 + 2), 2 right; 3 dogs, 2 found.
    assert rows["dog"]["precision"] == pytest.approx(2 / 5)
    assert rows["dog"]["recall"] == pytest.approx(2 / 3)
    assert rows["dog"]["f1"] == pytest.approx(2 * (2 / 5) * (2 / 3) / (2 / 5 + 2 / 3))
    assert rows["cat"]["precision"] == pytest.approx(2 / 3) and rows["cat"]["recall"] == pytest.approx(2 / 4)
    assert rows["fox"]["precision"] == pytest.approx(1 / 2) and rows["fox"]["recall"] == pytest.approx(1 / 3)
    assert [r["support"] for r in rows.values()] == [4, 3, 3]


def test_classes_never_predicted_or_absent_do_not_divide_by_zero():
    rows = metrics.per_class(np.array([[3, 0], [0, 0]]), ["a", "b"])
    assert rows[1] == {"class": "b", "precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 0, "predicted": 0}
    doc = metrics.summary(np.array([[3, 0], [0, 0]]), ["a", "b"])
    assert doc["macro"]["recall"] == 1.0  # b has no images: left out of the average


def test_most_confused_pairs_biggest_first():
    pairs = metrics.most_confused(np.array(HAND), CLASSES)
    assert [(p["true"], p["predicted"], p["count"]) for p in pairs][:1] == [("fox", "dog", 2)]
    expected = {("fox", "dog"), ("cat", "dog"), ("cat", "fox"), ("dog", "cat")}
    assert {(p["true"], p["predicted"]) for p in pairs} == expected
    assert pairs[0]["share"] == pytest.approx(2 / 3)
    assert metrics.most_confused(np.eye(3, dtype=int) * 5, CLASSES) == []


def test_top_k_hits_and_summary_accuracy():
    top = np.array([[0, 1], [1, 0], [2, 0], [1, 2]])  # labels 0, 0, 2, 2
    labels = np.array([0, 0, 2, 2])
    assert metrics.top_k_correct(labels, top).tolist() == [2, 4]  # top-1: images 0 and 2; top-2: all
    doc = metrics.summary(metrics.confusion_matrix(labels, top[:, 0], 3), CLASSES, metrics.top_k_correct(labels, top))
    assert doc["accuracy"] == 0.5 and doc["top5_accuracy"] == 1.0 and doc["images"] == 4


def test_evaluation_examples_are_the_surest_mistakes():
    top = np.stack([PREDICTED, (PREDICTED + 1) % 3], axis=1)
    conf = np.linspace(0.5, 0.95, 10, dtype=np.float32)[:, None].repeat(2, axis=1)
    doc = evaluation(LABELS, top, conf, CLASSES)
    assert doc["confusion"] == HAND and doc["accuracy"] == pytest.approx(5 / 10)
    fox_as_dog = doc["most_confused"][0]
    assert [x["index"] for x in fox_as_dog["examples"]] == [9, 8]  # fox images predicted dog, surest first
