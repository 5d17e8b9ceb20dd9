"""A model job's settings and history in words, for the job page and `trainyard jobs show`:
settings grouped under the form's labels ("Base learning rate", not ``lr.base_lr``), values as a
person types them, and the status timeline with durations.

Settings come from the job's spec.json, whatever made it (the form, the CLI, an imported
archive): nested values are flattened into labelled rows, so no Python dict repr reaches a page.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from trainyard.core import jobfiles
from trainyard.core.paths import JobFolder
from trainyard.core.status import FINAL_STATUSES
from trainyard.jobs.kinds.registry import MODEL
from trainyard.training.lr_policies import get_lr_policy


def as_text(value: object) -> str:
    """A number as a person types it: 30 not 30.0, 0.0001 not 1e-04 where possible."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        # Ten significant digits drop float noise (3 * 1e-4 is 0.00030000000000000003).
        return str(int(value)) if float(value).is_integer() else repr(float(f"{value:.10g}"))
    if isinstance(value, list):
        return ", ".join(as_text(v) for v in value)
    return str(value)


# Spec key (dotted for nested ones, a trailing "." for a whole nested group) -> group.
GROUPS: list[tuple[str, tuple[str, ...]]] = [
    ("Data", ("dataset_id", "crop", "mean")),
    ("Network", ("network", "pretrained", "freeze_backbone", "imported.")),
    ("Solver", ("solver", "lr.", "epochs", "batch_size", "accumulation", "momentum", "weight_decay",
                "snapshot_interval", "val_interval", "seed")),
    ("Augmentation", ("augment.",)),
    ("Hardware", ("precision", "processes", "scale_lr", "nnodes", "node_rank", "master",
                  "channels_last", "compile")),
]
LABELS = {
    "dataset_id": "Dataset", "crop": "Crop size", "mean": "Subtract mean", "network": "Network",
    "pretrained": "Start from", "freeze_backbone": "Freeze all but the last layer",
    "solver": "Solver type", "lr.base_lr": "Base learning rate", "lr.policy": "Learning-rate policy",
    "lr.step_percent": "Step size (% of training)", "lr.steps_percent": "Step points (% of training)",
    "lr.gamma": "Gamma", "lr.power": "Power", "lr.warmup_percent": "Warm-up (% of training)",
    "lr.warmup_start_factor": "Warm-up start (× base LR)", "epochs": "Training epochs",
    "batch_size": "Batch size (per process)", "accumulation": "Batch accumulation",
    "weight_decay": "Weight decay", "snapshot_interval": "Snapshot interval (epochs)",
    "val_interval": "Validation interval (epochs)", "seed": "Random seed",
    "augment.flip": "Flip", "augment.quarter_turns": "Quarter turns", "augment.rotate_degrees": "Rotation (± degrees)",
    "augment.scale_jitter": "Scale (± fraction)", "augment.noise_std": "Noise (std. dev.)",
    "augment.contrast": "Contrast (± fraction)", "augment.hue_shift": "Hue (± fraction of circle)",
    "augment.saturation_shift": "Saturation (±)", "augment.value_shift": "Value (±)",
    "precision": "Precision", "processes": "Processes per node", "scale_lr": "Scale LR with processes",
    "nnodes": "Nodes", "node_rank": "Node rank", "master": "Rendezvous (node 0)",
    "channels_last": "Channels-last memory layout", "compile": "torch.compile",
}
HIDDEN = {"network_source", "kind", "version", "id", "name", "dataset_dir"}
DEFAULTS_SHOWN_AS = {"batch_size": "network default", "seed": "random", "crop": "none",
                     "pretrained": "random initialisation"}


def flatten(spec: dict, prefix: str = "") -> list[tuple[str, object]]:
    rows = []
    for key, value in spec.items():
        if not prefix and key in HIDDEN:
            continue
        if isinstance(value, dict):
            rows += flatten(value, f"{prefix}{key}.")
        else:
            rows.append((f"{prefix}{key}", value))
    return rows


def label(key: str) -> str:
    if key in LABELS:
        return LABELS[key]
    words = key.replace("_", " ").split(".")
    return " · ".join(w[:1].upper() + w[1:] for w in words)


def text(key: str, value: object) -> str:
    if value is None or value == "":
        return DEFAULTS_SHOWN_AS.get(key, "—")
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list) and any(isinstance(v, dict) for v in value):
        return "; ".join(", ".join(f"{k} {as_text(x)}" for k, x in v.items()) if isinstance(v, dict)
                         else as_text(v) for v in value)
    return as_text(value)


# LR settings every policy reads; the rest only where the chosen policy uses them (its `uses`).
LR_ALWAYS = {"lr.base_lr", "lr.policy", "lr.warmup_percent"}
_SEED_LOGGED = re.compile(r"^(?:\S+ \S+ \[info\] )?training .*, seed (\d+)$", re.MULTILINE)  # loop.py's start line


def lr_unused(spec: dict) -> set[str]:
    """The ``lr.*`` settings the spec's policy never reads (a fixed LR has no step size or gamma),
    read through the model kind's spec class; none when that is not known (no policy given, a
    spec that does not read as a model's)."""
    model = MODEL.read_or_none(spec)
    if model is None or "policy" not in model.lr.model_fields_set:
        return set()
    uses = set(get_lr_policy(model.lr.policy).uses) | ({"warmup_start_factor"} if model.lr.warmup_percent else set())
    return {f"lr.{key}" for key in type(model.lr).model_fields} - LR_ALWAYS - {f"lr.{key}" for key in uses}


def seed_used(job_dir: Path) -> int | None:
    """The seed the run actually drew or was given: the last start line of the job's log says it
    (the job writes its log: read as every job file, core/jobfiles.py, its last MiB)."""
    log = JobFolder(job_dir).log
    try:
        found = _SEED_LOGGED.findall(jobfiles.read_bytes(log.parent, log.name, 1 << 20, tail=True)
                                     .decode(errors="replace"))
    except OSError:
        return None
    return int(found[-1]) if found else None


def settings_groups(spec: dict, extra: dict[str, list[tuple[str, str]]] | None = None,
                    seed: int | None = None) -> list[dict]:
    """[{"name": "Solver", "rows": [(label, text), ...]}, ...]; unknown keys go to "Other".
    ``seed``: the seed the run used, shown in place of "random"."""
    grouped: dict[str, list] = {name: [] for name, _ in GROUPS}
    grouped["Other"] = []
    unused = lr_unused(spec)
    for key, value in flatten(spec):
        if key in unused:
            continue
        if key == "seed" and seed is not None:
            value = f"{seed}" if value is not None else f"{seed} (drawn at random)"
        group = next((name for name, keys in GROUPS
                      if key in keys or any(k.endswith(".") and key.startswith(k) for k in keys)), "Other")
        grouped[group].append((label(key), text(key, value)))
    for name, rows in (extra or {}).items():
        grouped.setdefault(name, []).extend(rows)
    return [{"name": name, "rows": rows} for name, rows in grouped.items() if rows]


def timeline(history: list[dict], finished_at: float | None, now: float | None = None,
             status: str | None = None) -> list[dict]:
    """Each status the job went through, when, and for how long (the last one: until it ended,
    or until now while it lasts). An ended job's timeline ends with how it ended (``status``),
    at ``finished_at``, even where the history missed that change."""
    now = now or time.time()
    history = list(history)
    if status in FINAL_STATUSES and finished_at and (not history or history[-1]["status"] != status):
        history.append({"status": status, "detail": None, "time": finished_at})
    out = []
    for index, entry in enumerate(history):
        following = history[index + 1]["time"] if index + 1 < len(history) else None
        end = following if following is not None else (None if finished_at and entry["time"] >= finished_at else now)
        out.append({**entry, "duration": None if end is None else max(0.0, end - entry["time"])})
    return out
