"""The code that runs in the build's decode processes: load, resize (and encode) images.

Kept apart from build.py so that a spawned worker imports only numpy and Pillow, not the
build's own dependencies, and starts quickly.
"""

from __future__ import annotations

import signal
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from multiprocessing.shared_memory import SharedMemory

import numpy as np
from PIL import Image

from trainyard.core.environment import die_with_parent
from trainyard.datasets.deep import DTYPES, is_deep, load_array, resize_array
from trainyard.datasets.detection.geometry import fit_image
from trainyard.datasets.images import ImageError, load_image
from trainyard.datasets.memring import attach
from trainyard.datasets.reduced import load_resized
from trainyard.datasets.resize_plans import NOISY_MODES
from trainyard.datasets.storage import encode_image


@dataclass(frozen=True)
class Geometry:
    width: int
    height: int
    channels: int
    resize: str
    encoding: str
    depth: int = 8  # bits per sample (datasets/deep.py's DTYPES)
    # An 8-bit dataset told so by its user: 16-bit files are scaled down. Otherwise (the depth
    # was told by the first files) a 16-bit file is skipped rather than silently cut to 8 bits.
    convert_deep: bool = False

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(DTYPES[self.depth])

    @property
    def full_depth(self) -> bool:
        """Whether images go through datasets/deep.py (arrays) instead of the 8-bit Pillow path."""
        return self.depth != 8 or self.channels not in (1, 3)

    @property
    def image_bytes(self) -> int:
        return self.width * self.height * self.channels * self.dtype.itemsize


# Per image: (pixels, encoded bytes or None, None) or (None, None, reason). pixels is None
# too when the worker wrote them into shared memory instead.
Outcome = tuple[np.ndarray | None, bytes | None, str | None]

# The memory of the rings this worker has attached to, by name (attach once, not per task).
_attached: dict[str, memoryview] = {}


def init_worker(parent_pid: int | None = None) -> None:
    # Ctrl-C goes to the whole process group: let the parent decide, not every worker.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A forked worker inherits the job's SIGTERM handler; a worker should simply stop.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # load_image enforces the pixel limit itself; the warning would only repeat it.
    warnings.simplefilter("ignore", Image.DecompressionBombWarning)
    if parent_pid is not None:
        die_with_parent(parent_pid)


def process_chunk(geometry: Geometry, items: Sequence[tuple[str, tuple[int, ...]]],
                  shm_name: str | None = None, offset: int = 0) -> list[Outcome]:
    """Load and resize each (path, noise seed). Module level, so spawn can pickle it.

    With ``shm_name``, image j's pixels go to the shared block at ``offset`` + j images and the
    outcome carries None instead of the array.
    """
    ring = _ring(geometry, len(items), shm_name, offset) if shm_name else None
    out: list[Outcome] = []
    for j, (path, seed) in enumerate(items):
        try:
            pixels = _load(geometry, path, seed)
        except ImageError as e:
            out.append((None, None, str(e)))
            continue
        except Exception as e:  # a bug or an exotic file must not sink the whole build
            out.append((None, None, f"cannot process image: {type(e).__name__}: {e}"))
            continue
        encoded = None if geometry.encoding == "none" else encode_image(pixels, geometry.encoding)
        if ring is not None:
            ring[j] = pixels  # the parent reads it from shared memory: don't pickle it back
            out.append((None, encoded, None))
        else:
            out.append((pixels, encoded, None))
    return out


def _load(geometry: Geometry, path: str, seed: tuple[int, ...]) -> np.ndarray:
    g = geometry
    if g.resize == "pad":  # detection's letterbox, geometry its boxes share
        return fit_image(load_image(path, g.channels), g.width, g.height, g.resize)
    # Only fill and half_crop draw noise; a generator costs more to make than a small image
    # does to decode, so the other modes never make one.
    rng = np.random.default_rng(seed) if g.resize in NOISY_MODES else None
    if g.full_depth:
        return resize_array(load_array(path, g.channels, g.depth), g.width, g.height, g.resize, rng)
    return load_resized(path, g.channels, g.width, g.height, g.resize, rng,
                        before=None if g.convert_deep else _refuse_deep)


def _refuse_deep(img: Image.Image) -> None:
    """An 8-bit dataset whose depth the first files told: a 16-bit file would lose its depth."""
    if is_deep(img):
        raise ImageError("16-bit image in a dataset built at 8 bits (its first files were 8-bit): "
                         "build with --depth 16 to keep the depth, or --depth 8 to convert")


def _ring(geometry: Geometry, n: int, shm_name: str, offset: int) -> np.ndarray | None:
    """The ring's slot, or None where this worker cannot reach the ring (its pixels then go
    back pickled, which the pipeline takes as well)."""
    if shm_name not in _attached:
        try:  # a memfd by descriptor (datasets/memring.py); a named block as before otherwise
            _attached[shm_name] = attach(shm_name) if shm_name.startswith("memfd:") else _named(shm_name)
        except OSError:
            return None
    return np.ndarray((n, geometry.height, geometry.width, geometry.channels), geometry.dtype,
                      buffer=_attached[shm_name], offset=offset)


def _named(name: str) -> memoryview:
    """A named POSIX block's memory (a ring made before rings were memfds)."""
    buf = SharedMemory(name=name).buf
    assert buf is not None  # an attached block always has its buffer
    return buf
