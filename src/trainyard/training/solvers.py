"""Solvers (optimizers) by their DIGITS names: sgd, nesterov, adagrad, rmsprop, adadelta, adam, adamw.

Each entry maps DIGITS/Caffe's solver settings onto torch.optim: the one `momentum` field
becomes SGD's momentum, Adam's beta1 (as Caffe's `momentum`) and AdaDelta's decay rate (as
Caffe's AdaDelta `momentum`). RMSprop uses Caffe's rms_decay of 0.99 and, like Caffe, no momentum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from trainyard.core.registry import Registry, UnknownName

if TYPE_CHECKING:  # torch loads only when an optimizer is built, so the CLI's help stays fast
    import torch

OptimizerFactory = Callable[[Iterable, float, float, float], "torch.optim.Optimizer"]


def _optim():
    from torch import optim

    return optim


@dataclass(frozen=True)
class SolverInfo:
    """A solver as the UI and CLI show it."""

    name: str
    description: str
    uses_momentum: bool  # whether the `momentum` setting changes anything


class UnknownSolver(UnknownName):
    """A solver name that is not registered."""


_SOLVERS: Registry[OptimizerFactory] = Registry("solver", error=UnknownSolver)


def register_solver(name: str, *, description: str, uses_momentum: bool):
    """Decorator: register `factory(params, lr, momentum, weight_decay) -> Optimizer` as `name`."""

    def decorator(factory: OptimizerFactory) -> OptimizerFactory:
        return _SOLVERS.register(name, factory, info=SolverInfo(name, description, uses_momentum))

    return decorator


def list_solvers() -> list[SolverInfo]:
    """All solvers, in the order of DIGITS's drop-down (then ours)."""
    return _SOLVERS.infos()


def solver_names() -> list[str]:
    """The solvers' names, in list order (for CLI help and choices)."""
    return _SOLVERS.names()


def get_solver(name: str) -> SolverInfo:
    """The SolverInfo for `name` (case-insensitive, so DIGITS's 'SGD' works); UnknownSolver if unknown."""
    try:
        return _SOLVERS.info(name.lower())
    except UnknownSolver:
        raise UnknownSolver("solver", name, _SOLVERS.names()) from None  # the name as the user typed it


def create_optimizer(
    name: str, params: Iterable, lr: float, momentum: float = 0.9, weight_decay: float = 0.0
) -> torch.optim.Optimizer:
    """A torch optimizer for solver `name` over `params` (parameters or parameter groups)."""
    info = get_solver(name)
    if lr <= 0:
        raise ValueError(f"learning rate must be positive, got {lr}")
    return _SOLVERS.get(info.name)(params, lr, momentum, weight_decay)


@register_solver("sgd", description="Stochastic gradient descent with momentum.", uses_momentum=True)
def _sgd(params, lr, momentum, weight_decay):
    return _optim().SGD(params, lr=lr, momentum=momentum, weight_decay=weight_decay)


@register_solver("nesterov", description="SGD with Nesterov's accelerated gradient.", uses_momentum=True)
def _nesterov(params, lr, momentum, weight_decay):
    if momentum <= 0:
        raise ValueError("the nesterov solver needs a momentum above 0")
    return _optim().SGD(params, lr=lr, momentum=momentum, nesterov=True, weight_decay=weight_decay)


@register_solver("adagrad", description="AdaGrad: per-parameter rates from summed squared gradients.",
                 uses_momentum=False)
def _adagrad(params, lr, momentum, weight_decay):
    return _optim().Adagrad(params, lr=lr, weight_decay=weight_decay)


@register_solver("rmsprop", description="RMSprop: rates from a running mean of squared gradients.",
                 uses_momentum=False)
def _rmsprop(params, lr, momentum, weight_decay):
    return _optim().RMSprop(params, lr=lr, alpha=0.99, eps=1e-8, weight_decay=weight_decay)


@register_solver("adadelta", description="AdaDelta: momentum is the decay rate of its running averages.",
                 uses_momentum=True)
def _adadelta(params, lr, momentum, weight_decay):
    return _optim().Adadelta(params, lr=lr, rho=momentum, eps=1e-6, weight_decay=weight_decay)


@register_solver("adam", description="Adam: momentum is beta1 (beta2 = 0.999).", uses_momentum=True)
def _adam(params, lr, momentum, weight_decay):
    return _optim().Adam(params, lr=lr, betas=(momentum, 0.999), eps=1e-8, weight_decay=weight_decay)


@register_solver("adamw", description="AdamW: Adam with decoupled weight decay.", uses_momentum=True)
def _adamw(params, lr, momentum, weight_decay):
    return _optim().AdamW(params, lr=lr, betas=(momentum, 0.999), eps=1e-8, weight_decay=weight_decay)
