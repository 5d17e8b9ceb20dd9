"""The one way images become network input: training, validation, classify and export share it.

Convention (stored in checkpoints as ``scale: "0..1"``): a uint8 image (H, W, C) becomes a float
(C, H, W) tensor in 0..1, is cropped to ``crop`` x ``crop`` (random in training, central
otherwise), augmented (training only, on 0..1 values), and then has the dataset mean, also in
0..1 units, subtracted: the mean image (centre-cropped like the images), its per-channel
average ("pixel") or nothing ("none"). A network fine-tuned from published weights also divides
by their per-channel ``std`` (its mean is then the weights' mean, stored as a constant image
with mean mode "pixel"), so its input is what the weights were trained on.

`normalize_batch` is the tensor part: the batch loader calls it for every batch (training
passes its random crop and augmentation in, training/augment.py). Images given at inference
time go through inputs.py, the same arithmetic in numpy (equal to validation's bit for bit),
with the constants `input_arrays` makes here, so classifying an image gives exactly what
validation gave for it. `mean_image` gives a checkpoint's mean image for export.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import torch
from PIL import Image

from trainyard.artifact.inputs import center_window, prepare_images
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.core.vocabulary import MEAN_MODES

# The value of a full-intensity sample of each stored dtype (datasets/deep.py's DTYPES); int32
# holds 16-bit samples widened for the device (training/data.py), uint16 those that were not.
FULL_SCALE = {torch.uint8: 255.0, torch.uint16: 65535.0, torch.int32: 65535.0}

__all__ = ["FULL_SCALE", "center_crop_batch", "input_arrays", "input_mean", "input_std", "mean_image", "mean_tensor",
           "normalize_batch", "preprocess_images", "std_tensor"]


def mean_tensor(
    mean_hwc: np.ndarray | torch.Tensor | None, mode: str, crop: int | None, device: torch.device | str = "cpu"
) -> torch.Tensor | None:
    """The mean to subtract, in 0..1 units: (1, C, h, w) for "image", (1, C, 1, 1) for "pixel".

    ``mean_hwc`` is the train mean image (H, W, C) in 0..255 (mean.npy). With a crop the mean
    image is centre-cropped: the same window validation uses.
    """
    if mode not in MEAN_MODES:
        raise ValueError(f"unknown mean mode {mode!r}; valid: {', '.join(MEAN_MODES)}")
    if mode == "none" or mean_hwc is None:
        return None
    mean = torch.as_tensor(np.asarray(mean_hwc, dtype=np.float32)).permute(2, 0, 1)[None]  # 1,C,H,W
    if mode == "pixel":
        mean = mean.mean(dim=(2, 3), keepdim=True)
    elif crop:
        mean = center_crop_batch(mean, crop)
    return (mean / 255.0).contiguous().to(device)


def center_crop_batch(x: torch.Tensor, crop: int) -> torch.Tensor:
    """The central crop x crop window (Caffe's offsets: (size - crop) // 2), as a view, any dtype."""
    rows, cols = center_window(x.shape[-2], x.shape[-1], crop)
    return x[..., rows, cols]


def std_tensor(std: Sequence[float] | None, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """The per-channel std to divide by, (1, C, 1, 1), or None when the input is not scaled."""
    if not std:
        return None
    return torch.tensor([float(s) for s in std], dtype=torch.float32, device=device).view(1, -1, 1, 1)


def normalize_batch(
    images: torch.Tensor,
    mean: torch.Tensor | None,
    crop: int | None,
    *,
    random_crop: Callable[[torch.Tensor, int], torch.Tensor] | None = None,
    on_pixels: Callable[[torch.Tensor], torch.Tensor] | None = None,
    augment: Callable[[torch.Tensor], torch.Tensor] | None = None,
    channels_last: bool = False,
    std: torch.Tensor | None = None,
) -> torch.Tensor:
    """uint8 (N, H, W, C) images on their device -> float (N, C, h, w) network input.

    ``mean`` comes from `mean_tensor`. Validation and inference pass nothing else: the crop is
    central. Training passes ``random_crop`` (x, crop) -> window and ``augment`` (0..1 floats
    in and out) and ``on_pixels`` (the cropped uint8 (N, C, h, w) batch in and out, for what
    commutes with the conversion, such as flips, done on 4x fewer bytes), training/augment.py's
    `training_batch`.
    """
    x = images.permute(0, 3, 1, 2)  # a view: NCHW shape with channels-last strides
    if crop:
        # Crop the uint8 pixels first: fewer bytes to convert and augment.
        x = random_crop(x, crop) if random_crop is not None else center_crop_batch(x, crop)
    if on_pixels is not None:
        x = on_pixels(x)
    # The float copy takes the layout the network gets: NHWC strides stay (channels_last), or
    # plain NCHW ones. With one channel a permuted NHWC view passes as NCHW-contiguous, yet a
    # convolution answers it channels_last, which `x.view(n, -1)` after it cannot flatten.
    layout = torch.channels_last if channels_last else torch.contiguous_format
    # 0..1 of the full scale: 255 for uint8, 65535 for a 16-bit dataset's uint16 (inputs.py's too).
    x = x.to(torch.float32, memory_format=layout).mul_(1.0 / FULL_SCALE[images.dtype])
    if augment is not None:
        x = augment(x)
    # x is this call's own float copy: subtract and divide in place. A new 4-d tensor for each
    # (as ``x - mean`` makes) costs an allocation and a pass over fresh pages: a third of the
    # CPU feed's time at 32x32. The same arithmetic, so the same bits as inputs.py.
    if mean is not None:
        x = x.sub_(mean) if mean.dtype == x.dtype else x - mean
    if std is not None:  # from `std_tensor`
        x = x.div_(std) if std.dtype == x.dtype else x / std
    x = x.contiguous(memory_format=layout)
    if not channels_last and x.stride() != _plain_strides(x.shape):  # one channel: see above
        x = x.clone(memory_format=torch.contiguous_format)
    return x


def _plain_strides(shape: torch.Size) -> tuple[int, ...]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(step)
        step *= size
    return tuple(reversed(strides))


def input_mean(preprocess: Preprocessing, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """`mean_tensor` of a checkpoint's preprocessing."""
    return mean_tensor(preprocess.mean, preprocess.mean_mode, preprocess.crop, device)


def input_std(preprocess: Preprocessing, device: torch.device | str = "cpu") -> torch.Tensor | None:
    """`std_tensor` of a checkpoint's preprocessing (None for most models)."""
    return std_tensor(preprocess.std, device)


def input_arrays(preprocess: Preprocessing) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The mean and std of a checkpoint's preprocessing as inputs.py takes them: made by the
    very functions training uses, so the constants are validation's to the last bit."""
    mean, std = input_mean(preprocess), input_std(preprocess)
    return (None if mean is None else mean.numpy(), None if std is None else std.numpy())


def preprocess_images(
    images: Sequence[Image.Image], preprocess: Preprocessing, device: torch.device | str = "cpu"
) -> torch.Tensor:
    """PIL images -> the (N, C, h, w) float batch a checkpoint's network expects."""
    mean, std = input_arrays(preprocess)
    return torch.from_numpy(prepare_images(images, preprocess, mean, std).inputs).to(device)


def mean_image(prep: Preprocessing) -> np.ndarray:
    """The mean image (H, W, C) float32 in 0..255; zeros when the model subtracts none."""
    if prep.mean is None:
        return np.zeros(prep.stored_shape, np.float32)
    mean = prep.mean
    return np.asarray(mean.cpu().numpy() if isinstance(mean, torch.Tensor) else mean, dtype=np.float32)
