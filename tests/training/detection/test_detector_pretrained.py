"""Pretrained detectors: the store's ImageNet weights of a detector's backbone network start its
backbone (``--pretrained imagenet`` names the backbone's entry; the store is faked with a weights
file of our own, there is no internet), and a previous detection job fine-tunes the whole detector
with another class count (new classification heads, every other tensor kept)."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import save_file

from trainyard.artifact.checkpoint import load_checkpoint
from trainyard.core.errors import InvalidInput, NotFound
from trainyard.core.events import EventWriter
from trainyard.core.paths import checkpoint_name
from trainyard.jobs.kinds.pretrained import resolve_pretrained
from trainyard.networks import create_network
from trainyard.training.spec import ModelSpec
from trainyard.training.starting_network import build_network
from trainyard.weights.store import WeightsStore

SIZE = 96


@pytest.fixture
def store_ctx(ctx, settings):
    return ctx, WeightsStore.from_settings(settings)


def _spec(tmp_path, network: str, **fields) -> ModelSpec:
    return ModelSpec(dataset_id="d", dataset_dir=str(tmp_path), network=network, task="detection", **fields)


def _build(spec: ModelSpec, tmp_path, num_classes: int) -> torch.nn.Module:
    net, _, _ = build_network(spec, None, num_classes, 3, SIZE, (SIZE, SIZE), EventWriter(tmp_path))
    return net


def test_imagenet_means_the_backbone_networks_entry(store_ctx):
    ctx, _ = store_ctx
    imagenet = resolve_pretrained(ctx, "imagenet")
    with pytest.raises(NotFound, match=r"trainyard weights pull resnet50\.imagenet"):
        imagenet.spec_fields("fasterrcnn_resnet50_fpn")  # a detector: its backbone's published entry
    with pytest.raises(InvalidInput, match="reduced-tail MobileNet V3.*--pretrained JOB"):
        imagenet.spec_fields("ssdlite320_mobilenet_v3_large")
    with pytest.raises(InvalidInput, match=r"are for network resnet18, not retinanet_resnet50_fpn \(whose "
                                           r"backbone is resnet50\)"):
        resolve_pretrained(ctx, "resnet18.imagenet").spec_fields("retinanet_resnet50_fpn")


@pytest.mark.slow
def test_store_weights_of_the_backbone_network_start_the_detectors_backbone(store_ctx, tmp_path):
    ctx, store = store_ctx
    torch.manual_seed(3)
    classifier = create_network("mobilenet_v3", 1000, 3, 224)
    source = tmp_path / "mobilenet.safetensors"
    save_file({k: v.contiguous() for k, v in classifier.state_dict().items()}, str(source))
    store.import_file("mobilenet_v3.mine", source, network="mobilenet_v3")
    fields = resolve_pretrained(ctx, "mobilenet_v3.mine").spec_fields("fasterrcnn_mobilenet_v3_large_fpn")
    assert fields["pretrained_entry"] == "mobilenet_v3.mine" and fields["input_norm"] is None
    net = _build(_spec(tmp_path, "fasterrcnn_mobilenet_v3_large_fpn", **fields), tmp_path, 2)
    body = net.backbone.body.state_dict()
    features = classifier.state_dict()
    for name, tensor in body.items():  # "3.block.0.0.weight" here is "features.3.block.0.0.weight" there
        assert torch.equal(tensor, features[f"features.{name}"]), name
    fresh = _build(_spec(tmp_path, "fasterrcnn_mobilenet_v3_large_fpn"), tmp_path, 2)
    assert not torch.equal(fresh.backbone.body.state_dict()["0.0.weight"], body["0.0.weight"])


@pytest.mark.slow
def test_a_detection_job_fine_tunes_the_whole_detector_with_new_heads(detector, tmp_path):
    checkpoint = detector.ctx.manager.folder(detector.model_id).checkpoints / checkpoint_name(detector_epochs(detector))
    before = load_checkpoint(checkpoint)["model"]
    net = _build(_spec(tmp_path, "ssdlite320_mobilenet_v3_large", pretrained=str(checkpoint)), tmp_path, 3)
    after = net.state_dict()
    heads = [k for k in after if k.startswith("head.classification_head")]
    kept = [k for k in after if k not in heads]
    # a new class count: the head's class outputs change shape (its depthwise layers need not)
    assert heads and any(after[k].shape != before[k].shape for k in heads)
    assert all(torch.equal(after[k], before[k]) for k in kept)  # backbone, extra blocks, box regression


def detector_epochs(detector) -> int:
    from tests.detection_model import EPOCHS

    return EPOCHS


@pytest.mark.slow
def test_imagenet_starts_a_timm_backboned_detector_from_the_store_alone(store_ctx, tmp_path):
    """``--pretrained imagenet`` of ``retinanet:timm:test_resnet`` is timm's published entry of
    ``timm:test_resnet``: refused until its file is in the store (nothing is downloaded), then
    copied into the detector's timm backbone, tensor for tensor."""
    ctx, store = store_ctx
    network, imagenet = "retinanet:timm:test_resnet", resolve_pretrained(ctx, "imagenet")
    with pytest.raises(NotFound, match=r"timm:test_resnet\.r160_in1k are not in the store: run `trainyard "
                                       r"weights pull"):
        imagenet.spec_fields(network)
    torch.manual_seed(5)
    classifier = create_network("timm:test_resnet", 1000, 3, 160)
    source = tmp_path / "model.safetensors"
    save_file({k: v.contiguous() for k, v in classifier.state_dict().items()}, str(source))
    store.import_file("timm:test_resnet.r160_in1k", source)  # as `trainyard weights import` does
    fields = imagenet.spec_fields(network)
    assert fields["pretrained_entry"] == "timm:test_resnet.r160_in1k" and fields["input_norm"] is None
    net = _build(_spec(tmp_path, network, **fields), tmp_path, 2)
    weights = classifier.state_dict()
    body = net.backbone.body.state_dict()
    assert body and all(torch.equal(tensor, weights[name]) for name, tensor in body.items())
    fresh = _build(_spec(tmp_path, network), tmp_path, 2)
    assert not torch.equal(fresh.backbone.body.state_dict()["conv1.0.weight"], body["conv1.0.weight"])
