"""load_image: every pixel format comes back as 8-bit L or RGB; bad files give reasons."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from trainyard.datasets.images import ImageError, load_image, load_image_bytes


def pixels(image: Image.Image) -> np.ndarray:
    return np.asarray(image).astype(int)


@pytest.mark.parametrize("suffix", [".png", ".tif"])
def test_16bit_grayscale_is_scaled_not_clipped(tmp_path: Path, suffix: str):
    values = np.array([[0, 257, 32896, 65535]], dtype=np.uint16)
    path = tmp_path / f"deep{suffix}"
    Image.fromarray(values).save(path)
    assert Image.open(path).mode.startswith("I")  # really a 16-bit file
    image = load_image(path, 1)
    assert image.mode == "L"
    assert pixels(image).tolist() == [[0, 1, 128, 255]]


def test_32bit_integer_mode_with_16bit_values(tmp_path: Path):
    path = tmp_path / "i32.tif"
    Image.fromarray(np.array([[0, 65535]], dtype=np.int32), "I").save(path)
    assert pixels(load_image(path, 1)).tolist() == [[0, 255]]


def test_palette_image(tmp_path: Path):
    img = Image.new("P", (4, 2))
    img.putpalette([10, 20, 30, 200, 100, 50] + [0] * 762)
    img.putpixel((0, 0), 1)
    img.save(tmp_path / "p.png")
    out = pixels(load_image(tmp_path / "p.png", 3))
    assert out[0, 0].tolist() == [200, 100, 50]
    assert out[1, 1].tolist() == [10, 20, 30]


def test_palette_transparency_becomes_white(tmp_path: Path):
    img = Image.new("P", (4, 2))
    img.putpalette([10, 20, 30, 200, 100, 50] + [0] * 762)
    img.putpixel((0, 0), 1)
    img.save(tmp_path / "pt.png", transparency=0)  # index 0 is transparent
    out = pixels(load_image(tmp_path / "pt.png", 3))
    assert out[1, 1].tolist() == [255, 255, 255]
    assert out[0, 0].tolist() == [200, 100, 50]


def test_rgba_is_composited_on_white(tmp_path: Path):
    rgba = np.zeros((1, 3, 4), np.uint8)
    rgba[0, 0] = [255, 0, 0, 0]  # fully transparent red -> white
    rgba[0, 1] = [0, 0, 255, 255]  # opaque blue
    rgba[0, 2] = [0, 0, 0, 128]  # half-transparent black -> mid grey
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    out = pixels(load_image(tmp_path / "a.png", 3))
    assert out[0, 0].tolist() == [255, 255, 255]
    assert out[0, 1].tolist() == [0, 0, 255]
    assert np.all(np.abs(out[0, 2] - 127) <= 1)


def test_la_is_composited_on_white(tmp_path: Path):
    la = np.array([[[0, 0], [0, 255], [100, 255]]], np.uint8)
    Image.fromarray(la, "LA").save(tmp_path / "la.png")
    image = load_image(tmp_path / "la.png", 1)
    assert image.mode == "L"
    assert pixels(image).tolist() == [[255, 0, 100]]


def test_cmyk_becomes_rgb(tmp_path: Path):
    Image.new("CMYK", (4, 4), (0, 255, 255, 0)).save(tmp_path / "c.tif")  # pure red in CMYK
    out = pixels(load_image(tmp_path / "c.tif", 3))
    assert out[0, 0].tolist() == [255, 0, 0]


def test_exif_orientation_6_is_rotated_upright(tmp_path: Path):
    # Stored 40 wide x 20 high, left half red; orientation 6 means "rotate 90 deg clockwise".
    stored = np.zeros((20, 40, 3), np.uint8)
    stored[:, :20] = [255, 0, 0]
    stored[:, 20:] = [0, 0, 255]
    img = Image.fromarray(stored)
    exif = img.getexif()
    exif[0x0112] = 6
    img.save(tmp_path / "rot.jpg", exif=exif, quality=95)
    image = load_image(tmp_path / "rot.jpg", 3)
    assert image.size == (20, 40)  # now portrait
    out = pixels(image)
    assert out[5, 10, 0] > 200 and out[5, 10, 2] < 60  # top is the old left: red
    assert out[35, 10, 2] > 200 and out[35, 10, 0] < 60  # bottom is the old right: blue


@pytest.mark.parametrize("suffix", [".bmp", ".tif", ".gif", ".ppm", ".webp"])
def test_other_formats(tmp_path: Path, suffix: str):
    array = np.full((6, 8, 3), 77, np.uint8)
    Image.fromarray(array).save(tmp_path / f"x{suffix}", **({"lossless": True} if suffix == ".webp" else {}))
    image = load_image(tmp_path / f"x{suffix}", 3)
    assert image.mode == "RGB" and image.size == (8, 6)
    assert np.all(np.abs(pixels(image) - 77) <= 2)


def test_rgb_to_one_channel(tmp_path: Path):
    Image.new("RGB", (3, 3), (100, 100, 100)).save(tmp_path / "g.png")
    image = load_image(tmp_path / "g.png", 1)
    assert image.mode == "L" and pixels(image)[0, 0] == 100


def test_grayscale_to_three_channels(tmp_path: Path):
    Image.new("L", (3, 3), 42).save(tmp_path / "l.png")
    assert pixels(load_image(tmp_path / "l.png", 3))[1, 1].tolist() == [42, 42, 42]


def _corrupt_png() -> bytes:
    """A PNG whose compressed pixel data is overwritten with junk (its header stays valid)."""
    import io

    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(buf, "PNG")
    data = bytearray(buf.getvalue())
    start = data.index(b"IDAT") + 4
    data[start + 10 : start + 400] = bytes(390)
    return bytes(data)


def _jpeg_bytes() -> bytes:
    import io

    buf = io.BytesIO()
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(buf, "JPEG")
    return buf.getvalue()


@pytest.mark.parametrize(
    "content, reason",
    [
        (b"", "empty file"),
        (b"hello, I am a text file\n", "not an image"),
        (b"\xff\xd8\xff\xe0" + bytes(range(256)) * 4, "not an image"),
        (_corrupt_png(), "corrupt"),
        (_jpeg_bytes()[:400], "truncated"),
    ],
    ids=["empty", "text", "bad-header", "corrupt", "truncated"],
)
def test_bad_files_raise_with_reason(tmp_path: Path, content: bytes, reason: str):
    path = tmp_path / "bad.img"
    path.write_bytes(content)
    with pytest.raises(ImageError, match=reason):
        load_image(path, 3)


def test_missing_file(tmp_path: Path):
    with pytest.raises(ImageError, match="not found"):
        load_image(tmp_path / "nope.png", 3)


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares a huge size but holds no pixel data: a decompression bomb's header."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def test_decompression_bomb_error(tmp_path: Path):
    path = tmp_path / "bomb.png"
    path.write_bytes(_png_header_only(40000, 40000))
    with pytest.raises(ImageError, match="decompression bomb"):
        load_image(path, 1)


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_decompression_bomb_warning_is_an_error_too(tmp_path: Path, monkeypatch):
    Image.new("L", (20, 20)).save(tmp_path / "big.png")
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 300)  # 400 px: Pillow would only warn
    with pytest.raises(ImageError, match="decompression bomb"):
        load_image(tmp_path / "big.png", 1)


def test_load_image_bytes(tmp_path: Path):
    assert load_image_bytes(_jpeg_bytes(), 3).size == (64, 64)
    with pytest.raises(ImageError):
        load_image_bytes(b"junk", 3)
