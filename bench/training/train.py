"""Benchmark trainyard's training loop against a minimal PyTorch loop and ImageFolder + DataLoader.

The same network (LeNet on 28x28 grayscale, MNIST-sized), the same images, batch size, solver
and precision, trained three ways:

  trainyard    the real job setup (`prepare`), BatchLoader over the memory-mapped dataset
               folder, `train_one_epoch` with its loss read-backs
  minimal      a hand-written loop over float tensors already normalised in device memory
  imagefolder  torchvision ImageFolder + DataLoader over the same images as PNG files

Each epoch is timed after a warm-up epoch; the three take turns for several rounds and the
fastest epoch of each counts, so a busy machine disturbs the ratios less. With CUDA it also
reports ResNet-50 images/second with AMP and channels_last through trainyard's loop, and AMP on
and off (fp32 against ``--precision``, default auto) for GoogLeNet at batch 128 with peak GPU
memory; on the CPU, LeNet and ResNet-18 with and without channels_last (which trainyard uses
there for both families), as a ratio. ``--precision`` sets trainyard's precision in every row.

    python bench/training/train.py [--images 6000] [--rounds 3] [--workers 2] [--threads N] [--precision auto]
    python bench/training/train.py --amp-only --amp-network googlenet --rounds 2     # the AMP rows alone
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import psutil
import torch
import torch.nn.functional as F
import torchvision
from PIL import Image

from trainyard.core.events import EventWriter
from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import save_mean
from trainyard.networks import create_network
from trainyard.training.build_run import prepare
from trainyard.training.loop import LossMeter, train_one_epoch
from trainyard.training.spec import ModelSpec

CLASSES = [f"c{i}" for i in range(10)]


def make_images(n: int, size: int, channels: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """n noisy images (N, H, W, C) uint8 of 10 classes (a bright square at a class position)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(CLASSES), n)
    images = rng.integers(0, 60, (n, size, size, channels), dtype=np.uint8)
    cell = size // 4
    for i, label in enumerate(labels):
        y, x = divmod(int(label) % 16, 4)
        images[i, y * cell:(y + 1) * cell, x * cell:(x + 1) * cell] += 150
    return images, labels


def write_dataset(folder: Path, images: np.ndarray, labels: np.ndarray) -> Path:
    """The trainyard storage format (encoding none: one memory-mappable uint8 array)."""
    n, h, w, c = images.shape
    for split, part in (("train", slice(None)), ("val", slice(0, min(n, 256)))):
        writer = SplitWriter(folder / split, h, w, c, "none", mean=split == "train")
        for image, label in zip(images[part], labels[part]):
            writer.append(image, int(label))
        writer.close()
        if split == "train":
            save_mean(folder, writer.mean())
    info = {"classes": CLASSES, "width": w, "height": h, "channels": c, "resize": "squash", "encoding": "none"}
    (folder / "info.json").write_text(json.dumps(info))
    return folder


def write_png_folder(folder: Path, images: np.ndarray, labels: np.ndarray) -> Path:
    for i, (image, label) in enumerate(zip(images, labels)):
        (folder / CLASSES[label]).mkdir(parents=True, exist_ok=True)
        pixels = image[:, :, 0] if image.shape[2] == 1 else image
        Image.fromarray(pixels).save(folder / CLASSES[label] / f"{i}.png")
    return folder


def autocast(device: torch.device, dtype: torch.dtype | None):
    """The same mixed precision trainyard picked (none on the CPU)."""
    return torch.autocast(device.type, dtype=dtype or torch.float32, enabled=dtype is not None)


def cpu_seconds() -> float:
    """CPU time of this process and its children (DataLoader workers) so far."""
    me = psutil.Process()
    times = [me.cpu_times()] + [c.cpu_times() for c in me.children(recursive=True)]
    return sum(t.user + t.system for t in times)


def timed(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of ``fn()``. CPU time is the steadier figure on a busy machine."""
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    start, cpu = time.perf_counter(), cpu_seconds()
    fn()
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return time.perf_counter() - start, cpu_seconds() - cpu


def best_epochs(runners: dict, rounds: int) -> tuple[dict[str, float], dict[str, float]]:
    """Each runner's fastest epoch (wall, CPU seconds) of ``rounds``, taking turns, after one
    warm-up epoch each (allocator, cuDNN autotuning, worker start)."""
    for runner in runners.values():
        runner.train_epoch()
    wall = {name: float("inf") for name in runners}
    cpu = dict(wall)
    for _ in range(rounds):
        for name, runner in runners.items():
            seconds, cpu_s = timed(runner.train_epoch)
            wall[name], cpu[name] = min(wall[name], seconds), min(cpu[name], cpu_s)
    return wall, cpu


class Trainyard:
    """trainyard's own path: the job setup and loop, minus validation and checkpoints."""

    def __init__(self, dataset: Path, job: Path, network: str, batch_size: int, precision: str = "auto",
                 channels_last: bool = True):
        spec = ModelSpec(dataset_id="bench", dataset_dir=str(dataset), network=network, epochs=100,
                         batch_size=batch_size, seed=0, precision=precision, val_interval=0,
                         channels_last=channels_last,
                         snapshot_interval=0, lr={"policy": "fixed", "base_lr": 0.01})
        self.events = EventWriter(job)
        self.run = prepare(spec, job, self.events)
        self.meter = LossMeter(self.run.device)
        self.epoch = 0

    def read_back(self, batches: int) -> None:
        if self.run.schedule.at(batches) is not None:
            self.meter.read()

    def train_epoch(self) -> None:
        train_one_epoch(self.run.model, self.run.train_loader, self.run.stepper, self.meter, self.epoch,
                        after_step=self.read_back)
        self.epoch += 1


class Minimal:
    """A hand-written loop over normalised float tensors already in device memory."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, network: str, batch_size: int, device, dtype):
        mean = images.mean(axis=0, dtype=np.float64).astype(np.float32)
        # The layout trainyard hands the network: NCHW shape with NHWC strides, the permuted view
        # of the stored NHWC pixels. With one channel, PyTorch treats that as channels_last, and
        # oneDNN's channels_last convolutions are about twice as fast for LeNet on a CPU.
        x = torch.from_numpy((images.astype(np.float32) - mean) / 255).permute(0, 3, 1, 2)
        self.memory_format = torch.channels_last if device.type == "cuda" else torch.contiguous_format
        self.x = x.to(device).contiguous(memory_format=self.memory_format)
        self.y = torch.from_numpy(labels).to(device)
        torch.manual_seed(0)
        self.model = create_network(network, len(CLASSES), images.shape[3], images.shape[1]).to(device)
        self.model.to(memory_format=self.memory_format)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        self.batch_size, self.device, self.dtype = batch_size, device, dtype

    def train_epoch(self) -> None:
        perm = torch.randperm(len(self.y), device=self.device)
        self.model.train()
        for i in range(len(perm) // self.batch_size):
            idx = perm[i * self.batch_size:(i + 1) * self.batch_size]
            with autocast(self.device, self.dtype):
                loss = F.cross_entropy(self.model(self.x[idx]), self.y[idx])
            loss.backward()
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)


class Folder:
    """torchvision ImageFolder + DataLoader, the usual way to train from image files."""

    def __init__(self, folder: Path, mean: float, network: str, batch_size: int, device, dtype, workers: int):
        transform = torchvision.transforms.Compose([
            torchvision.transforms.Grayscale(1),
            torchvision.transforms.ToTensor(),
            torchvision.transforms.Normalize([mean / 255], [1.0]),
        ])
        data = torchvision.datasets.ImageFolder(str(folder), transform=transform)
        self.loader = torch.utils.data.DataLoader(
            data, batch_size=batch_size, shuffle=True, drop_last=True, num_workers=workers,
            pin_memory=device.type == "cuda", persistent_workers=workers > 0)
        torch.manual_seed(0)
        self.model = create_network(network, len(CLASSES), 1, 28).to(device)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-4)
        self.device, self.dtype = device, dtype

    def train_epoch(self) -> None:
        self.model.train()
        for x, y in self.loader:
            x, y = x.to(self.device, non_blocking=True), y.to(self.device, non_blocking=True)
            with autocast(self.device, self.dtype):
                loss = F.cross_entropy(self.model(x), y)
            loss.backward()
            self.opt.step()
            self.opt.zero_grad(set_to_none=True)


def compare(args, root: Path) -> None:
    images, labels = make_images(args.images, 28, 1)
    dataset = write_dataset(root / "dataset", images, labels)
    pngs = write_png_folder(root / "png", images, labels)
    ty = Trainyard(dataset, root / "job", "lenet", args.batch_size, args.precision)
    device, dtype = ty.run.device, ty.run.stepper.dtype
    runners = {
        "trainyard": ty,
        "minimal": Minimal(images, labels, "lenet", args.batch_size, device, dtype),
        "imagefolder": Folder(pngs, float(images.mean()), "lenet", args.batch_size, device, dtype, args.workers),
    }
    wall, cpu = best_epochs(runners, args.rounds)
    print(f"LeNet 28x28, {args.images} images, batch {args.batch_size}, on {device}, "
          f"torch threads {torch.get_num_threads()}, best of {args.rounds} epochs each:")
    for name in runners:
        print(f"  {name:12s} {wall[name] * 1000:8.1f} ms/epoch wall {args.images / wall[name]:8.0f} images/s"
              f"   {cpu[name] * 1000:8.1f} ms/epoch CPU")
    for what, t in (("wall", wall), ("CPU", cpu)):
        print(f"  by {what:4s}: trainyard/minimal speed = {t['minimal'] / t['trainyard']:.3f}, "
              f"trainyard/ImageFolder speed = {t['imagefolder'] / t['trainyard']:.2f}x")


def cpu_channels_last(args, root: Path) -> None:
    """trainyard's loop on the CPU with channels_last (what it picks for these families) and
    without (``channels_last=False``), taking turns; the fastest epoch of each counts."""
    print("channels_last on the CPU, trainyard's loop (training and validation batches alike):")
    for network, size, channels, images in (("lenet", 28, 1, args.images), ("resnet18", 32, 3, args.resnet_cpu_images)):
        pixels, labels = make_images(images, size, channels, seed=2)
        dataset = write_dataset(root / f"cl-{network}", pixels, labels)
        runners = {layout: Trainyard(dataset, root / f"cl-{network}-{layout}", network, args.batch_size,
                                     channels_last=layout == "channels_last")
                   for layout in ("channels_last", "contiguous")}
        wall, cpu = best_epochs(runners, args.rounds)
        for name in runners:
            print(f"  {network:9s} {size}x{size}x{channels} {name:14s} {images / wall[name]:7.0f} images/s wall "
                  f"{cpu[name] * 1000:9.1f} ms/epoch CPU")
        print(f"  {network:9s} channels_last / contiguous speed: {wall['contiguous'] / wall['channels_last']:.2f}x "
              f"wall, {cpu['contiguous'] / cpu['channels_last']:.2f}x CPU")


def resnet50(args, root: Path) -> None:
    images, labels = make_images(args.resnet_images, 224, 3, seed=1)
    dataset = write_dataset(root / "rn50", images, labels)
    ty = Trainyard(dataset, root / "rn50-job", "resnet50", args.resnet_batch_size, args.precision)
    ty.train_epoch()  # warm-up
    seconds = min(timed(ty.train_epoch) for _ in range(2))
    n = len(ty.run.train_loader) * args.resnet_batch_size
    print(f"ResNet-50 224x224, batch {args.resnet_batch_size}, {torch.cuda.get_device_name()}, "
          f"{ty.run.stepper.dtype}, channels_last: {n / seconds:.0f} images/s (trainyard loop)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=6000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2, help="DataLoader workers for ImageFolder")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch CPU threads (0: torch's default); 1 is steadier on a busy machine")
    parser.add_argument("--resnet-images", type=int, default=2048)
    parser.add_argument("--resnet-batch-size", type=int, default=128)
    parser.add_argument("--resnet-cpu-images", type=int, default=1024, help="ResNet-18 images for the CPU rows")
    parser.add_argument("--channels-last-only", action="store_true", help="only the CPU channels_last rows")
    parser.add_argument("--precision", choices=["auto", "fp32", "bf16", "fp16"], default="auto",
                        help="trainyard's precision in every row (AMP rows: this against fp32)")
    parser.add_argument("--amp-network", default="googlenet", help="network of the AMP on/off rows (CUDA)")
    parser.add_argument("--amp-batch-size", type=int, default=128)
    parser.add_argument("--amp-images", type=int, default=1024)
    parser.add_argument("--amp-only", action="store_true", help="only the AMP on/off rows")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        from train_amp import amp_rows  # bench/training/ is the script's folder, hence on sys.path

        if args.amp_only:
            amp_rows(args, Path(tmp))
            return
        if not args.channels_last_only:
            compare(args, Path(tmp))
        if torch.cuda.is_available():
            resnet50(args, Path(tmp))
            amp_rows(args, Path(tmp))
        else:
            cpu_channels_last(args, Path(tmp))


if __name__ == "__main__":
    main()
