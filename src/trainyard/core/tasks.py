"""The task registry of the shared vocabulary: what every layer may know about a task without
importing the layer that holds its parts.

A task (core/vocabulary.py's ``Task``) is registered here with its plain facts: the metric that
ranks a model's epochs, the metrics a model page always charts, the words the pages and the CLI
use for it (classify / detect, a classifier / a detector), and whether its answers are boxes.
What varies by task in code lives in one registry per layer, each task's parts beside each
other (docs/architecture.md, "Tasks"); callers ask ``task_traits(task)`` or those registries and
never compare task names (tests/test_task_registry.py counts such comparisons).
"""

from __future__ import annotations

from dataclasses import dataclass

from trainyard.core.registry import Registry
from trainyard.core.vocabulary import BEST_METRIC, DEFAULT_TASK


@dataclass(frozen=True)
class TaskTraits:
    """One task's facts, as every layer may read them (no code: the layers' registries hold that)."""

    name: str
    best_metric: str  # the validation metric whose highest value is a model's best epoch
    metrics: tuple[str, ...]  # the metrics a model page charts from the start (empty until reported)
    verb: str  # what a user does with a model: "classify", "detect"
    noun: str  # what a trained network of the task is: "classifier", "detector"
    best_label: str  # the model page's caption for the best score
    boxes: bool = False  # answers, labels and previews are boxes per image, not one class per image
    masks: bool = False  # answers, labels and previews are a class per pixel (a mask per image)
    appendable: bool = True  # a built dataset takes more images (a new version) without a rebuild
    dataset_hint: str = ""  # how to build a dataset of the task, for a network of it on another's
    networks_of: str = ""  # the task whose networks train it (a multi-label one: classifiers); "": its own
    score_text: str = "{:.3f}"  # the best score as the pages show it ("87.50%", "mAP@0.5 0.824")
    best_words: str = ""  # the best score in the log's words ("accuracy 87.50 %")

    @property
    def label_files(self) -> bool:
        """Its labels are files beside the images (boxes or masks), not the images' folders."""
        return self.boxes or self.masks

    @property
    def network_task(self) -> str:
        """The task of the networks (networks/table.py's ``task``) that train this task."""
        return self.networks_of or self.name


TASK_TRAITS: Registry[TaskTraits] = Registry("task", plural="tasks")

TASK_TRAITS.register("classification", TaskTraits(
    name="classification", best_metric=BEST_METRIC["classification"],
    metrics=("val_accuracy", "val_loss", "train_loss"), verb="classify", noun="classifier",
    best_label="Best val. accuracy", dataset_hint="build a classification dataset from class folders",
    score_text="{:.2f}%", best_words="accuracy {:.2f} %"))
TASK_TRAITS.register("detection", TaskTraits(
    name="detection", best_metric=BEST_METRIC["detection"],
    metrics=("val_map50", "val_loss", "train_loss", "val_map"), verb="detect", noun="detector",
    best_label="Best val. mAP@0.5", boxes=True, appendable=False,
    dataset_hint="build a detection dataset (--task detection) from box labels",
    score_text="mAP@0.5 {:.3g}", best_words="mAP@0.5 {:.3f}"))  # 3 significant digits: 0.004, not 0.00
TASK_TRAITS.register("multilabel", TaskTraits(
    name="multilabel", best_metric=BEST_METRIC["multilabel"],
    metrics=("val_micro_f1", "val_map", "val_macro_f1", "val_loss", "train_loss"), verb="classify",
    noun="multi-label classifier", best_label="Best val. micro F1", appendable=False, networks_of="classification",
    dataset_hint="build a multi-label dataset (--task multilabel) from a CSV of path,label;label rows",
    score_text="micro F1 {:.3f}", best_words="micro F1 {:.3f}"))
TASK_TRAITS.register("segmentation", TaskTraits(
    name="segmentation", best_metric=BEST_METRIC["segmentation"],
    metrics=("val_miou", "val_loss", "train_loss", "val_pixel_accuracy"), verb="segment", noun="segmenter",
    best_label="Best val. mIoU", masks=True, appendable=False,
    dataset_hint="build a segmentation dataset (--task segmentation) from index-PNG masks",
    score_text="mIoU {:.3f}", best_words="mIoU {:.3f}"))


def task_traits(task: str | None) -> TaskTraits:
    """The facts of ``task`` (None: an older spec or checkpoint's, the default task); an unknown
    name raises UnknownName listing the tasks."""
    return TASK_TRAITS.get(task or DEFAULT_TASK)


def best_of(scores: dict | None) -> tuple[TaskTraits, float] | None:
    """The task whose best metric ``scores`` (a run's ``best`` entry, or its latest metrics)
    holds, with that score; None when it holds none. Each task's metric is its own name."""
    for traits in TASK_TRAITS.list():
        if scores and scores.get(traits.best_metric) is not None:
            return traits, float(scores[traits.best_metric])
    return None


def known_task(value: object) -> str:
    """``value`` if it names a registered task, else the default task: for documents read back
    from outside (an archive's preprocess.json) whose task may be missing or anything at all."""
    return value if isinstance(value, str) and value in TASK_TRAITS else DEFAULT_TASK
