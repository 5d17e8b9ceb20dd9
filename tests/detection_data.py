"""Generated detection data for tests: shapes on textured backgrounds with exact boxes.

``make_shapes_dataset`` draws ``n_images`` PNGs with 0-3 shapes each (a filled square or a disc,
one colour per class) and writes their boxes in one of the four label formats the dataset
build reads. ``shapes_truth`` gives the same boxes (original pixels, x1 y1 x2 y2 with x2/y2 the
pixel edge after the shape) for checking a parse. Deterministic for a seed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from xml.sax.saxutils import escape

import numpy as np
from PIL import Image

FORMATS = ("kitti", "yolo", "coco", "voc")
_COLOURS = ((220, 40, 40), (40, 90, 230), (30, 180, 60), (230, 200, 30), (200, 60, 200))


@dataclass(frozen=True)
class Shape:
    label: str
    box: tuple[int, int, int, int]  # x1, y1, x2, y2 (x2, y2 exclusive pixel edges)


def shapes_truth(n_images: int = 40, size: tuple[int, int] = (96, 96),
                 classes: tuple[str, ...] = ("square", "disc"), seed: int = 0) -> list[list[Shape]]:
    """The shapes of each image, as make_shapes_dataset draws them (image 0 always has none)."""
    rng = np.random.default_rng(seed)
    width, height = size
    out: list[list[Shape]] = []
    for i in range(n_images):
        count = 0 if i == 0 else int(rng.integers(0, 4))
        placed: list[Shape] = []
        for _ in range(count * 10):  # a few tries each, so shapes do not overlap
            if len(placed) == count:
                break
            side = int(rng.integers(max(6, min(size) // 6), max(7, min(size) // 3)))
            x1, y1 = int(rng.integers(0, width - side)), int(rng.integers(0, height - side))
            box = (x1, y1, x1 + side, y1 + side)
            if all(not _overlap(box, s.box) for s in placed):
                placed.append(Shape(classes[int(rng.integers(0, len(classes)))], box))
        out.append(placed)
    return out


def _overlap(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def draw_image(shapes: list[Shape], size: tuple[int, int], classes: tuple[str, ...],
               rng: np.random.Generator) -> np.ndarray:
    """A textured background (gradient + noise) with each shape drawn in its class's colour."""
    width, height = size
    yy, xx = np.mgrid[0:height, 0:width]
    base = 90 + 40 * np.sin(xx / 7.0 + rng.uniform(0, 6)) * np.cos(yy / 9.0)
    pixels = base[:, :, None] + rng.normal(0, 12, (height, width, 3))
    for shape in shapes:
        x1, y1, x2, y2 = shape.box
        colour = np.array(_COLOURS[classes.index(shape.label) % len(_COLOURS)], float)
        if classes.index(shape.label) % 2 == 0:  # squares (and every other class) fill the box
            pixels[y1:y2, x1:x2] = colour
        else:  # discs touch all four edges of their box
            cy, cx, r = (y1 + y2 - 1) / 2, (x1 + x2 - 1) / 2, (x2 - x1) / 2
            mask = (yy - cy) ** 2 + (xx - cx) ** 2 <= r**2
            pixels[mask] = colour
    return np.clip(pixels, 0, 255).astype(np.uint8)


def make_shapes_dataset(root: str | Path, n_images: int = 40, size: tuple[int, int] = (96, 96),
                        classes: tuple[str, ...] = ("square", "disc"), fmt: str = "kitti",
                        seed: int = 0) -> tuple[Path, Path]:
    """Write images to ``root/images`` and labels in ``fmt``; returns (images_dir, labels_path).

    labels_path is a folder (kitti, yolo with classes.txt, voc) or one JSON file (coco).
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; valid: {', '.join(FORMATS)}")
    root = Path(root)
    images_dir = root / "images"
    images_dir.mkdir(parents=True, exist_ok=True)
    truth = shapes_truth(n_images, size, classes, seed)
    rng = np.random.default_rng(seed + 1)
    names = []
    for i, shapes in enumerate(truth):
        name = f"img_{i:04d}.png"
        Image.fromarray(draw_image(shapes, size, classes, rng)).save(images_dir / name)
        names.append(name)
    writer = {"kitti": _write_kitti, "yolo": _write_yolo, "coco": _write_coco, "voc": _write_voc}[fmt]
    return images_dir, writer(root, names, truth, size, classes)


def _write_kitti(root: Path, names: list[str], truth: list[list[Shape]], size: tuple[int, int],
                 classes: tuple[str, ...]) -> Path:
    folder = root / "labels"
    folder.mkdir(exist_ok=True)
    for name, shapes in zip(names, truth, strict=True):
        lines = [f"{s.label} 0.00 0 0.00 {s.box[0]:.2f} {s.box[1]:.2f} {s.box[2]:.2f} {s.box[3]:.2f} "
                 "0.00 0.00 0.00 0.00 0.00 0.00 0.00" for s in shapes]
        (folder / f"{Path(name).stem}.txt").write_text("".join(line + "\n" for line in lines))
    return folder


def _write_yolo(root: Path, names: list[str], truth: list[list[Shape]], size: tuple[int, int],
                classes: tuple[str, ...]) -> Path:
    folder = root / "labels"
    folder.mkdir(exist_ok=True)
    (folder / "classes.txt").write_text("".join(c + "\n" for c in classes))
    w, h = size
    for name, shapes in zip(names, truth, strict=True):
        lines = []
        for s in shapes:
            x1, y1, x2, y2 = s.box
            lines.append(f"{classes.index(s.label)} {(x1 + x2) / 2 / w:.7f} {(y1 + y2) / 2 / h:.7f} "
                         f"{(x2 - x1) / w:.7f} {(y2 - y1) / h:.7f}")
        (folder / f"{Path(name).stem}.txt").write_text("".join(line + "\n" for line in lines))
    return folder


def _write_coco(root: Path, names: list[str], truth: list[list[Shape]], size: tuple[int, int],
                classes: tuple[str, ...]) -> Path:
    w, h = size
    images = [{"id": i + 1, "file_name": n, "width": w, "height": h} for i, n in enumerate(names)]
    categories = [{"id": 10 + k, "name": c} for k, c in enumerate(classes)]  # ids need not be 0..n-1
    annotations = []
    for i, shapes in enumerate(truth):
        for s in shapes:
            x1, y1, x2, y2 = s.box
            annotations.append({"id": len(annotations) + 1, "image_id": i + 1, "iscrowd": 0,
                                "category_id": 10 + classes.index(s.label),
                                "bbox": [x1, y1, x2 - x1, y2 - y1], "area": (x2 - x1) * (y2 - y1)})
    path = root / "annotations.json"
    path.write_text(json.dumps({"images": images, "annotations": annotations, "categories": categories}))
    return path


def _write_voc(root: Path, names: list[str], truth: list[list[Shape]], size: tuple[int, int],
               classes: tuple[str, ...]) -> Path:
    folder = root / "labels"
    folder.mkdir(exist_ok=True)
    w, h = size
    for name, shapes in zip(names, truth, strict=True):
        objects = "".join(
            f"<object><name>{escape(s.label)}</name><difficult>0</difficult><bndbox>"
            f"<xmin>{s.box[0]}</xmin><ymin>{s.box[1]}</ymin><xmax>{s.box[2]}</xmax><ymax>{s.box[3]}</ymax>"
            "</bndbox></object>" for s in shapes)
        xml = (f"<annotation><filename>{escape(name)}</filename><size><width>{w}</width>"
               f"<height>{h}</height><depth>3</depth></size>{objects}</annotation>")
        (folder / f"{Path(name).stem}.xml").write_text(xml)
    return folder
