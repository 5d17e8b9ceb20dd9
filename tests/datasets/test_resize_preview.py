"""preview_resize: bytes in, PNG of the target size out."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from trainyard.datasets.images import ImageError
from trainyard.datasets.preview import preview_resize


def jpeg(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), (30, 60, 90)).save(buf, "JPEG")
    return buf.getvalue()


@pytest.mark.parametrize("channels, mode", [(3, "fill"), (1, "crop")])
def test_preview_is_a_png_of_the_target_size(channels, mode):
    data = preview_resize(jpeg(100, 50), 40, 30, channels, mode)
    image = Image.open(io.BytesIO(data))
    assert image.format == "PNG" and image.size == (40, 30)
    assert image.mode == ("RGB" if channels == 3 else "L")
    assert data == preview_resize(jpeg(100, 50), 40, 30, channels, mode)  # seeded noise


def test_preview_errors():
    with pytest.raises(ImageError):
        preview_resize(b"nope", 10, 10, 3, "squash")
    with pytest.raises(ValueError, match="valid modes"):
        preview_resize(jpeg(10, 10), 5, 6, 3, "zoom")
