"""The catalogue comes from torchvision's weight enums and timm's pretrained configs."""

from __future__ import annotations

from torchvision.models import ResNet18_Weights

from trainyard.weights import catalogue


def test_torchvision_entries_come_from_the_weight_enums():
    entry = catalogue.find_entry("resnet18.imagenet")
    default = ResNet18_Weights.DEFAULT
    assert entry.name == f"resnet18.{default.name.lower()}" and entry.network == "resnet18"
    assert entry.filename == default.url.rsplit("/", 1)[-1] and entry.sha256 == entry.filename.split("-")[1][:8]
    assert entry.accuracy["ImageNet-1K acc@1"] == default.meta["_metrics"]["ImageNet-1K"]["acc@1"]
    assert entry.mean == (0.485, 0.456, 0.406) and entry.input_size == (3, 224, 224)
    assert entry.size_mb == default.meta["_file_size"]
    names = {e.name for e in catalogue.catalogue("torchvision")}
    assert {"resnet50.imagenet1k_v1", "resnet50.imagenet1k_v2"} <= names  # every enum member
    assert all(e.network != "lenet" for e in catalogue.catalogue("torchvision"))  # ours have none


def test_timm_entries_come_from_the_pretrained_configs():
    import timm

    entries = {e.name: e for e in catalogue.catalogue("timm")}
    assert len(entries) > 1000
    assert {f"timm:{n}" for n in timm.list_pretrained("resnet10t*")} <= set(entries)
    tiny = entries["timm:test_resnet.r160_in1k"]
    assert tiny.network == "timm:test_resnet" and tiny.input_size == (3, 160, 160)
    assert tiny.mean == (0.5, 0.5, 0.5)
    assert catalogue.find_entry("timm:test_resnet.imagenet") == tiny  # the default tag


def test_download_addresses_follow_the_mirror_and_hf_endpoint(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.local")
    tv = catalogue.find_entry("resnet18.imagenet")
    assert catalogue.download_url(tv, "http://mirror.local/w/") == f"http://mirror.local/w/{tv.filename}"
    assert catalogue.download_url(tv).startswith("https://download.pytorch.org/models/")
    hub = catalogue.find_entry("timm:test_resnet.r160_in1k")
    assert catalogue.download_url(hub) == "http://hub.local/timm/test_resnet.r160_in1k/resolve/main/model.safetensors"
