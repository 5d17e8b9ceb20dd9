"""What pretrained weights exist, read from torchvision's weight enums and timm's pretrained
configs (never from a hand-written table).

An entry is named ``<network>.<tag>``: ``resnet18.imagenet1k_v1`` for a torchvision weight
enum member of a standard network (``resnet18.imagenet`` is its default), and
``timm:<model>.<tag>`` for timm's (``timm:resnet10t.c3_in1k``). Each says where its file comes
from, the hash to check, the published accuracy where the library gives one, and the input size
and normalisation the weights expect.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from functools import cache

from trainyard.core import environment
from trainyard.core.errors import NotFound
from trainyard.networks import list_networks

IMAGENET_TAG = "imagenet"  # the network's published default weights
TORCHVISION_MIRROR = "https://download.pytorch.org/models"
HF_DEFAULT_ENDPOINT = "https://huggingface.co"
# torch.hub's convention: the file name ends in the first hex digits of the file's SHA-256.
_HASH_IN_NAME = re.compile(r"-([a-f0-9]{6,64})\.[a-z]+$")


@dataclass(frozen=True)
class WeightsEntry:
    """One set of weights: what it is for, where it comes from and how inputs must look."""

    name: str
    network: str  # a trainyard network name: "resnet18", "timm:resnet10t"
    source: str  # "torchvision", "timm" or "user"
    filename: str  # the file's name in the store
    url: str | None = None  # where `pull` fetches it (None: import only)
    sha256: str | None = None  # the published hash (or its prefix), when the library gives one
    size_mb: float | None = None
    accuracy: dict = field(default_factory=dict)  # e.g. {"ImageNet-1K acc@1": 69.758}
    num_classes: int = 1000
    input_size: tuple[int, int, int] = (3, 224, 224)  # (channels, height, width)
    mean: tuple[float, ...] = (0.485, 0.456, 0.406)  # per channel, 0..1 units
    std: tuple[float, ...] = (0.229, 0.224, 0.225)
    aliases: tuple[str, ...] = ()  # other names that mean this entry

    def to_dict(self) -> dict:
        return asdict(self)


SIZE_MARGIN = 1.02  # a published size is rounded (torchvision's to 1 kB of MiB): a little room


def max_bytes(entry: WeightsEntry) -> int | None:
    """The most bytes a download of ``entry`` may bring: its published size plus a small margin
    (None where the library gives no size: the server's own Content-Length bounds it then)."""
    if not entry.size_mb:
        return None
    return int(entry.size_mb * 2**20 * SIZE_MARGIN) + (64 << 10)


def hash_in_filename(filename: str) -> str | None:
    """The SHA-256 prefix that a torch.hub-style file name carries, if any."""
    match = _HASH_IN_NAME.search(filename)
    return match.group(1) if match else None


def _hf_endpoint() -> str:
    return (environment.hf_endpoint() or HF_DEFAULT_ENDPOINT).rstrip("/")


def torchvision_function(network: str) -> str | None:
    """The torchvision builder behind a standard network (``mobilenet_v3`` -> ``mobilenet_v3_large``)."""
    from trainyard.networks.table import STANDARD, load_builder

    # A torchvision network's builder names its torchvision function; others have none.
    return getattr(load_builder(STANDARD.get(network)), "torchvision", None) if network in STANDARD else None


@cache
def _torchvision_entries() -> tuple[WeightsEntry, ...]:
    from torchvision.models import get_model_weights

    entries = []
    for info in list_networks():
        fn = torchvision_function(info.name)
        if fn is None:
            continue
        enum = get_model_weights(fn)
        for member in enum:
            entries.append(_torchvision_entry(info.name, member, member is enum.DEFAULT))
    return tuple(entries)


def _torchvision_entry(network: str, weights, is_default: bool) -> WeightsEntry:
    filename = weights.url.rsplit("/", 1)[-1]
    preset = weights.transforms()  # torchvision's ImageClassification preset: crop, mean, std
    crop = int(preset.crop_size[0])
    metrics = {f"{data} {name}": value for data, values in weights.meta.get("_metrics", {}).items()
               for name, value in values.items()}
    return WeightsEntry(
        name=f"{network}.{weights.name.lower()}", network=network, source="torchvision",
        filename=filename, url=None, sha256=hash_in_filename(filename),
        size_mb=weights.meta.get("_file_size"), accuracy=metrics,
        num_classes=len(weights.meta.get("categories") or ()) or 1000, input_size=(3, crop, crop),
        mean=tuple(preset.mean), std=tuple(preset.std),
        aliases=(f"{network}.{IMAGENET_TAG}",) if is_default else ())


@cache
def _timm_entries() -> tuple[WeightsEntry, ...]:
    import timm
    from timm.models import get_pretrained_cfg

    entries = []
    for full in timm.list_pretrained():
        cfg = get_pretrained_cfg(full)
        if cfg is None or cfg.custom_load:  # custom loaders read formats other than a state dict
            continue
        entries.append(_timm_entry(full, cfg))
    return tuple(entries)


def _timm_entry(full: str, cfg) -> WeightsEntry:
    model, _, tag = full.partition(".")
    if cfg.hf_hub_id:
        filename = cfg.hf_hub_filename or "model.safetensors"
        sha = None  # the hub publishes it with the download (X-Linked-Etag), not in timm
    else:
        filename = cfg.url.rsplit("/", 1)[-1]
        sha = hash_in_filename(filename)
    is_default = get_default_tag(model) == tag
    return WeightsEntry(
        name=f"timm:{full}", network=f"timm:{model}", source="timm", filename=filename,
        sha256=sha, num_classes=cfg.num_classes or 1000, input_size=tuple(cfg.input_size),
        mean=tuple(cfg.mean), std=tuple(cfg.std),
        aliases=(f"timm:{model}.{IMAGENET_TAG}",) if is_default else ())


def get_default_tag(model: str) -> str | None:
    """timm's default pretrained tag of ``model`` (the first it lists), or None."""
    from timm.models import get_pretrained_cfg

    cfg = get_pretrained_cfg(model)
    return cfg.tag if cfg is not None else None


def download_url(entry: WeightsEntry, mirror: str = "") -> str | None:
    """Where to fetch ``entry``: ``mirror`` (TRAINYARD_WEIGHTS_URL) or torchvision's server for
    torchvision's files, huggingface_hub's HF_ENDPOINT or timm's URL for timm's."""
    if entry.source == "torchvision":
        return f"{(mirror or TORCHVISION_MIRROR).rstrip('/')}/{entry.filename}"
    if entry.source == "timm":
        from timm.models import get_pretrained_cfg

        cfg = get_pretrained_cfg(entry.name.removeprefix("timm:"))
        if cfg is not None and cfg.hf_hub_id:
            return f"{_hf_endpoint()}/{cfg.hf_hub_id}/resolve/main/{entry.filename}"
        return str(cfg.url) if cfg is not None and cfg.url else None
    return entry.url


def catalogue(source: str | None = None) -> list[WeightsEntry]:
    """Every published entry (torchvision's first), optionally of one source; read from the
    cache file where one was written (weights/catalogue_cache.py: no torch, no timm)."""
    from trainyard.weights.catalogue_cache import cached_entries

    parts = {"torchvision": _torchvision_entries, "timm": _timm_entries}
    chosen = [source] if source else list(parts)
    return [entry for name in chosen for entry in cached_entries(name, parts[name], WeightsEntry)]


def find_entry(name: str) -> WeightsEntry | None:
    """The published entry called ``name`` (or one of its aliases), else None."""
    if name.startswith("timm:"):
        return _timm_index().get(name) or _timm_alias(name)
    return _torchvision_index().get(name)


# Read from the catalogue's cache file where there is one: `weights import` says that a file's
# hash is wrong before torch is imported (21 s on a loaded machine for a 2 MB file: issue 46).
@cache
def _torchvision_index() -> dict[str, WeightsEntry]:
    return {key: e for e in catalogue("torchvision") for key in (e.name, *e.aliases)}


@cache
def _timm_index() -> dict[str, WeightsEntry]:
    return {e.name: e for e in catalogue("timm")}


def _timm_alias(name: str) -> WeightsEntry | None:
    model, _, tag = name.removeprefix("timm:").partition(".")
    if tag != IMAGENET_TAG:
        return None
    default = get_default_tag(model)
    return _timm_index().get(f"timm:{model}.{default}") if default else None


def default_entry_name(network: str) -> str:
    """The name of ``network``'s published default weights: ``--pretrained imagenet``."""
    entry = find_entry(f"{network}.{IMAGENET_TAG}")
    if entry is None:
        raise NotFound(f"no published ImageNet weights for network {network}; "
                       "choose a store entry (trainyard weights list) or a weights file")
    return entry.name
