"""LR policies: DIGITS's percent settings give Caffe's formulas; warm-up; scheduler and resume."""

import io
import math

import pytest
import torch
from torch import nn

from trainyard.training.lr_policies import (
    LRSettings,
    create_scheduler,
    default_lr_settings,
    get_lr_policy,
    list_lr_policies,
    lr_at,
    lr_curve,
)
from trainyard.training.solvers import create_optimizer

TOTAL = 1000  # iterations; DIGITS's scale = 10 iterations per percent


@pytest.mark.parametrize(("settings", "iteration", "expected"), [
    (dict(policy="fixed"), 0, 0.01),
    (dict(policy="fixed"), 999, 0.01),
    # step 33 % -> stepsize ceil(330) = 330
    (dict(policy="step", step_percent=33, gamma=0.1), 329, 0.01),
    (dict(policy="step", step_percent=33, gamma=0.1), 330, 0.001),
    (dict(policy="step", step_percent=33, gamma=0.1), 660, 0.0001),
    (dict(policy="step", step_percent=33, gamma=0.1), 999, 0.00001),
    # multistep at 50 %, 85 % -> iterations 500, 850
    (dict(policy="multistep", steps_percent=[85, 50], gamma=0.5), 499, 0.01),
    (dict(policy="multistep", steps_percent=[85, 50], gamma=0.5), 500, 0.005),
    (dict(policy="multistep", steps_percent=[85, 50], gamma=0.5), 849, 0.005),
    (dict(policy="multistep", steps_percent=[85, 50], gamma=0.5), 850, 0.0025),
    # exp: gamma per percent; 100 iterations = 10 % -> 0.95^10
    (dict(policy="exp", gamma=0.95), 0, 0.01),
    (dict(policy="exp", gamma=0.95), 100, 0.01 * 0.5987369392383789),
    # inv: (1 + 0.1 * 10) ^ -0.5 = 1/sqrt(2)
    (dict(policy="inv", gamma=0.1, power=0.5), 100, 0.01 * 0.7071067811865476),
    # poly: (1 - 0.5)^3
    (dict(policy="poly", power=3), 500, 0.00125),
    (dict(policy="poly", power=3), 1000, 0.0),
    # sigmoid centred at 50 % (iteration 500), gamma 0.1 per percent -> 0.01 per iteration
    (dict(policy="sigmoid", step_percent=50, gamma=0.1), 500, 0.005),
    (dict(policy="sigmoid", step_percent=50, gamma=0.1), 600, 0.01 / (1 + math.e)),
    (dict(policy="sigmoid", step_percent=50, gamma=0.1), 400, 0.01 / (1 + 1 / math.e)),
    # cosine
    (dict(policy="cosine"), 0, 0.01),
    (dict(policy="cosine"), 250, 0.01 * 0.8535533905932737),
    (dict(policy="cosine"), 500, 0.005),
    (dict(policy="cosine"), 1000, 0.0),
])
def test_policy_values(settings, iteration, expected):
    assert lr_at(LRSettings(base_lr=0.01, **settings), iteration, TOTAL) == pytest.approx(expected, abs=1e-15)


def _caffe_lr(policy, base, it, *, gamma=0.0, power=0.0, stepsize=1, stepvalues=(), max_iter=1):
    """Caffe's SGDSolver::GetLearningRate, as written in its source."""
    if policy == "fixed":
        return base
    if policy == "step":
        return base * gamma ** math.floor(it / stepsize)
    if policy == "multistep":
        return base * gamma ** sum(it >= v for v in stepvalues)
    if policy == "exp":
        return base * gamma**it
    if policy == "inv":
        return base * (1 + gamma * it) ** (-power)
    if policy == "poly":
        return base * (1 - it / max_iter) ** power
    if policy == "sigmoid":
        return base * (1 / (1 + math.exp(-gamma * (it - stepsize))))
    raise ValueError(policy)


def _digits_to_caffe(s: LRSettings, max_iter: int) -> dict:
    """How DIGITS's caffe_train.py fills Caffe's solver from its percent-based form."""
    scale = max_iter / 100.0
    p = dict(max_iter=max_iter, power=s.power)
    if s.policy == "step":
        p.update(stepsize=math.ceil(s.step_percent * scale), gamma=s.gamma)
    elif s.policy == "multistep":
        p.update(stepvalues=[math.ceil(v * scale) for v in s.steps_percent], gamma=s.gamma)
    elif s.policy == "exp":
        p.update(gamma=s.gamma ** (1 / scale))
    elif s.policy == "inv":
        p.update(gamma=s.gamma / scale)
    elif s.policy == "sigmoid":
        p.update(gamma=-s.gamma / scale, stepsize=math.ceil(s.step_percent * scale))
    return p


@pytest.mark.parametrize("policy", ["fixed", "step", "multistep", "exp", "inv", "poly", "sigmoid"])
@pytest.mark.parametrize("total", [77, 1000, 12345])
def test_digits_policies_match_caffe_after_digits_conversion(policy, total):
    settings = default_lr_settings(policy, base_lr=0.1)
    caffe = _digits_to_caffe(settings, total)
    for it in sorted({0, 1, total // 3, total // 2, total - 1, *range(0, total, max(1, total // 37))}):
        expected = _caffe_lr(policy, 0.1, it, **caffe)
        assert lr_at(settings, it, total) == pytest.approx(expected, rel=1e-9, abs=1e-15), it


def test_digits_defaults_per_policy():
    assert default_lr_settings("exp").gamma == 0.95
    assert default_lr_settings("multistep").gamma == 0.5
    assert default_lr_settings("poly").power == 3.0
    assert default_lr_settings("sigmoid").step_percent == 50.0
    assert default_lr_settings("exp", gamma=0.9).gamma == 0.9
    assert {p.name for p in list_lr_policies()} == {
        "fixed", "step", "multistep", "exp", "inv", "poly", "sigmoid", "cosine"}
    assert get_lr_policy("step").uses == ("step_percent", "gamma")


def test_unknown_policy_is_rejected():
    with pytest.raises(ValueError, match="valid names"):
        LRSettings(policy="triangular")


def test_linear_warmup():
    s = LRSettings(policy="fixed", base_lr=0.01, warmup_percent=10, warmup_start_factor=0.1)
    assert lr_at(s, 0, TOTAL) == pytest.approx(0.001)
    assert lr_at(s, 50, TOTAL) == pytest.approx(0.0055)
    assert lr_at(s, 100, TOTAL) == pytest.approx(0.01)
    assert lr_at(s, 999, TOTAL) == pytest.approx(0.01)
    cosine = s.model_copy(update={"policy": "cosine"})
    assert lr_at(cosine, 50, TOTAL) == pytest.approx(0.55 * 0.01 * 0.5 * (1 + math.cos(math.pi * 0.05)))


def test_lr_curve_spans_training():
    curve = lr_curve(LRSettings(policy="step", step_percent=25, gamma=0.5, base_lr=1.0), 400, points=5)
    assert curve == [[0.0, 1.0], [25.0, 0.5], [50.0, 0.25], [75.0, 0.125], [100.0, 0.0625]]
    assert len(lr_curve(LRSettings(), 10_000)) == 200
    assert len(lr_curve(LRSettings(), 3)) == 4  # never more points than iterations


def _sgd(settings):
    model = nn.Linear(3, 1)
    return model, create_optimizer("sgd", model.parameters(), lr=settings.base_lr)


@pytest.mark.parametrize("policy", [p.name for p in list_lr_policies()])
def test_scheduler_follows_lr_at_and_resumes_exactly(policy):
    settings = default_lr_settings(policy, base_lr=0.05, warmup_percent=5)
    total = 60
    model, optimizer = _sgd(settings)
    scheduler = create_scheduler(optimizer, settings, total)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(lr_at(settings, 0, total))
    for k in range(1, 25):
        optimizer.step()
        scheduler.step()
        assert optimizer.param_groups[0]["lr"] == pytest.approx(lr_at(settings, k, total))

    buffer = io.BytesIO()
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, buffer)
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)  # checkpoints load with weights_only
    _, optimizer2 = _sgd(settings)
    scheduler2 = create_scheduler(optimizer2, settings, total)
    optimizer2.load_state_dict(state["optimizer"])
    scheduler2.load_state_dict(state["scheduler"])
    for k in range(25, total):
        optimizer.step()
        scheduler.step()
        optimizer2.step()
        scheduler2.step()
        expected = lr_at(settings, k, total)
        assert optimizer2.param_groups[0]["lr"] == pytest.approx(expected)
        assert optimizer2.param_groups[0]["lr"] == optimizer.param_groups[0]["lr"]
