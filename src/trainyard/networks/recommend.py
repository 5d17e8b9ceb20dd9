"""The network a task trains when none is chosen: one entry per task, from the dataset's facts.

`trainyard train --dataset ID` without --network, ``POST /api/models`` without networks and the
new-model form's preselection all ask here, so a newcomer's first run trains something that suits
the data instead of being refused. Each task's entry is a function of the dataset's facts (image
count and size), so a task adds or changes its recommendation in one line of ``RECOMMENDED``.
Torch-free: the names are looked up in table.py's registry, nothing is built.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# A from-scratch classifier on up to this many training images gets a small network: a larger
# one costs many times the CPU for no better accuracy on such a set (issue 46: ResNet-18 took 9x
# the CPU-seconds of a nano classifier for the same top-1 on 400 images at 64x64). timm's
# ResNet-10-T learns such a set where torchvision's MobileNet V3 stayed at chance: 4 shapes,
# 400 images at 64x64, SGD at 0.01, 10 epochs on one thread: validation top-1 1.00 in 32 CPU-s,
# ResNet-18 0.88 in 46 CPU-s, MobileNet V3 0.25 (chance) in 31 CPU-s.
SMALL_SET_IMAGES = 20_000
# Images this small (MNIST's 28x28) are LeNet's: DIGITS's network for them, and the cheapest.
SMALL_IMAGE_SIDE = 32


@dataclass(frozen=True)
class DatasetFacts:
    """What a recommendation reads of a dataset; None where the dataset does not say yet."""

    images: int | None = None  # training images
    width: int | None = None
    height: int | None = None

    def describe(self) -> str:
        parts = [f"{self.images} training images"] if self.images else []
        if self.width and self.height:
            parts.append(f"{self.width}x{self.height}")
        return ", ".join(parts) or "a dataset not built yet"


def _classification(facts: DatasetFacts) -> str:
    side = min(facts.width or 0, facts.height or 0)
    if 0 < side <= SMALL_IMAGE_SIDE:
        return "lenet"
    if facts.images and facts.images > SMALL_SET_IMAGES:
        return "resnet18"  # enough data to pay for a deeper network
    return "timm:resnet10t"


# task -> the network it trains by default, from the dataset's facts
RECOMMENDED: dict[str, Callable[[DatasetFacts], str]] = {
    "classification": _classification,
    # The YOLO nano with its recipe (networks/table.py): issue 41's unseen set, 15 epochs from
    # scratch, measured by bench/detection/detection_yolo.py against SSDlite, the former default.
    "detection": lambda facts: "yolo_n",
    "multilabel": _classification,  # a classifier's network, one sigmoid a label
    # Issue 43's measurement: a U-Net on ResNet-18 from scratch learned its generated shapes where
    # LR-ASPP stayed at background for half the run.
    "segmentation": lambda facts: "unet_resnet18",
}


def recommended_network(task: str, facts: DatasetFacts) -> str:
    """The standard network ``task`` trains on a dataset with these facts when none is chosen."""
    try:
        choose = RECOMMENDED[task]
    except KeyError:
        raise ValueError(f"no network is recommended for task {task!r}; choose one") from None
    return choose(facts)


def recommendation_note(task: str, facts: DatasetFacts) -> str:
    """One line saying which network was chosen and why (the CLI prints it on stderr)."""
    return (f"no network given: training {recommended_network(task, facts)}, the recommended {task} "
            f"network for {facts.describe()} (--network chooses another)")
