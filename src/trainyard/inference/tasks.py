"""The two inference jobs, from spec to written results: classify-many (detect-many for a
detection model) and evaluate.

`run.py` calls these with the job's events and stop flag; they load the checkpoint named in
the spec (on the job's GPU when it has one), open the image source and write the results.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from trainyard.artifact.device import require_leased_gpus
from trainyard.core import environment
from trainyard.core.events import EventWriter
from trainyard.core.files import write_json_atomic
from trainyard.datasets.archive import safe_extract
from trainyard.datasets.storage import open_split
from trainyard.inference.evaluate import evaluate_split
from trainyard.inference.loader import LoadedModel, load_model
from trainyard.inference.many import classify_many
from trainyard.inference.results import EVALUATION, IMAGES_DIR, SOURCE
from trainyard.inference.sources import count_folder, count_list, folder_items, list_items, split_items
from trainyard.inference.spec import InferenceSpec

BRIEF = ("images", "classified", "errors", "labelled", "accuracy", "top5_accuracy")


def job_device() -> str:
    """The job's GPU when the runner gave it one (CUDA_VISIBLE_DEVICES), else the CPU.

    A CPU job gets the variable empty from the runner: the CPU, without importing torch. A job
    given a real GPU that CUDA cannot use fails (GpuUnusable, naming the cause); other values
    ask torch, which finds no device behind a fake GPU (TRAINYARD_FAKE_GPUS)."""
    if (environment.cuda_visible_devices() or "unset").strip() == "":
        return "cpu"
    if require_leased_gpus():
        return "cuda"
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def open_source(spec: InferenceSpec, job_dir: Path, classes: list[str], events: EventWriter):
    """(items, count, the folder relative image names resolve against, or None for a split)."""
    if spec.list_file:
        path = Path(spec.list_file)
        base = Path(spec.image_root) if spec.image_root else path.parent
        return list_items(path, classes, base), count_list(path), base
    if spec.split:
        assert spec.dataset_dir  # the spec's validator requires a dataset with a split
        dataset = Path(spec.dataset_dir)
        return split_items(dataset, spec.split, classes), len(open_split(dataset, spec.split)), None
    if spec.archive:
        events.log(f"unpacking {Path(spec.archive).name}")
        root = safe_extract(Path(spec.archive), job_dir / IMAGES_DIR)
    else:
        assert spec.folder  # the validator requires exactly one source: this is the last one
        root = Path(spec.folder)
    return folder_items(root, classes), count_folder(root), root


def run_classify_many(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                      should_stop: Callable[[], bool]) -> dict:
    """A many-image job of the model's task (MANY)."""
    return MANY[spec.task](spec, job_dir, events, progress, should_stop)


def _classify_many(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                   should_stop: Callable[[], bool]) -> dict:
    loaded = _load(spec, events)
    items, total, base = _opened_source(spec, job_dir, loaded.classes, events)
    events.log(f"classifying {total} images")
    summary = classify_many(loaded, items, job_dir, total=total, top=spec.top, top_n=spec.top_n,
                            batch_size=spec.batch_size, roots=_roots(spec, job_dir), dataset_dir=spec.dataset_dir,
                            split=spec.split, progress=progress(events, "classifying"), should_stop=should_stop)
    events.log(f"classified {summary['classified']} images; {summary['errors']} could not be read")
    return {key: summary.get(key) for key in BRIEF}


def _detect_many(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                 should_stop: Callable[[], bool]) -> dict:
    from trainyard.inference.detection.detector import load_detector
    from trainyard.inference.detection.many import detect_many

    device = job_device()
    events.log(f"loading {Path(spec.checkpoint).name} (epoch {spec.epoch:g}) on {device}")
    loaded = load_detector(spec.checkpoint, device)
    items, total, _ = _opened_source(spec, job_dir, [], events)  # no class folders: boxes have no image label
    events.log(f"detecting objects in {total} images (scores from {spec.threshold:g})")
    summary = detect_many(loaded, items, job_dir, total=total, threshold=spec.threshold,
                          batch_size=spec.batch_size, roots=_roots(spec, job_dir),
                          progress=progress(events, "detecting"), should_stop=should_stop)
    events.log(f"found {summary['boxes']} boxes in {summary['images_with_boxes']} of {summary['detected']} images; "
               f"{summary['errors']} could not be read")
    return {key: summary.get(key) for key in ("images", "detected", "errors", "boxes")}


def _opened_source(spec: InferenceSpec, job_dir: Path, classes: list[str], events: EventWriter):
    """`open_source`, with what it reads written to source.json for the pages."""
    items, total, base = open_source(spec, job_dir, classes, events)
    write_json_atomic(job_dir / SOURCE, {"source": spec.source, "total": total,
                                         "image_base": str(base) if base else None})
    return items, total, base


def _roots(spec: InferenceSpec, job_dir: Path) -> list[str]:
    """Where the job may read images: the data roots and its own folder (an unpacked archive)."""
    return spec.roots + [str(job_dir)] if spec.roots else []


def run_evaluate(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                 should_stop: Callable[[], bool]) -> dict:
    """An evaluation of the model's task (EVALUATE) on its dataset's split."""
    return EVALUATE[spec.task](spec, job_dir, events, progress, should_stop)


def _evaluate_classifier(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                         should_stop: Callable[[], bool]) -> dict:
    loaded = _load(spec, events)
    assert spec.dataset_dir and spec.split  # the spec's validator requires both for an evaluation
    doc = evaluate_split(loaded, Path(spec.dataset_dir), spec.split, batch_size=spec.batch_size,
                         progress=progress(events, f"evaluating {spec.split}"), should_stop=should_stop)
    doc.update(model_id=spec.model_id, dataset_id=spec.dataset_id, epoch=spec.epoch)
    write_json_atomic(job_dir / EVALUATION, doc)
    events.log(f"{spec.split} accuracy {100 * doc['accuracy']:.2f}% over {doc['images']} images")
    return {key: doc.get(key) for key in ("images", "accuracy", "top5_accuracy")}


def _evaluate_detector(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                       should_stop: Callable[[], bool]) -> dict:
    from trainyard.inference.detection import evaluate
    from trainyard.inference.detection.detector import load_detector

    device = job_device()
    events.log(f"loading {Path(spec.checkpoint).name} (epoch {spec.epoch:g}) on {device}")
    loaded = load_detector(spec.checkpoint, device)
    assert spec.dataset_dir and spec.split  # the spec's validator requires both for an evaluation
    doc = evaluate.evaluate_split(loaded, Path(spec.dataset_dir), spec.split, batch_size=min(spec.batch_size, 16),
                                  progress=progress(events, f"evaluating {spec.split}"), should_stop=should_stop)
    doc.update(model_id=spec.model_id, dataset_id=spec.dataset_id, epoch=spec.epoch)
    write_json_atomic(job_dir / EVALUATION, doc)
    events.log(f"{spec.split} mAP@0.5 {doc['map50']:.3f}, mAP@0.5:0.95 {doc['map']:.3f} over {doc['images']} images")
    return {key: doc.get(key) for key in ("images", "map50", "map")}


def _evaluate_multilabel(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                         should_stop: Callable[[], bool]) -> dict:
    from trainyard.inference.multilabel import evaluate_multilabel_split

    loaded = _load(spec, events)
    assert spec.dataset_dir and spec.split  # the spec's validator requires both for an evaluation
    doc = evaluate_multilabel_split(loaded, Path(spec.dataset_dir), spec.split, batch_size=spec.batch_size,
                                    progress=progress(events, f"evaluating {spec.split}"), should_stop=should_stop)
    doc.update(model_id=spec.model_id, dataset_id=spec.dataset_id, epoch=spec.epoch)
    write_json_atomic(job_dir / EVALUATION, doc)
    events.log(f"{spec.split} micro F1 {doc['micro_f1']:.3f}, macro F1 {doc['macro_f1']:.3f}, "
               f"mAP {doc['map']:.3f} over {doc['images']} images")
    return {key: doc.get(key) for key in ("images", "micro_f1", "macro_f1", "map")}


def _load(spec: InferenceSpec, events: EventWriter) -> LoadedModel:
    device = job_device()
    events.log(f"loading {Path(spec.checkpoint).name} (epoch {spec.epoch:g}) on {device}")
    return load_model(spec.checkpoint, device)


def _segment_many(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                  should_stop: Callable[[], bool]) -> dict:
    from trainyard.inference.segmentation.jobs import segment_many
    from trainyard.inference.segmentation.segmenter import load_segmenter

    device = job_device()
    events.log(f"loading {Path(spec.checkpoint).name} (epoch {spec.epoch:g}) on {device}")
    loaded = load_segmenter(spec.checkpoint, device)
    items, total, _ = _opened_source(spec, job_dir, [], events)
    events.log(f"segmenting {total} images")
    summary = segment_many(loaded, items, job_dir, total=total, progress=progress(events, "segmenting"),
                           should_stop=should_stop)
    events.log(f"segmented {summary['segmented']} images; {summary['errors']} could not be read")
    return {key: summary.get(key) for key in ("images", "segmented", "errors")}


def _evaluate_segmenter(spec: InferenceSpec, job_dir: Path, events: EventWriter, progress: Callable,
                        should_stop: Callable[[], bool]) -> dict:
    from trainyard.inference.segmentation.jobs import evaluate_split as evaluate_masks
    from trainyard.inference.segmentation.segmenter import load_segmenter

    device = job_device()
    events.log(f"loading {Path(spec.checkpoint).name} (epoch {spec.epoch:g}) on {device}")
    loaded = load_segmenter(spec.checkpoint, device)
    assert spec.dataset_dir and spec.split  # the spec's validator requires both for an evaluation
    doc = evaluate_masks(loaded, Path(spec.dataset_dir), spec.split, batch_size=min(spec.batch_size, 16),
                         progress=progress(events, f"evaluating {spec.split}"), should_stop=should_stop)
    doc.update(model_id=spec.model_id, dataset_id=spec.dataset_id, epoch=spec.epoch)
    write_json_atomic(job_dir / EVALUATION, doc)
    events.log(f"{spec.split} mIoU {doc['miou']:.3f} over {doc['images']} images")
    return {key: doc.get(key) for key in ("images", "miou", "pixel_accuracy")}


# What a classify-many and an evaluate job run, by the model's task (core/tasks.py names the
# tasks): each task's runners beside each other; a new task registers its own two.
# A multi-label model classifies many as a classifier does (its predictions: label scores).
MANY: dict[str, Callable[..., dict]] = {"classification": _classify_many, "detection": _detect_many,
                                        "multilabel": _classify_many, "segmentation": _segment_many}
EVALUATE: dict[str, Callable[..., dict]] = {"classification": _evaluate_classifier, "detection": _evaluate_detector,
                                            "multilabel": _evaluate_multilabel, "segmentation": _evaluate_segmenter}
