"""The device JPEG decode path of the loader (nvJPEG on CUDA), run here with torchvision's CPU
decoder through the same code: batches like the CPU path's, a fallback when it fails, and
nothing for other encodings or devices."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from trainyard.datasets.split_writer import SplitWriter
from trainyard.datasets.storage import SplitReader
from trainyard.training import device_decode
from trainyard.training.data import BatchLoader, decode_threads


def jpeg_split(folder, n=20, channels=3) -> SplitReader:
    writer = SplitWriter(folder, 24, 32, channels, "jpeg")
    rng = np.random.default_rng(0)
    for i in range(n):
        smooth = np.kron(rng.integers(0, 256, (3, 4, channels)), np.ones((8, 8, 1))).astype(np.uint8)
        writer.append(smooth, i % 2)
    writer.close()
    return SplitReader(folder)


def batches(loader: BatchLoader) -> list[torch.Tensor]:
    return [x for x, _ in loader.batches(0)]


@pytest.mark.parametrize("channels", [1, 3])
def test_device_path_gives_the_cpu_path_s_batches(tmp_path, channels):
    reader = jpeg_split(tmp_path / "s", channels=channels)
    ours = batches(BatchLoader(reader, 8, device_decode=True))
    cpu = batches(BatchLoader(reader, 8))
    assert [b.shape for b in ours] == [b.shape for b in cpu]
    for a, b in zip(ours, cpu):
        assert (a - b).abs().max() * 255 <= 2  # both libjpeg; a grey level or two at most


def test_a_failing_device_decoder_falls_back_to_the_cpu(tmp_path, monkeypatch):
    reader = jpeg_split(tmp_path / "s")

    def broken(reader, device, force=False):
        def decode(indices):
            raise RuntimeError("no nvJPEG here")
        return decode

    monkeypatch.setattr("trainyard.training.data.device_decoder", broken)
    loader = BatchLoader(reader, 8, device_decode=True)
    assert all(torch.equal(a, b) for a, b in zip(batches(loader), batches(BatchLoader(reader, 8))))
    assert loader._device_decode.decoder is None  # tried once, then the CPU


def test_only_jpeg_on_cuda_by_default(tmp_path):
    reader = jpeg_split(tmp_path / "s")
    assert device_decode.device_decoder(reader, torch.device("cpu")) is None
    raw = SplitWriter(tmp_path / "raw", 8, 8, 3, "none")
    raw.append(np.zeros((8, 8, 3), np.uint8), 0)
    raw.close()
    assert device_decode.device_decoder(SplitReader(tmp_path / "raw"), torch.device("cuda"), force=True) is None


def test_decode_threads_share_a_node_between_ranks(monkeypatch):
    monkeypatch.setattr("trainyard.training.data.granted_cpus", lambda use_omp=True: 16)
    monkeypatch.setattr("os.cpu_count", lambda: 16)
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")
    assert decode_threads() == 4  # four ranks on all 16 cores: 4 each
    monkeypatch.setattr("trainyard.training.data.granted_cpus", lambda use_omp=True: 6)
    assert decode_threads() == 6  # a rank pinned to 6 cores uses them all
    monkeypatch.delenv("LOCAL_WORLD_SIZE")
    monkeypatch.setattr("trainyard.training.data.granted_cpus", lambda use_omp=True: 16)
    assert decode_threads() == 16


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (nvJPEG)")
def test_nvjpeg_batches_on_cuda(tmp_path):
    reader = jpeg_split(tmp_path / "s")
    loader = BatchLoader(reader, 8, device="cuda")
    assert loader._device_decode.decoder is not None
    for a, b in zip(batches(loader), batches(BatchLoader(reader, 8))):
        assert a.is_cuda and (a.cpu() - b).abs().max() * 255 <= 3
