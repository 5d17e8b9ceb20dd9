"""Learning-rate policies as DIGITS defines them: Caffe's formulas, with steps in percent of training.

DIGITS's form takes step sizes and step points in percent of all iterations and rescales the
rate constants so one setting means the same thing for any training length. With
scale = total_iterations / 100 (iterations per percent), DIGITS sets Caffe's solver to:

    step       stepsize = ceil(step% * scale)           lr = base * gamma ^ floor(iter / stepsize)
    multistep  stepvalue_i = ceil(value_i% * scale)     lr = base * gamma ^ (step points passed)
    exp        gamma_caffe = gamma ^ (1 / scale)        lr = base * gamma ^ (iter / scale)
    inv        gamma_caffe = gamma / scale              lr = base * (1 + gamma * iter / scale) ^ -power
    poly                                                lr = base * (1 - iter / total) ^ power
    sigmoid    gamma_caffe = -gamma / scale, stepsize = ceil(step% * scale)
               lr = base / (1 + exp(gamma / scale * (iter - stepsize)))

so gamma in exp/inv/sigmoid is "per percent of training". We add `cosine`
(base * 0.5 * (1 + cos(pi * iter / total))) and an optional linear warm-up that multiplies any
policy by a factor rising from `warmup_start_factor` to 1 over the first `warmup_percent`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import ConfigDict, field_validator

from trainyard.core.registry import Registry, UnknownName
from trainyard.core.stored import SpecModel
from trainyard.training.setting_defaults import setting

if TYPE_CHECKING:  # torch loads only when a scheduler is built, so the CLI's help stays fast
    import torch

PolicyFn = Callable[["LRSettings", int, int], float]  # (settings, iteration, total) -> factor


@dataclass(frozen=True)
class LRPolicyInfo:
    """A policy as the UI shows it: which settings it reads, and DIGITS's defaults for them."""

    name: str
    description: str
    uses: tuple[str, ...] = ()  # LRSettings fields this policy reads (besides base_lr, warm-up)
    defaults: dict = field(default_factory=dict)  # DIGITS's form defaults where they differ


class UnknownLRPolicy(UnknownName):
    """A learning-rate policy name that is not registered."""


_POLICIES: Registry[PolicyFn] = Registry("lr policy", error=UnknownLRPolicy)


def register_lr_policy(name: str, *, description: str, uses: tuple[str, ...] = (), defaults=None):
    """Decorator: register `fn(settings, iteration, total) -> factor of base_lr` as `name`."""

    def decorator(fn: PolicyFn) -> PolicyFn:
        return _POLICIES.register(name, fn, info=LRPolicyInfo(name, description, tuple(uses), dict(defaults or {})))

    return decorator


def list_lr_policies() -> list[LRPolicyInfo]:
    """All learning-rate policies, DIGITS's first."""
    return _POLICIES.infos()


def lr_policy_names() -> list[str]:
    """The policies' names, in list order (for CLI help and choices)."""
    return _POLICIES.names()


def get_lr_policy(name: str) -> LRPolicyInfo:
    """The LRPolicyInfo for `name`; UnknownLRPolicy (a ValueError) listing the valid names if unknown."""
    return _POLICIES.info(name)


class LRSettings(SpecModel):
    """The learning-rate panel: a policy, its parameters (percentages of training) and warm-up."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    # Defaults and descriptions: training/setting_defaults.py (the CLI's options read them too).
    policy: str = setting("lr.policy")
    base_lr: float = setting("lr.base_lr", gt=0)
    step_percent: float = setting("lr.step_percent", gt=0)
    steps_percent: list[float] = setting("lr.steps_percent")
    gamma: float = setting("lr.gamma", ge=0)
    power: float = setting("lr.power", ge=0)
    warmup_percent: float = setting("lr.warmup_percent", ge=0, le=100)
    warmup_start_factor: float = setting("lr.warmup_start_factor", ge=0, le=1)

    @field_validator("policy")
    @classmethod
    def _known_policy(cls, value: str) -> str:
        return get_lr_policy(value).name

    @field_validator("steps_percent")
    @classmethod
    def _sorted_steps(cls, value: list[float]) -> list[float]:
        return sorted(value)


def default_lr_settings(policy: str, **overrides) -> LRSettings:
    """LRSettings for `policy` with DIGITS's defaults for it (e.g. exp: gamma 0.95), then `overrides`."""
    return LRSettings(policy=policy, **{**get_lr_policy(policy).defaults, **overrides})


def lr_factor(settings: LRSettings, iteration: int, total_iterations: int) -> float:
    """The multiplier of base_lr at `iteration` (0-based) of `total_iterations`, warm-up included."""
    if total_iterations < 1:
        raise ValueError(f"total_iterations must be >= 1, got {total_iterations}")
    factor = _POLICIES.get(settings.policy)(settings, iteration, total_iterations)
    warmup = settings.warmup_percent * total_iterations / 100.0
    if iteration < warmup:
        start = settings.warmup_start_factor
        factor *= start + (1.0 - start) * iteration / warmup
    return factor


def lr_at(settings: LRSettings, iteration: int, total_iterations: int) -> float:
    """The learning rate at `iteration` (0-based, before that iteration's update)."""
    return settings.base_lr * lr_factor(settings, iteration, total_iterations)


def lr_curve(settings: LRSettings, total_iterations: int, points: int = 200) -> list[list[float]]:
    """[[percent of training, lr], ...] from 0 % to 100 %, for the preview chart."""
    points = max(2, min(points, total_iterations + 1))
    its = sorted({round(k * total_iterations / (points - 1)) for k in range(points)})
    return [[100.0 * it / total_iterations, lr_at(settings, it, total_iterations)] for it in its]


def create_scheduler(
    optimizer: torch.optim.Optimizer, settings: LRSettings, total_iterations: int
) -> torch.optim.lr_scheduler.LambdaLR:
    """A LambdaLR to step once per iteration; it scales each group's initial lr by lr_factor.

    Create the optimizer with lr=settings.base_lr so the scheduler's lr equals lr_at(). The
    lambda is a plain closure, so state_dict() holds only numbers (safe for weights_only loads)
    and a scheduler rebuilt from the same settings resumes exactly after load_state_dict().
    """
    lr_factor(settings, 0, total_iterations)  # validate before the scheduler touches the optimizer

    def factor(iteration: int) -> float:
        return lr_factor(settings, iteration, total_iterations)

    from torch.optim.lr_scheduler import LambdaLR

    return LambdaLR(optimizer, factor)


def _per_percent(total: int) -> float:
    return total / 100.0  # DIGITS's `scale`: iterations per percent of training


def _iterations(percent: float, total: int) -> int:
    return max(1, math.ceil(percent * _per_percent(total)))  # DIGITS rounds step points up


@register_lr_policy("fixed", description="Constant learning rate.")
def _fixed(s: LRSettings, it: int, total: int) -> float:
    return 1.0


@register_lr_policy("step", description="Multiply by gamma every step_percent of training.",
                    uses=("step_percent", "gamma"), defaults={"step_percent": 33.0, "gamma": 0.1})
def _step(s: LRSettings, it: int, total: int) -> float:
    return s.gamma ** (it // _iterations(s.step_percent, total))


@register_lr_policy("multistep", description="Multiply by gamma at each of steps_percent.",
                    uses=("steps_percent", "gamma"), defaults={"steps_percent": [50.0, 85.0], "gamma": 0.5})
def _multistep(s: LRSettings, it: int, total: int) -> float:
    passed = sum(it >= _iterations(p, total) for p in s.steps_percent)
    return s.gamma**passed


@register_lr_policy("exp", description="Multiply by gamma for every percent of training.",
                    uses=("gamma",), defaults={"gamma": 0.95})
def _exp(s: LRSettings, it: int, total: int) -> float:
    return s.gamma ** (it / _per_percent(total))


@register_lr_policy("inv", description="(1 + gamma * percent) ^ -power.",
                    uses=("gamma", "power"), defaults={"gamma": 0.1, "power": 0.5})
def _inv(s: LRSettings, it: int, total: int) -> float:
    return (1.0 + s.gamma * it / _per_percent(total)) ** (-s.power)


@register_lr_policy("poly", description="(1 - fraction done) ^ power: reaches 0 at the end.",
                    uses=("power",), defaults={"power": 3.0})
def _poly(s: LRSettings, it: int, total: int) -> float:
    return max(0.0, 1.0 - it / total) ** s.power


@register_lr_policy("sigmoid", description="Smooth drop centred at step_percent; gamma sets its steepness.",
                    uses=("step_percent", "gamma"), defaults={"step_percent": 50.0, "gamma": 0.1})
def _sigmoid(s: LRSettings, it: int, total: int) -> float:
    z = s.gamma / _per_percent(total) * (it - _iterations(s.step_percent, total))
    # 1 / (1 + e^z), written so that neither branch overflows for large |z|
    if z > 0:
        e = math.exp(-z)
        return e / (1.0 + e)
    return 1.0 / (1.0 + math.exp(z))


@register_lr_policy("cosine", description="Half a cosine from base_lr down to 0 over training.")
def _cosine(s: LRSettings, it: int, total: int) -> float:
    return 0.5 * (1.0 + math.cos(math.pi * min(it / total, 1.0)))
