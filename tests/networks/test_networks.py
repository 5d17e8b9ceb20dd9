"""Standard networks: registry, shapes at their sizes, channels, aux outputs, loss, sources."""

import pytest
import torch
from torch import nn

from trainyard.networks import (
    UnknownNetwork,
    check_network,
    create_network,
    get_network,
    list_networks,
    load_network_source,
    network_source,
    training_loss,
)

NAMES = [info.name for info in list_networks() if info.task == "classification"]  # detectors: tests/training/detection
DIGITS_THREE = ["lenet", "alexnet", "googlenet"]
HEAVY = {"vgg16", "vit_b_16", "alexnet"}  # > 50M parameters: seconds to build on a CPU


def _param(name, *more):
    marks = [pytest.mark.slow] if name in HEAVY else []
    return pytest.param(name, *more, marks=marks, id="-".join(map(str, (name, *more))))


def input_size(name):
    """DIGITS's three at their intended size; torchvision ones at a small size they support."""
    info = get_network(name)
    return info.image_size if name in DIGITS_THREE else max(info.min_image_size, 32)


def test_registry_has_the_stable_names():
    expected = {"lenet", "alexnet", "googlenet", "resnet18", "resnet50", "vgg16",
                "mobilenet_v3", "efficientnet_b0", "convnext_tiny", "vit_b_16"}
    assert expected <= set(NAMES)
    assert NAMES[:3] == DIGITS_THREE
    assert get_network("googlenet").batch_size == 32
    assert get_network("alexnet").batch_size == 128
    assert get_network("lenet").image_size == 28


def test_unknown_network_lists_valid_names():
    with pytest.raises(UnknownNetwork, match="lenet") as err:
        create_network("lenet5", 10)
    assert isinstance(err.value, ValueError)


# 1-channel torchvision models (their replaced first conv) run in the network_source test.
@pytest.mark.parametrize(("name", "in_channels"), [
    *[_param(n, c) for n in DIGITS_THREE for c in (1, 3)],
    *[_param(n, 3) for n in NAMES if n not in DIGITS_THREE],
])
def test_forward_shape(name, in_channels):
    size = input_size(name)
    model = create_network(name, num_classes=7, in_channels=in_channels, image_size=size).eval()
    with torch.no_grad():
        out = model(torch.rand(2, in_channels, size, size))
    assert out.shape == (2, 7)
    assert torch.isfinite(out).all()


@pytest.mark.parametrize("size", [28, 32, 64])
def test_lenet_adapts_to_other_sizes(size):
    model = create_network("lenet", 3, 1).eval()
    assert model(torch.rand(2, 1, size, size)).shape == (2, 3)


def test_alexnet_runs_at_224_too():
    model = create_network("alexnet", 4).eval()
    with torch.no_grad():
        assert model(torch.rand(1, 3, 224, 224)).shape == (1, 4)


def test_lenet_matches_digits_parameter_count():
    # DIGITS's LeNet for 10 classes: 520 + 25050 + 400500 + 5010 weights and biases.
    model = create_network("lenet", 10, 1)
    assert sum(p.numel() for p in model.parameters()) == 431080


def test_googlenet_aux_outputs_in_training_mode_only():
    model = create_network("googlenet", 5)
    x = torch.rand(2, 3, 96, 96)  # the forward-shape test covers 224
    outputs = model.train()(x)
    assert isinstance(outputs, tuple) and len(outputs) == 3
    assert all(o.shape == (2, 5) for o in outputs)
    with torch.no_grad():
        assert model.eval()(x).shape == (2, 5)


def test_googlenet_branches_are_named():
    model = create_network("googlenet", 5)
    names = {n for n, _ in model.named_children()}
    assert {"inception3a", "inception5b", "aux1", "aux2"} <= names
    assert {n for n, _ in model.inception3a.named_children()} == {"branch1", "branch2", "branch3", "branch4"}


def test_training_loss_weights_aux_heads():
    torch.manual_seed(0)
    targets = torch.tensor([0, 1, 2])
    main, aux1, aux2 = torch.randn(3, 3, 4).unbind(0)
    ce = nn.functional.cross_entropy
    model = create_network("lenet", 4, 1)  # no aux_loss_weights: defaults to 0.3 each
    expected = ce(main, targets) + 0.3 * ce(aux1, targets) + 0.3 * ce(aux2, targets)
    assert torch.allclose(training_loss((main, aux1, aux2), targets, model), expected)
    assert torch.allclose(training_loss(main, targets, model), ce(main, targets))
    model.aux_loss_weights = (1.0, 0.5)
    expected = ce(main, targets) + 1.0 * ce(aux1, targets) + 0.5 * ce(aux2, targets)
    assert torch.allclose(training_loss([main, aux1, aux2], targets, model), expected)


def test_training_loss_with_googlenet_backpropagates():
    model = create_network("googlenet", 3).train()
    outputs = model(torch.rand(2, 3, 64, 64))
    assert model.aux_loss_weights == (0.3, 0.3)
    loss = training_loss(outputs, torch.tensor([0, 2]), model)
    loss.backward()
    assert model.aux1.fc2.weight.grad is not None and model.fc.weight.grad is not None


def test_training_loss_sees_through_data_parallel():
    model = create_network("lenet", 3, 1)
    model.aux_loss_weights = (0.0,)
    main, aux = torch.randn(2, 4, 3).unbind(0)
    targets = torch.tensor([0, 1, 2, 0])
    loss = training_loss((main, aux), targets, nn.DataParallel(model))
    assert torch.allclose(loss, nn.functional.cross_entropy(main, targets))


def test_vit_needs_a_multiple_of_16():
    with pytest.raises(ValueError, match="multiple of 16"):
        create_network("vit_b_16", 3, image_size=100)


@pytest.mark.parametrize("name", [_param(n) for n in NAMES])
def test_network_source_is_an_equivalent_custom_network(name):
    size = max(get_network(name).min_image_size, 32)  # small: the forward test covers full size
    source = network_source(name)
    assert "def build(" in source
    model = check_network(source, num_classes=6, in_channels=1, image_size=size)
    with torch.device("meta"):  # shapes only: skips the slow random initialisation
        reference = create_network(name, 6, 1, size)
    assert [p.shape for p in model.parameters()] == [p.shape for p in reference.parameters()]


@pytest.mark.parametrize("name", DIGITS_THREE)
def test_digits_sources_import_only_torch(name):
    imports = [line for line in network_source(name).splitlines() if line.startswith(("import ", "from "))]
    assert imports and all(line.split()[1].split(".")[0] == "torch" for line in imports)
    build = load_network_source(network_source(name))
    assert isinstance(build(4, 3, get_network(name).image_size), nn.Module)
