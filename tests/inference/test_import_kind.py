"""An archive of images offered as a model says what it is, before how big it is (issue 31.9)."""

from __future__ import annotations

import io
import zipfile

import pytest
from PIL import Image

from trainyard.inference.archive_import import ArchiveImportError, read_model_archive


def _dataset_zip(path, images: int):
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4)).save(buffer, "PNG")
    with zipfile.ZipFile(path, "w") as archive:
        for i in range(images):
            archive.writestr(f"flowers/{'rose' if i % 2 else 'tulip'}/{i}.png", buffer.getvalue())
    return path


@pytest.mark.parametrize("images", [150, 12])
def test_a_dataset_zip_is_told_where_datasets_are_made(tmp_path, images):
    archive = _dataset_zip(tmp_path / "flowers.zip", images)
    with pytest.raises(ArchiveImportError) as refused:
        read_model_archive(archive, tmp_path / "work")
    message = str(refused.value)
    assert message.startswith("not a trainyard model archive") and "more than 100 members" not in message
    assert "New dataset → Upload" in message and "trainyard dataset create" in message
    assert not any((tmp_path / "work").glob("**/*.png"))  # refused before anything was unpacked
