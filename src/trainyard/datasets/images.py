"""Load any image a user is likely to have as an 8-bit "L" or "RGB" Pillow image.

Handles 8- and 16-bit depth, grayscale, palette (with transparency), alpha (composited on white,
as DIGITS did), CMYK and EXIF orientation. The way back: `to_pil` and `png_bytes` turn an
(H, W, C) uint8 array into a Pillow image or PNG bytes. Everything that cannot be read becomes an
``ImageError`` whose message is a reason a person can act on; the dataset build lists those
files as skipped instead of failing.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from typing import IO

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from trainyard.core.errors import InvalidInput

# Only decoders for plain raster formats (JPEG also opens MPO): Image.open would otherwise try EPS (which runs
# Ghostscript), PDF-like and other exotic plugins on untrusted files.
SAFE_FORMATS = ("JPEG", "PNG", "BMP", "TIFF", "WEBP", "GIF", "PPM")

EXIF_ORIENTATION = 0x0112
# Modes whose pixels carry (or may carry) transparency, composited on white.
_ALPHA_MODES = {"RGBA", "LA", "PA", "RGBa", "La"}
# Integer and float modes Pillow's own convert() would clip instead of scale.
_WIDE_MODES = {"I", "I;16", "I;16L", "I;16B", "I;16N", "F"}


class ImageError(InvalidInput):
    """An image that cannot be used; the message says why in plain words."""


def load_image(path: str | os.PathLike, channels: int,
               before_load: Callable[[Image.Image], None] | None = None) -> Image.Image:
    """Read ``path`` and return a loaded image in mode "L" (channels=1) or "RGB" (channels=3).

    ``before_load`` sees the opened, not yet decoded image (datasets/reduced.py asks JPEGs for
    a reduced decode there).

    Raises ImageError for missing, empty, corrupt, truncated, non-image, oversized
    (decompression bomb) or otherwise unusable files.
    """
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, not {channels}")
    # A str, not a Path, and no stat before opening: a dataset build calls this per image, and
    # both cost as much as decoding a small JPEG's header. An empty file is told apart only
    # when it fails to open.
    return _decode(os.fspath(path), channels, before_load)


def load_image_bytes(data: bytes, channels: int) -> Image.Image:
    """Like load_image, for an image held in memory (an upload)."""
    if channels not in (1, 3):
        raise ValueError(f"channels must be 1 or 3, not {channels}")
    if not data:
        raise ImageError("empty file")
    return _decode(io.BytesIO(data), channels)


def _decode(source: str | IO[bytes], channels: int,
            before_load: Callable[[Image.Image], None] | None = None) -> Image.Image:
    try:
        img = Image.open(source, formats=SAFE_FORMATS)
    except Image.DecompressionBombError as e:
        raise ImageError(f"decompression bomb refused: {e}") from None
    except UnidentifiedImageError:
        if isinstance(source, str) and _is_empty(source):
            raise ImageError("empty file") from None
        raise ImageError("not an image, or an unsupported or damaged format") from None
    except FileNotFoundError:
        raise ImageError("file not found") from None
    except (PermissionError, IsADirectoryError) as e:
        raise ImageError(f"cannot read file: {e.strerror or e}") from None
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError) as e:
        raise ImageError(f"corrupt or truncated image: {e}") from None
    try:
        check_pixel_count(img)
        if before_load is not None:
            before_load(img)
        img.load()  # decode now, so corrupt or truncated data fails here, not later
        out = to_mode(_upright(img), channels)
    except ImageError:
        img.close()
        raise
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError) as e:
        img.close()
        # Pillow reports damaged data with all of these, depending on the format plugin.
        raise ImageError(f"corrupt or truncated image: {e}") from None
    except MemoryError:
        img.close()
        raise ImageError("image too large to decode in memory") from None
    if out is not img:
        img.close()  # load() already closed single-frame files; this covers GIF/TIFF frames
    return out


def _is_empty(path: str) -> bool:
    try:
        return os.path.getsize(path) == 0
    except OSError:
        return False


def _upright(img: Image.Image) -> Image.Image:
    """Apply the EXIF orientation; skip exif_transpose's full copy when there is none."""
    if img.getexif().get(EXIF_ORIENTATION, 1) in (0, 1):
        return img
    return ImageOps.exif_transpose(img)


def check_pixel_count(img: Image.Image) -> None:
    """Refuse images above Pillow's decompression-bomb limit.

    Pillow only *warns* between MAX_IMAGE_PIXELS and twice that; we treat the warning zone as
    an error too. Checking the size ourselves (rather than turning warnings into errors with
    warnings.catch_warnings) keeps this safe in threaded servers.
    """
    limit = Image.MAX_IMAGE_PIXELS
    pixels = img.size[0] * img.size[1]
    if limit is not None and pixels > limit:
        raise ImageError(
            f"decompression bomb refused: {img.size[0]}x{img.size[1]} = {pixels} pixels "
            f"is over the limit of {limit}"
        )


def to_mode(img: Image.Image, channels: int) -> Image.Image:
    """Convert a decoded image of any mode to "L" or "RGB" without clipping or black alpha."""
    target = "L" if channels == 1 else "RGB"
    if img.mode in _WIDE_MODES:
        img = _wide_to_8bit(img)
    elif img.mode == "P" or img.mode in _ALPHA_MODES or "transparency" in img.info:
        img = _flatten_on_white(img)
    elif img.mode not in ("L", "RGB"):
        img = img.convert("RGB")  # 1, CMYK, YCbCr, LAB, HSV, ...
    if img.mode != target:
        img = img.convert(target)
    return img


def _flatten_on_white(img: Image.Image) -> Image.Image:
    """Composite an image with (possible) transparency on a white background."""
    rgba = img.convert("RGBA")  # applies a palette's or tRNS transparency as alpha
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(white, rgba).convert("RGB")


def _wide_to_8bit(img: Image.Image) -> Image.Image:
    """Scale 16-bit, 32-bit integer or float grayscale to 0..255 (Pillow would clip)."""
    arr = np.asarray(img)
    if img.mode == "F":
        arr = arr.astype(np.float64)
        finite = arr[np.isfinite(arr)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        if lo >= 0 and hi <= 1:
            lo, hi = 0.0, 1.0  # a float image in 0..1
        return Image.fromarray(_stretch(np.nan_to_num(arr, nan=lo), lo, hi), "L")
    arr = arr.astype(np.int64)
    if img.mode.startswith("I;16") or (arr.size and arr.min() >= 0 and arr.max() <= 65535):
        # 16-bit samples: 65535 -> 255 with rounding, i.e. value / 257.
        return Image.fromarray(((arr * 255 + 32767) // 65535).astype(np.uint8), "L")
    return Image.fromarray(_stretch(arr.astype(np.float64), float(arr.min()), float(arr.max())), "L")


def _stretch(arr: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Map lo..hi linearly to 0..255 uint8."""
    span = hi - lo if hi > lo else 1.0
    return np.clip(np.rint((arr - lo) * (255.0 / span)), 0, 255).astype(np.uint8)


def to_pil(pixels: np.ndarray) -> Image.Image:
    """An (H, W, C) uint8 array (C 1 or 3), or an (H, W) one, as an "L" or "RGB" Pillow image."""
    return Image.fromarray(pixels[:, :, 0] if pixels.ndim == 3 and pixels.shape[2] == 1 else pixels)


def png_bytes(pixels: np.ndarray, compress_level: int | None = None) -> bytes:
    """An (H, W, C) or (H, W) uint8 array as PNG bytes; ``compress_level`` None is Pillow's default."""
    buf = io.BytesIO()
    options = {} if compress_level is None else {"compress_level": compress_level}
    to_pil(pixels).save(buf, "PNG", **options)
    return buf.getvalue()
