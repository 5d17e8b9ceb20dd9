"""Solvers: every registered one builds a torch optimizer that trains; DIGITS's mappings."""

import pytest
import torch
from torch import nn

from trainyard.training.solvers import create_optimizer, get_solver, list_solvers

NAMES = [info.name for info in list_solvers()]


def test_digits_solver_names():
    assert NAMES == ["sgd", "nesterov", "adagrad", "rmsprop", "adadelta", "adam", "adamw"]


@pytest.mark.parametrize("name", NAMES)
def test_solver_takes_a_step_that_lowers_the_loss(name):
    torch.manual_seed(0)
    model = nn.Linear(4, 1)
    x, y = torch.randn(32, 4), torch.randn(32, 1)
    lr = 1.0 if name == "adadelta" else 0.01
    optimizer = create_optimizer(name, model.parameters(), lr=lr, momentum=0.9, weight_decay=1e-4)
    assert isinstance(optimizer, torch.optim.Optimizer)
    losses = []
    for _ in range(5):
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert optimizer.param_groups[0]["weight_decay"] == 1e-4


def test_momentum_mappings():
    params = [nn.Parameter(torch.zeros(2))]
    assert create_optimizer("sgd", params, 0.1, momentum=0.8).defaults["momentum"] == 0.8
    nesterov = create_optimizer("nesterov", params, 0.1)
    assert nesterov.defaults["nesterov"] is True and nesterov.defaults["momentum"] == 0.9
    assert create_optimizer("adam", params, 0.1, momentum=0.85).defaults["betas"] == (0.85, 0.999)
    assert create_optimizer("adamw", params, 0.1).defaults["betas"] == (0.9, 0.999)
    rmsprop = create_optimizer("rmsprop", params, 0.1)
    assert rmsprop.defaults["alpha"] == 0.99 and rmsprop.defaults["momentum"] == 0
    assert create_optimizer("adadelta", params, 1.0, momentum=0.95).defaults["rho"] == 0.95
    assert isinstance(create_optimizer("ADAGRAD", params, 0.1), torch.optim.Adagrad)  # DIGITS spelling
    assert get_solver("adagrad").uses_momentum is False


def test_unknown_solver_lists_names():
    with pytest.raises(ValueError, match="sgd, nesterov"):
        create_optimizer("lbfgs", [nn.Parameter(torch.zeros(1))], 0.1)


def test_nesterov_needs_momentum():
    with pytest.raises(ValueError, match="momentum"):
        create_optimizer("nesterov", [nn.Parameter(torch.zeros(1))], 0.1, momentum=0.0)
