"""What the new-model page needs: defaults (or a cloned job's settings) as form values, and the
choices it offers (datasets, previous models, GPUs, solvers, LR policies).

Values are strings as the form shows them; the page's script turns the form back into a
`TrainRequest` (jobs/kinds/training.py). Cloning renders the same form from a job's spec.json and
needs, so "Clone" needs no script to fill it.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from trainyard.core.status import Status
from trainyard.core.tasks import task_traits
from trainyard.core.vocabulary import DEFAULT_TASK, MEAN_MODES
from trainyard.datasets.info import DatasetInfo
from trainyard.jobs.context import Context
from trainyard.jobs.views.settings import as_text  # noqa: F401 (the form's values, as typed)
from trainyard.training.lr_policies import list_lr_policies
from trainyard.training.solvers import list_solvers
from trainyard.web.model_start import previous_models, start_values

if TYPE_CHECKING:
    from trainyard.training.spec import ModelSpec

PLAIN_FIELDS = ("epochs", "batch_size", "accumulation", "solver", "momentum", "weight_decay", "ema",
                "snapshot_interval", "val_interval", "seed", "crop", "mean", "precision", "backbone_lr_mult")


def _defaults() -> ModelSpec:
    # Imported on the first form render, not at start-up (the spec and the table are torch-free).
    from trainyard.training.spec import stored_spec

    return stored_spec({})  # every field at its default (a stored read checks no rule)


def form_values(ctx: Context, spec: ModelSpec | None = None, needs: dict | None = None) -> dict:
    """The form's values: ModelSpec defaults, or ``spec`` (a job to clone; its unset fields at
    their defaults)."""
    from trainyard.networks.table import family  # the torch-free table, on the first form render

    spec = spec or _defaults()
    values: dict[str, Any] = {name: as_text(getattr(spec, name)) for name in PLAIN_FIELDS}
    values["name"] = spec.name if spec.id else ""
    values["datasets"] = [spec.dataset_id] if spec.dataset_id else []
    values["networks"] = [spec.network] if spec.network else []
    values["timm_networks"] = [n for n in values["networks"] if family(n)]  # found by search, not tabled
    values["network_source"] = spec.network_source or ""
    values["base_lr"] = as_text(spec.lr.base_lr)
    values["lr"] = {k: as_text(v) for k, v in spec.lr.model_dump().items()}
    values["augment"] = {k: v if isinstance(v, (bool, str)) else as_text(v)
                         for k, v in spec.augment.model_dump().items()}
    values["freeze_backbone"] = spec.freeze_backbone
    values["scale_lr"] = spec.scale_lr
    values.update(_gpu_values(needs or {}))
    values.update(start_values(ctx, spec.pretrained, spec.pretrained_entry))  # the one "Start from" control
    values["network_mode"] = "custom" if spec.network_source else "standard"
    return values


def _gpu_values(needs: dict) -> dict:
    if needs.get("ids"):
        return {"gpu_mode": "ids", "gpu_count": "1", "gpu_ids": list(needs["ids"])}
    return {"gpu_mode": "count", "gpu_count": str(needs.get("count", 1)), "gpu_ids": []}


def dataset_choices(briefs: list[dict]) -> list[dict]:
    """Datasets a model can train on (built, or still building: the model then waits)."""
    from trainyard.networks.recommend import DatasetFacts, recommended_network

    out = []
    for job in briefs:
        if job["kind"] != "dataset" or Status(job["status"]).is_unsuccessful:
            continue
        info = DatasetInfo.of(job["summary"])
        task = info.task or DEFAULT_TASK
        facts = DatasetFacts(images=info.images.get("train"), width=info.width, height=info.height)
        out.append({"id": job["id"], "name": job["name"], "status": job["status"],
                    "classes": len(info.classes), "train": info.images.get("train"),
                    "images": sum(info.images.values()) if info.images else None,
                    "width": info.width, "height": info.height, "channels": info.channels,
                    "task": task, "network_task": task_traits(task).network_task,
                    "recommended": recommended_network(task, facts)})
    return out


def preselect_network(values: dict, datasets: list[dict]) -> None:
    """A new form with no network ticked ticks the chosen dataset's recommended one
    (networks/recommend.py), the network a request without one would train."""
    from trainyard.networks.table import family

    brings_network = values["start"] in ("store", "previous")  # store weights, a previous model: theirs
    if values["networks"] or values["network_source"] or brings_network or not values["datasets"]:
        return
    chosen = [d["recommended"] for d in datasets if d["id"] == values["datasets"][0]]
    values["networks"] = chosen
    values["timm_networks"] = [n for n in chosen if family(n)]  # found by search, not tabled


def default_dataset(datasets: list[dict]) -> list[str]:
    """The dataset a new model most likely trains on: the newest built one, else the newest."""
    built = [d for d in datasets if d["status"] == Status.DONE]
    return [(built or datasets)[0]["id"]] if datasets else []


def next_name(name: str, taken: set[str]) -> str:
    """A clone's proposed name: "digits-lenet" -> "digits-lenet-2" (-3, ... if that is taken)."""
    stem, _, number = name.rpartition("-")
    base, n = (stem, int(number)) if stem and number.isdigit() else (name, 1)
    while True:
        n += 1
        if f"{base}-{n}" not in taken:
            return f"{base}-{n}"


def choices(ctx: Context, briefs: list[dict]) -> dict:
    from trainyard.networks import list_networks  # the torch-free table

    leases = ctx.store.leases()
    return {
        "datasets": dataset_choices(briefs),
        "networks": [{**asdict(n), "recipe": n.recipe_settings(), "recipe_note": recipe_note(n.recipe_settings())}
                     for n in list_networks()],
        "previous": previous_models(ctx, briefs),
        "timm_heads": timm_heads(),
        "gpus": [{"index": g.index, "label": g.label, "job": leases.get(g.resource)}
                 for g in ctx.pools.gpus],
        "solvers": [asdict(s) for s in list_solvers()],
        "lr_policies": [asdict(p) for p in list_lr_policies()],
        "flips": ["none", "lr", "ud", "both"],
        "means": list(MEAN_MODES),
        "precisions": ["auto", "fp32", "bf16", "fp16"],
    }


def recipe_note(recipe: dict) -> str:
    """A network's training recipe in a few words, beside the fields it fills ("" for none)."""
    if not recipe:
        return ""
    lr, augment = recipe.get("lr", {}), recipe.get("augment", {})
    parts = [str(recipe.get("solver", "")).upper()]
    if lr.get("policy"):
        warm = f" after a {lr['warmup_percent']:g}% warm-up" if lr.get("warmup_percent") else ""
        parts.append(f"{lr['policy']} LR from {lr.get('base_lr', '')}{warm}")
    if recipe.get("ema"):
        parts.append(f"EMA {recipe['ema']:g}")
    if augment.get("mosaic"):
        off = augment.get("mosaic_off_percent")
        parts.append(f"mosaic{f' (off for the last {off:g}%)' if off else ''}")
    if any(augment.get(k) for k in ("hue_shift", "saturation_shift", "value_shift")):
        parts.append("HSV")
    if augment.get("scale_jitter"):
        parts.append(f"scale ±{augment['scale_jitter']:g}")
    if augment.get("flip", "none") != "none":
        parts.append("flips")
    return ", ".join(p for p in parts if p)


def timm_heads() -> list[tuple[str, str, str]]:
    """What a timm network found by search can be in the form: (head, words, the task it trains),
    a classifier or a detector's backbone (networks/timm_detection.py), so the form offers only
    the chosen dataset's."""
    from trainyard.networks import timm_detection, timm_networks  # torch-free until a name is resolved

    return [("", "a classifier", timm_networks.TASK),
            *((head, f"the backbone of a {title} ({timm_detection.TASK})", timm_detection.TASK)
              for head, (title, _) in timm_detection.HEADS.items())]
