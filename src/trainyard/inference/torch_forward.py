"""The PyTorch side of inference: a checkpoint read into a network, and its forward pass.

Used where ONNX Runtime does not answer: on a GPU, for the layer views and Grad-CAM (which hook
the network's modules), and as the fallback when an export fails. Only this module and the
visualisations import torch; loader.py imports this one on first need.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from trainyard.artifact.checkpoint import CheckpointError, build_model_from_checkpoint, load_checkpoint
from trainyard.artifact.normalize import input_arrays
from trainyard.artifact.preprocessing import Preprocessing
from trainyard.inference.snapshots import InferenceError


def read_checkpoint(path: Path) -> dict:
    """The checkpoint at ``path``; InferenceError (one line) when it is not a usable one."""
    try:
        return load_checkpoint(path)
    except CheckpointError as exc:
        raise InferenceError(str(exc)) from None
    except Exception as exc:  # not a torch file, or one weights_only refuses to unpickle
        raise InferenceError(f"{path.name} is not a readable checkpoint: {exc}") from None


def build_network(checkpoint: dict, device: str) -> nn.Module:
    """The checkpoint's network with its weights, in eval mode, on ``device``."""
    return build_model_from_checkpoint(checkpoint).to(torch.device(device))


def constants(checkpoint: dict) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The mean and std the checkpoint's inputs are normalised with (artifact/inputs.py)."""
    return input_arrays(Preprocessing.of_checkpoint(checkpoint))


def logits_of(output: object) -> torch.Tensor:
    """The class scores of a forward pass (a network may return extra heads in a tuple)."""
    if isinstance(output, (tuple, list)):
        output = output[0]
    if not isinstance(output, torch.Tensor) or output.ndim != 2:
        raise InferenceError("the network's output is not an (N, classes) tensor of scores")
    return output


def to_device(inputs: np.ndarray, device: str) -> torch.Tensor:
    """A prepared numpy batch as a tensor on the model's device."""
    return torch.from_numpy(inputs).to(torch.device(device))


def torch_logits(model: nn.Module, inputs: np.ndarray, device: str) -> np.ndarray:
    """(N, classes) float32 logits of PyTorch's forward pass, on the CPU."""
    with torch.inference_mode():
        return logits_of(model(to_device(inputs, device))).float().cpu().numpy()
