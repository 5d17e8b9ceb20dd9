"""bench/detection/detection.py's reference side: the hand-written torchvision detection loop, in its own process.

What a user writes from torchvision's reference scripts: a Dataset over the stored arrays, a
DataLoader with a list collate, the sum of the loss dict, Adam; after each epoch the same
torchmetrics mAP on the validation images, and, as trainyard reports one, a validation loss: the
obvious way, a second pass over each validation batch in training mode (a torchvision detector
gives losses only there) with BatchNorm kept in eval and no gradient. Writes mAP@0.5 and the
validation loss per epoch and the median training images/s to OUT as JSON.

    python bench/detection/detection_reference.py DATASET OUT --epochs 6 --batch 8 --lr 0.002 --size 64 --seed 1
        [--network-file FILE.py]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

CLASSES = ("disc", "square")  # bench/detection/detection.py's dataset


def build_model(size: int, network_file: str | None):
    """The model both sides train: the custom file's build() or SSDlite, fitted to ``size``."""
    from torchvision.models import detection

    if network_file:  # run as the user's file, as trainyard runs it
        namespace: dict = {}
        exec(compile(Path(network_file).read_text(), network_file, "exec"), namespace)
        model = namespace["build"](len(CLASSES), 3, size)
    else:
        model = detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                        num_classes=len(CLASSES) + 1)
        model.transform.fixed_size = (size, size)
    model.transform.min_size, model.transform.max_size = (size,), size
    return model, int(getattr(model, "label_offset", 1))


def reference(dataset: Path, out: Path, epochs: int, batch: int, lr: float, size: int,
              network_file: str | None, seed: int = 1) -> None:
    """The hand-written torchvision loop."""
    import torch
    from torchmetrics.detection import MeanAveragePrecision

    from trainyard.datasets.detection.store import DetectionSplit

    torch.manual_seed(seed)
    model, offset = build_model(size, network_file)
    train, val = DetectionSplit(dataset / "train"), DetectionSplit(dataset / "val")

    class Shapes(torch.utils.data.Dataset):
        def __init__(self, split):
            self.split = split

        def __len__(self):
            return len(self.split)

        def __getitem__(self, i):
            image = torch.from_numpy(self.split.images(np.array([i]))[0]).permute(2, 0, 1).float() / 255
            boxes, labels = self.split.targets(i)
            return image, {"boxes": torch.from_numpy(boxes), "labels": torch.from_numpy(labels) + offset}

    def collate(batch):
        return tuple(zip(*batch))

    def loss_mode():  # the losses need training mode; BatchNorm must not learn from validation images
        model.train()
        for module in model.modules():
            if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
                module.eval()

    loader = torch.utils.data.DataLoader(Shapes(train), batch_size=batch, shuffle=True, drop_last=True,
                                         collate_fn=collate)
    val_loader = torch.utils.data.DataLoader(Shapes(val), batch_size=batch, collate_fn=collate)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    map50, val_loss, speeds = [], [], []
    for _ in range(epochs):
        model.train()
        start, seen = time.perf_counter(), 0
        for images, targets in loader:
            loss = sum(model(list(images), list(targets)).values())
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen += len(images)
        speeds.append(seen / (time.perf_counter() - start))
        metric = MeanAveragePrecision(box_format="xyxy", iou_type="bbox", backend="pycocotools")
        loss_sum = 0.0
        with torch.no_grad():
            for images, targets in val_loader:
                model.eval()
                found = model(list(images))
                metric.update([{k: v for k, v in f.items()} for f in found], list(targets))
                loss_mode()
                loss_sum += float(sum(model(list(images), list(targets)).values())) * len(images)
        map50.append(float(metric.compute()["map_50"]))
        val_loss.append(loss_sum / len(val))
    out.write_text(json.dumps({"map50": map50, "val_loss": val_loss, "images_per_second": float(np.median(speeds))}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("out", type=Path)
    for name, kind in (("epochs", int), ("batch", int), ("lr", float), ("size", int), ("seed", int)):
        parser.add_argument(f"--{name}", type=kind, required=True)
    parser.add_argument("--network-file")
    args = parser.parse_args()
    reference(args.dataset, args.out, args.epochs, args.batch, args.lr, args.size, args.network_file, args.seed)


if __name__ == "__main__":
    main()
