"""An elastic cluster job on fewer workers than it asked for: the same run, by gradient accumulation.

A job with ``min_workers`` (``--elastic`` / ``--min-workers K``) that loses a node goes on from
its last checkpoint on the workers left, and grows back at an epoch boundary when nodes return
(cluster/elastic.py chooses the sizes). Each size trains the same global batch: on ``W`` of
its ``N`` workers a rank accumulates ``N / W`` times the spec's batches per optimizer step
(sizes are divisors of ``N``), so an optimizer step averages the gradients of exactly the images
the full job's step would (the data order is a function of the seed and epoch alone, data.py),
and the number of steps, hence the learning-rate schedule by samples seen, is unchanged.
Without batch norm, whose statistics are per rank, the losses equal the full job's to float
rounding. A linear-scaled learning rate (``scale_lr``) keeps the full job's scale.
"""

from __future__ import annotations

from trainyard.training.spec import ModelSpec
from trainyard.training.state import TrainingError


def fit(spec: ModelSpec, world_size: int) -> ModelSpec:
    """The spec a rank of ``world_size`` trains: ``spec`` itself unless this is an elastic job
    on fewer workers than it asked for."""
    full = spec.cluster.workers if spec.cluster is not None else 0
    if spec.min_workers is None or world_size == full or not full:
        return spec
    if full % world_size:
        raise TrainingError(f"an elastic job of {full} workers cannot keep its global batch on {world_size} "
                            "(the launcher places a divisor of its size)")
    factor = full // world_size
    lr = spec.lr.model_copy(update={"base_lr": spec.lr.base_lr * factor}) if spec.scale_lr else spec.lr
    return spec.model_copy(update={"processes": world_size, "accumulation": spec.accumulation * factor, "lr": lr})
