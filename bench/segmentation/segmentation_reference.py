"""bench/segmentation/segmentation.py's reference side: a hand-written segmentation-models-pytorch loop,
in its own process.

What a user writes from smp's examples: the split's PNGs read into tensors, a shuffling
DataLoader, ``smp.Unet("resnet18", encoder_weights=None)``, cross-entropy plus smp's multiclass
Dice loss, the optimizer and LR schedule given on the command line (bench/segmentation/segmentation.py passes
trainyard's resolved recipe, so both sides train alike), horizontal flips where the recipe has
them. After each epoch it validates (mean IoU, as trainyard does, so both do the same work) and
keeps the best weights; those segment the test images, written as index PNGs named by stem.

    python bench/segmentation/segmentation_reference.py DATA OUT --epochs 15 --batch 8 --solver sgd --lr 0.01
        [--momentum 0.9] [--weight-decay 1e-4] [--policy step --step-percent 33 --gamma 0.1] [--flip lr]
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench.segmentation.segmentation_data import CLASSES, read_split  # noqa: E402  (after the root is on the path)


def lr_factor(policy: str, step_percent: float, gamma: float, it: int, total: int) -> float:
    """The LR multiplier at iteration ``it`` of ``total``: fixed, step (gamma every step_percent
    of training, steps rounded up as DIGITS does) or cosine to 0."""
    if policy == "fixed":
        return 1.0
    if policy == "step":
        return gamma ** (it // max(1, math.ceil(step_percent * total / 100)))
    if policy == "cosine":
        return 0.5 * (1 + math.cos(math.pi * it / max(total, 1)))
    raise SystemExit(f"the reference loop does not write the {policy!r} LR policy")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--epochs", type=int, default=15)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--solver", default="sgd", choices=("sgd", "adam", "adamw"))
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--weight-decay", type=float, default=1e-4)
    parser.add_argument("--policy", default="step")
    parser.add_argument("--step-percent", type=float, default=33.0)
    parser.add_argument("--gamma", type=float, default=0.1)
    parser.add_argument("--flip", default="none", choices=("none", "lr"))
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    import segmentation_models_pytorch as smp
    import torch
    import torch.nn.functional as F
    from PIL import Image
    from torchmetrics.classification import MulticlassJaccardIndex

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)

    def tensors(split: str):
        images, masks = read_split(args.data / split / "images", args.data / split / "masks")
        return torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255, torch.from_numpy(masks).long()

    train_x, train_y = tensors("train")
    val_x, val_y = tensors("val")
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x, train_y),
                                         batch_size=args.batch, shuffle=True, drop_last=True)
    model = smp.Unet("resnet18", encoder_weights=None, in_channels=3, classes=len(CLASSES))
    if args.solver == "sgd":
        optimizer: torch.optim.Optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                                                           weight_decay=args.weight_decay)
    else:
        make = torch.optim.Adam if args.solver == "adam" else torch.optim.AdamW
        optimizer = make(model.parameters(), lr=args.lr, betas=(args.momentum, 0.999), weight_decay=args.weight_decay)
    total = args.epochs * len(loader)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda it: lr_factor(args.policy, args.step_percent, args.gamma, it, total))
    dice = smp.losses.DiceLoss("multiclass", from_logits=True)
    best, best_state, history = -1.0, None, []
    for _ in range(args.epochs):
        model.train()
        for x, y in loader:
            if args.flip == "lr":
                turn = torch.rand(len(x)) < 0.5
                x[turn], y[turn] = x[turn].flip(-1), y[turn].flip(-1)
            logits = model(x)
            loss = F.cross_entropy(logits, y) + dice(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        model.eval()
        metric = MulticlassJaccardIndex(len(CLASSES), average="macro")
        with torch.inference_mode():
            for start in range(0, len(val_x), args.batch):
                metric.update(model(val_x[start:start + args.batch]).argmax(1), val_y[start:start + args.batch])
        history.append(float(metric.compute()))
        if history[-1] > best:
            best, best_state = history[-1], copy.deepcopy(model.state_dict())
    model.load_state_dict(best_state)
    model.eval()
    (args.out / "masks").mkdir(parents=True, exist_ok=True)
    test = args.data / "test" / "images"
    with torch.inference_mode():
        for path in sorted(test.glob("*.png")):
            x = torch.from_numpy(np.asarray(Image.open(path).convert("RGB"))).permute(2, 0, 1).float()[None] / 255
            found = model(x).argmax(1)[0].to(torch.uint8).numpy()
            Image.fromarray(found, mode="L").save(args.out / "masks" / path.name)
    (args.out / "reference.json").write_text(json.dumps({"val_miou": history}))


if __name__ == "__main__":
    main()
