"""Child process of check_network_isolated: check and inspect one network, answer in JSON.

Reads {"source" or "network", "num_classes", "in_channels", "image_size", "input_size" (height,
width; optional), "filename", "task" ("detection" checks a detector: detection_check.py)} on stdin
and writes one JSON line on stdout:
{"ok": true, "layers": [...], "params": N, "state": {name: shape}, ...} or {"ok": false, "error": message, "line": n}.
Anything the user's code prints goes to stderr, so it cannot corrupt the answer.

    python -m trainyard.networks.check < request.json
"""

from __future__ import annotations

import json
import sys

from trainyard.core.tasks import task_traits


def run_check(request: dict) -> dict:
    """Build, run and inspect the requested network; errors become {"ok": False, ...}."""
    from .custom import NetworkError, load_network_source
    from .layer_report import inspect_network
    from .registry import create_network, get_network

    num_classes, in_channels = int(request["num_classes"]), int(request["in_channels"])
    filename = request.get("filename") or "network.py"
    input_size = tuple(request["input_size"]) if request.get("input_size") else None
    try:
        check = CHECKS[task_traits(request.get("task")).name]
        if request.get("network"):
            name = request["network"]
            size = int(request.get("image_size") or get_network(name).image_size)
            make = lambda: create_network(name, num_classes, in_channels, size)  # noqa: E731
        else:
            size = int(request["image_size"])
            build = load_network_source(request["source"], filename)
            make = lambda: build(num_classes, in_channels, size)  # noqa: E731
        model, channels, extra = check(make, num_classes, in_channels, size, input_size, filename)
        report = inspect_network(model, (channels, *(input_size or (size, size))))
        # What a caller needs to match weights to the network without building it itself.
        report["state"] = {name: list(t.shape) for name, t in model.state_dict().items()}
        report.update(extra)
    except NetworkError as exc:
        return {"ok": False, "error": exc.message, "line": exc.lineno}
    except Exception as exc:  # inspection or an unknown name: still an answer, not a crash
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}", "line": None}
    return {"ok": True, **report}


def _check_classifier(make, num_classes: int, in_channels: int, size: int, input_size, filename: str):
    """(the checked classifier, the channels it takes, what its report adds: nothing)."""
    from .custom import check_model

    model = check_model(make, num_classes, in_channels, size, filename=filename, input_size=input_size)
    return model, in_channels, {}


def _check_detector(make, num_classes: int, in_channels: int, size: int, input_size, filename: str):
    """(the checked detector, RGB: a grey dataset's repeated, its report's boxes per image, not
    a tensor of one shape)."""
    from .detection_check import check_detector_model

    model = check_detector_model(make, num_classes, input_size or (size, size), filename=filename)
    return model, 3, {"output_shape": None, "task": "detection"}


def _check_segmenter(make, num_classes: int, in_channels: int, size: int, input_size, filename: str):
    """(the checked segmenter, its channels, its report's output: logits per pixel)."""
    from .segmentation_check import check_segmenter_model

    model, shape = check_segmenter_model(make, num_classes, in_channels, input_size or (size, size), filename)
    return model, in_channels, {"output_shape": shape, "task": "segmentation"}


# How a network of each task is checked (core/tasks.py names the tasks): a new task adds its own.
CHECKS = {"classification": _check_classifier, "detection": _check_detector,
          "multilabel": _check_classifier,  # a multi-label classifier: one logit a label
          "segmentation": _check_segmenter}


def main() -> None:
    answer_to = sys.stdout
    sys.stdout = sys.stderr  # the user's print() calls must not end up in the JSON answer
    try:
        result = run_check(json.loads(sys.stdin.read()))
    except Exception as exc:  # a malformed request
        result = {"ok": False, "error": f"bad check request: {exc}", "line": None}
    answer_to.write(json.dumps(result) + "\n")
    answer_to.flush()


if __name__ == "__main__":
    main()
