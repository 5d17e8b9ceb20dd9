"""Images read at full depth: 16-bit PNG and TIFF, and TIFF with any number of channels.

The 8-bit path (images.py, resize.py) turns everything into "L" or "RGB" Pillow images; a
16-bit or N-channel dataset cannot go through it without losing what its users care about.
Here an image is a numpy (H, W, C) array in its dataset's dtype (`DTYPES`): `probe` tells a
file's depth and channels from its header, `load_array` decodes it (an 8-bit file in a 16-bit
dataset is scaled by 257, exactly; anything else that does not fit is an ImageError naming why)
and `resize_array` applies the same resize plans as the 8-bit path, channel by channel in
float, so no value is clipped to 255.
"""

from __future__ import annotations

import io
import os
import zlib
from typing import IO, NamedTuple

import numpy as np
from PIL import Image

from trainyard.datasets.images import SAFE_FORMATS, ImageError, check_pixel_count, load_image, load_image_bytes
from trainyard.datasets.resize import RESAMPLE
from trainyard.datasets.resize_plans import plan_resize

# The storage dtype of each depth, and the full-scale value a pixel is divided by (normalize.py).
DTYPES: dict[int, type[np.unsignedinteger]] = {8: np.uint8, 16: np.uint16}
TIFF_SUFFIXES = (".tif", ".tiff")
# Pillow's raw modes of 16-bit samples: "I;16", "I;16B", ... and a 48/64-bit PNG's "RGB;16B".
_DEEP_RAW = ";16"
# Axes tifffile names for samples of one pixel (S), channel planes (C), and pages of one size
# (I, or Q when it cannot tell): a band stack saved page by page is one image of N channels.
_CHANNEL_AXES = ("S", "C", "I", "Q")
_TIFF_MAGIC = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF, both byte orders


class Probe(NamedTuple):
    depth: int
    channels: int | None  # None: an 8-bit kind any channel count converts from (JPEG, palette, ...)


def full_scale(dtype: np.dtype | type) -> float:
    """The value of a full-intensity sample: 255 for uint8, 65535 for uint16."""
    return float(np.iinfo(np.dtype(dtype)).max)


def is_tiff(path: str) -> bool:
    return path.lower().endswith(TIFF_SUFFIXES)


def is_deep(img: Image.Image) -> bool:
    """Whether an opened (not yet decoded) image has 16-bit samples, grey or colour."""
    tile = getattr(img, "tile", None)  # an ImageFile's; Pillow decodes a 16-bit colour PNG to 8
    return img.mode.startswith("I;16") or bool(tile and _DEEP_RAW in str(tile[0][3]))


def probe(path: str | os.PathLike | IO[bytes]) -> Probe:
    """A file's depth and channel count from its header (no pixels decoded); ImageError if unreadable."""
    if isinstance(path, (str, os.PathLike)):
        path = os.fspath(path)
        if is_tiff(path):
            return _probe_tiff(path)
    try:
        with Image.open(path, formats=SAFE_FORMATS) as img:
            bands = img.getbands()  # alpha is composited on white, not a channel
            return Probe(16, len(bands) - ("A" in bands)) if is_deep(img) else Probe(8, None)
    except (OSError, SyntaxError, ValueError, IndexError) as e:
        raise ImageError(f"cannot read the image header: {e}") from None


def _probe_tiff(path: str) -> Probe:
    import tifffile  # only TIFF datasets pay for its import

    try:
        with tifffile.TiffFile(path) as tif:
            series = tif.series[0]
            dtype = np.dtype(series.dtype)  # float or signed samples: not a depth (the load says why)
            depth = 8 * dtype.itemsize if dtype.kind == "u" else 8
            return Probe(depth, _channels_of(series.shape, series.axes))
    except (OSError, ValueError, IndexError, KeyError, tifffile.TiffFileError) as e:
        raise ImageError(f"cannot read the TIFF: {e}") from None


def _channels_of(shape: tuple[int, ...], axes: str) -> int:
    return int(np.prod([n for n, a in zip(shape, axes) if a in _CHANNEL_AXES])) if shape else 1


def load_array(path: str | os.PathLike, channels: int, depth: int) -> np.ndarray:
    """``path`` as an (H, W, channels) array of the dataset's dtype; ImageError when it cannot be
    that without losing depth or inventing channels (the message names the mismatch)."""
    path = os.fspath(path)
    pixels = _read_tiff(path) if is_tiff(path) else _read_other(path, channels)
    return _fit(pixels, channels, depth)


def load_array_bytes(data: bytes, channels: int, depth: int) -> np.ndarray:
    """Like load_array, for an image held in memory (an upload, a file the CLI read)."""
    if not data:
        raise ImageError("empty file")
    tiff = data[:4] in _TIFF_MAGIC
    pixels = _read_tiff(io.BytesIO(data)) if tiff else _read_other(io.BytesIO(data), channels, data)
    return _fit(pixels, channels, depth)


def _read_tiff(source: str | IO[bytes]) -> np.ndarray:
    import tifffile

    try:
        with tifffile.TiffFile(source) as tif:
            series = tif.series[0]
            pixels, axes = series.asarray(), series.axes
    except (OSError, ValueError, IndexError, KeyError, MemoryError, tifffile.TiffFileError) as e:
        raise ImageError(f"cannot read the TIFF: {e}") from None
    spatial = [a for a in axes if a in "YX"]
    if len(spatial) != 2 or any(a not in "YX" + "".join(_CHANNEL_AXES) for a in axes):
        raise ImageError(f"TIFF axes {axes!r} are not an image (Y, X and channels only)")
    order = [axes.index("Y"), axes.index("X")] + [i for i, a in enumerate(axes) if a in _CHANNEL_AXES]
    pixels = np.transpose(pixels, order)
    return pixels.reshape(*pixels.shape[:2], -1)


def _read_other(source: str | IO[bytes], channels: int, data: bytes | None = None) -> np.ndarray:
    """A PNG (or any other Pillow format): 16-bit grayscale at full depth, 8-bit through images.py
    (``data``: the bytes of an in-memory ``source``)."""
    kind = probe(source)
    if kind.depth == 8:
        mode = 1 if channels == 1 else 3
        pixels = np.asarray(load_image_bytes(data, mode) if data is not None else load_image(str(source), mode))
        return pixels[:, :, None] if pixels.ndim == 2 else pixels
    if not isinstance(source, str):
        source.seek(0)
    with Image.open(source, formats=SAFE_FORMATS) as img:
        check_pixel_count(img)
        if img.mode.startswith("I;16"):
            return np.asarray(img).astype(np.uint16)[:, :, None]
        if img.format != "PNG":
            raise ImageError(f"16-bit {img.format} in mode {img.mode} cannot be read at full depth; use TIFF")
    if data is None:
        with open(str(source), "rb") as f:
            data = f.read()
    return _read_png16(data)


def _read_png16(data: bytes) -> np.ndarray:
    """A 16-bit colour (or grey with alpha) PNG, which Pillow reads as 8 bits, with pypng (MIT);
    alpha composited on white, as images.py does at 8 bits."""
    import png  # pypng: only 16-bit colour PNGs pay for its import

    try:
        width, height, rows, png_meta = png.Reader(bytes=data).asDirect()
        pixels = np.vstack([np.asarray(row, np.uint16) for row in rows]).reshape(height, width, png_meta["planes"])
    except (png.Error, ValueError, zlib.error) as e:
        raise ImageError(f"corrupt or truncated image: {e}") from None
    if not png_meta["alpha"]:
        return pixels
    alpha = pixels[:, :, -1:].astype(np.float64) / 65535.0
    over_white = pixels[:, :, :-1] * alpha + 65535.0 * (1.0 - alpha)
    return np.rint(over_white).astype(np.uint16)


def _fit(pixels: np.ndarray, channels: int, depth: int) -> np.ndarray:
    """Convert an (H, W, c) array to the dataset's channels and dtype, or say why it cannot."""
    dtype = np.dtype(DTYPES[depth])
    if pixels.dtype.kind != "u" or pixels.dtype.itemsize > dtype.itemsize:
        bits = 8 * pixels.dtype.itemsize
        raise ImageError(f"{bits}-bit {pixels.dtype} samples do not fit this {depth}-bit dataset")
    c = pixels.shape[2]
    if c != channels:
        if {c, channels} != {1, 3}:
            raise ImageError(f"image has {c} channel(s); the dataset has {channels}")
        pixels = np.repeat(pixels, 3, axis=2) if c == 1 else _luminance(pixels)
    if pixels.dtype != dtype:  # 8-bit into 16: 255 -> 65535 exactly
        pixels = pixels.astype(dtype) * dtype.type(257)
    return np.ascontiguousarray(pixels)


def _luminance(rgb: np.ndarray) -> np.ndarray:
    """ITU-R 601 luma, as Pillow's RGB -> L, in the samples' own range."""
    y = rgb[:, :, :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])
    return np.rint(y).astype(rgb.dtype)[:, :, None]


def resize_array(pixels: np.ndarray, width: int, height: int, mode: str,
                 rng: np.random.Generator | None = None) -> np.ndarray:
    """resize.py's `resize_image` for an (H, W, C) array of any unsigned dtype and channel count:
    the same plan and bilinear filter, each channel resampled in float ("F") and rounded back."""
    h, w, c = pixels.shape
    plan = plan_resize((w, h), width, height, mode)
    x0, y0, x1, y1 = plan.crop
    size = (x1 - x0, y1 - y0)
    if (w, h) == size and plan.resized == (w, h):
        kept = pixels
    else:
        sx, sy = w / plan.resized[0], h / plan.resized[1]
        box = (x0 * sx, y0 * sy, x1 * sx, y1 * sy)
        top = full_scale(pixels.dtype)
        planes = [np.asarray(Image.fromarray(pixels[:, :, k].astype(np.float32), "F")
                             .resize(size, RESAMPLE, box=box)) for k in range(c)]
        kept = np.clip(np.rint(np.stack(planes, axis=2)), 0, top).astype(pixels.dtype)
    if kept.shape[:2] == (height, width):
        return np.ascontiguousarray(kept)
    rng = rng if rng is not None else np.random.default_rng()
    out = rng.integers(0, int(full_scale(pixels.dtype)), size=(height, width, c), dtype=pixels.dtype)
    ox, oy = plan.offset
    out[oy : oy + kept.shape[0], ox : ox + kept.shape[1]] = kept
    return out
