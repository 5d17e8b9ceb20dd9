"""Training that cannot learn, said while it trains: in plain words, with what to try.

A ResNet-18 from scratch on 120 photographs went from a training loss of 1.06 to 0.0017 while
its validation accuracy stayed at exactly 50 % and its validation loss rose; a run at a far too
high learning rate reached a training loss in the thousands: neither said anything (issue 46).
After each validation the loop asks `diagnose` what the metrics so far show; each finding is
logged once as a warning and kept in the job's summary (``diagnosis``), which `jobs show` and
the job page show. A loss that is not a number fails the job at once (loop.py); this module
names what goes wrong slowly. One rule a finding, in ``RULES``; torch-free.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

Points = list[list[float]]  # [[epoch, value], ...]

DIVERGED = 100.0  # the training loss this many times its first reading: diverging
MIN_VALIDATIONS = 3  # chance level or overfitting is judged from this many validations on
CHANCE_MARGIN = 2.0  # percentage points above chance that still read as guessing
NEAR_ZERO_LOSS = 0.05  # a training loss this low: the training images are learnt
RISING = 1.2  # the validation loss this many times its lowest: rising


@dataclass(frozen=True)
class Facts:
    """What a rule reads: the metrics so far, the class count, the base learning rate."""

    metrics: dict[str, Points]
    classes: int
    base_lr: float

    def values(self, name: str) -> list[float]:
        return [value for _, value in self.metrics.get(name, [])]


def _diverging(facts: Facts) -> str | None:
    losses = facts.values("train_loss")
    if len(losses) < 2 or losses[0] <= 0 or losses[-1] < DIVERGED * losses[0]:
        return None
    return (f"the training loss grew from {losses[0]:.3g} to {losses[-1]:.3g}: the training is diverging. "
            f"Try a lower learning rate (now {facts.base_lr:g}; a tenth of it, say)")


def _at_chance(facts: Facts) -> str | None:
    accuracy = facts.values("val_accuracy")  # percent; a detector has none
    if len(accuracy) < MIN_VALIDATIONS or facts.classes < 2:
        return None
    chance = 100.0 / facts.classes
    if max(accuracy) > chance + CHANCE_MARGIN:
        return None
    return (f"validation accuracy has stayed at chance level ({accuracy[-1]:.1f}% with {facts.classes} classes, "
            f"{len(accuracy)} validations): the network predicts one class or guesses. Try fine-tuning from "
            "pretrained weights (--pretrained imagenet), a smaller network, a lower learning rate "
            f"(now {facts.base_lr:g}), or more data")


def _overfitting(facts: Facts) -> str | None:
    train, val = facts.values("train_loss"), facts.metrics.get("val_loss", [])
    if len(val) < MIN_VALIDATIONS or not train or train[-1] > NEAR_ZERO_LOSS:
        return None
    lowest_epoch, lowest = min(val, key=lambda point: point[1])
    if val[-1][1] < RISING * lowest:
        return None
    return (f"the training loss is near zero ({train[-1]:.3g}) while the validation loss rose from "
            f"{lowest:.3g} (epoch {lowest_epoch:g}) to {val[-1][1]:.3g}: the network memorises the training "
            "images. Try more data or augmentation (--flip, --scale-jitter), fine-tuning from pretrained "
            "weights, a smaller network, or fewer epochs (inference reads the best snapshot)")


# name -> rule: a finding's text, or None
RULES: dict[str, Callable[[Facts], str | None]] = {
    "diverging": _diverging,
    "chance": _at_chance,
    "overfitting": _overfitting,
}


@dataclass(frozen=True)
class Finding:
    rule: str  # its name in RULES
    text: str  # what it found, and what to try


def diagnose(metrics: dict[str, Points], classes: int, base_lr: float) -> list[Finding]:
    """What the metrics so far show (empty: nothing to say), in RULES's order."""
    facts = Facts(metrics, classes, base_lr)
    found = ((name, rule(facts)) for name, rule in RULES.items())
    return [Finding(name, text) for name, text in found if text]
