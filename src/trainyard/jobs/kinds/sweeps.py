"""What a sweep trains: a grid of lists, or N combinations drawn from ranges (``--trials N``).

Lists (``--lr 0.1,0.01``) make a grid, one job per combination, as DIGITS did. Ranges
(``--lr 1e-4..1e-1``, log-uniform; ``--batch-size 16..128``, whole numbers) need ``--trials N``:
N combinations are drawn with Optuna's sampler through its ask interface (each trial is a job;
a list beside a range is one more choice to draw from). The draws are seeded by the run's seed,
so the same request draws the same combinations.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from trainyard.core.errors import InvalidInput
from trainyard.jobs.store.store import Job, Store
from trainyard.training.setting_defaults import EARLY_STOP_MIN_EPOCHS

MAX_TRIALS = 200  # jobs one request may draw
# Epochs a run of an early-stopped sweep trains before it is judged at all (jobs/runs/early_stop.py;
# written once, in training/setting_defaults.py).
DEFAULT_MIN_EPOCHS = EARLY_STOP_MIN_EPOCHS.default


def parse_range(text: str, kind: type = float, what: str = "value") -> tuple | None:
    """``"1e-4..1e-1"`` -> (0.0001, 0.1); None when ``text`` is not a range."""
    if ".." not in (text or ""):
        return None
    low, _, high = text.partition("..")
    try:
        bounds = (kind(low.strip()), kind(high.strip()))
    except ValueError:
        raise InvalidInput(f"{what} {text!r} should be a range LOW..HIGH, e.g. "
                           f"{'16..128' if kind is int else '1e-4..1e-1'}") from None
    return bounds


def check_ranges(lr_range, batch_size_range, trials: int | None) -> None:
    """The one-line errors for ranges and --trials that do not fit together."""
    ranges = [r for r in (lr_range, batch_size_range) if r is not None]
    if ranges and not trials:
        raise InvalidInput("a range (lr 1e-4..1e-1, batch size 16..128) draws combinations: "
                           "say how many with trials (--trials N)")
    if trials and not ranges:
        raise InvalidInput("trials draws combinations from ranges: give the learning rate or batch size "
                           "as LOW..HIGH (e.g. --lr 1e-4..1e-1), or drop trials for a grid of lists")
    if lr_range is not None and not 0 < lr_range[0] < lr_range[1]:
        raise InvalidInput(f"learning-rate range {lr_range[0]:g}..{lr_range[1]:g} should go from a "
                           "positive low to a higher high (drawn log-uniformly)")
    if batch_size_range is not None and not 1 <= batch_size_range[0] < batch_size_range[1]:
        raise InvalidInput(f"batch-size range {batch_size_range[0]}..{batch_size_range[1]} should go "
                           "from 1 or more to a higher high")


def sweep_size(datasets: list, networks: list, lrs: list, batches: list, trials: int | None) -> int:
    """How many jobs `combinations` makes, counted without drawing or building any."""
    grid = trials or max(1, len(lrs)) * max(1, len(batches))
    return len(datasets) * max(1, len(networks)) * grid


def check_size(size: int, cap: int) -> None:
    """The one-line 422 of a sweep larger than the cap (TRAINYARD_MAX_SWEEP_JOBS)."""
    if size > cap:
        raise InvalidInput(f"this request makes {size} jobs, more than the cap of {cap} per request "
                           "(TRAINYARD_MAX_SWEEP_JOBS): give fewer datasets, networks, learning rates, "
                           "batch sizes or trials")


def combinations(datasets: list[str], networks: list, lrs: list, batches: list, *, lr_range=None,
                 batch_size_range=None, trials: int | None = None, seed: int | None = None) -> Iterator[tuple]:
    """(dataset, network, lr, batch size) for each job; None in a list means "the default"."""
    networks, lrs, batches = networks or [None], lrs or [None], batches or [None]
    if not trials:
        yield from itertools.product(datasets, networks, lrs, batches)
        return
    draws = draw(trials, lrs, batches, lr_range, batch_size_range, seed)
    for dataset, network in itertools.product(datasets, networks):
        for lr, batch in draws:
            yield dataset, network, lr, batch


def draw(trials: int, lrs: list, batches: list, lr_range, batch_size_range, seed: int | None) -> list[tuple]:
    """``trials`` (lr, batch size) pairs from Optuna's random sampler, asked for one by one."""
    import optuna  # here: only a sweep with trials pays for importing it

    optuna.logging.set_verbosity(optuna.logging.WARNING)  # no "A new study created" on stderr
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    pairs = []
    for _ in range(trials):
        trial = study.ask()
        if lr_range is not None:
            lr = _round(trial.suggest_float("lr", lr_range[0], lr_range[1], log=True))
        else:
            lr = trial.suggest_categorical("lr", lrs) if len(lrs) > 1 else lrs[0]
        if batch_size_range is not None:
            batch = _batch_size(trial, *batch_size_range)
        else:
            batch = trial.suggest_categorical("batch_size", batches) if len(batches) > 1 else batches[0]
        pairs.append((lr, batch))
    return pairs


def _batch_size(trial, low: int, high: int) -> int:
    """A batch size in low..high: a power of two where the range holds two or more (what
    kernels and memory favour, and what a person compares: 16, 32, 64, not 35, 40, 111),
    otherwise an integer drawn log-uniformly (as many below the geometric middle as above)."""
    powers = [1 << k for k in range(high.bit_length()) if low <= 1 << k <= high]
    if len(powers) >= 2:
        return int(trial.suggest_categorical("batch_size", powers))
    return int(trial.suggest_int("batch_size", low, high, log=True))


def _round(value: float) -> float:
    """Three significant digits: 0.00123 reads better in a job name than 0.0012345678, and a
    difference past the third digit does not change how a run trains."""
    return float(f"{value:.3g}")


def mark_early_stop(store: Store, jobs: list[Job], min_epochs: float = DEFAULT_MIN_EPOCHS) -> list[Job]:
    """Mark a new sweep's jobs for early stopping (their watchers read the mark), judged from
    ``min_epochs`` on."""
    mark = {"early_stop": True, "early_stop_min_epochs": min_epochs}
    return [store.update_job(j.id, summary={**(j.summary or {}), **mark}) or j for j in jobs]
