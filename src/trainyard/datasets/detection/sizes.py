"""An image's size as the build will decode it, from its header alone (no pixel decoded).

The build turns images upright by their EXIF orientation (datasets/images.py), so an
orientation that turns by 90 degrees swaps width and height here too.
"""

from __future__ import annotations

from pathlib import Path

from PIL import Image, UnidentifiedImageError

from trainyard.datasets.images import EXIF_ORIENTATION, SAFE_FORMATS, ImageError, check_pixel_count

_TURNED = {5, 6, 7, 8}  # EXIF orientations that transpose the image


def image_size(path: Path) -> tuple[int, int]:
    """(width, height) of the upright image; ImageError with a reason if it cannot be read."""
    try:
        with Image.open(path, formats=SAFE_FORMATS) as img:
            check_pixel_count(img)
            w, h = img.size
            turned = img.getexif().get(EXIF_ORIENTATION, 1) in _TURNED
    except ImageError:
        raise
    except Image.DecompressionBombError as e:
        raise ImageError(f"decompression bomb refused: {e}") from None
    except UnidentifiedImageError:
        raise ImageError("not an image, or an unsupported or damaged format") from None
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, TypeError) as e:
        raise ImageError(f"cannot read image: {e}") from None
    if w < 1 or h < 1:
        raise ImageError(f"image has no pixels ({w}x{h})")
    return (h, w) if turned else (w, h)
