"""Transferred weights on new inputs: BatchNorm statistics recomputed on the new data, frozen
BatchNorm kept in eval mode, and a fine-tune that is far above chance after its first epoch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

from trainyard.training.transfer import keep_frozen_batchnorm_in_eval, recalibrate_batchnorm


class Loader:
    """The part of BatchLoader recalibration uses."""

    def __init__(self, x: torch.Tensor, batch_size: int):
        self.x, self.batch_size = x, batch_size

    def batches(self, epoch: int, start: int, stop: int):
        for i in range(start, min(stop, -(-len(self.x) // self.batch_size))):
            chunk = self.x[i * self.batch_size:(i + 1) * self.batch_size]
            yield chunk, torch.zeros(len(chunk), dtype=torch.long)


def small_net() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Dropout(0.5),
                         nn.Flatten(), nn.Linear(4 * 6 * 6, 2))


def test_recalibration_gives_the_new_datas_statistics():
    net = small_net()
    bn = net[1]
    bn.running_mean.fill_(5.0)  # statistics made for other inputs
    bn.running_var.fill_(100.0)
    x = torch.rand(48, 3, 8, 8) * 3 + 1  # three equal batches: their average is the whole set's
    state = torch.get_rng_state()
    assert recalibrate_batchnorm(net, Loader(x, 16), max_images=1000) == 48
    features = net[0](x).detach()
    assert torch.allclose(bn.running_mean, features.mean(dim=(0, 2, 3)), atol=1e-4)
    # the cumulative average of per-batch unbiased variances: close to the whole set's
    assert torch.allclose(bn.running_var, features.var(dim=(0, 2, 3)), rtol=0.1)
    assert bn.momentum == 0.1 and net.training  # as they were
    assert torch.equal(torch.get_rng_state(), state)  # dropout stayed off: no random numbers drawn
    # In eval mode the layer now normalises this data to about zero mean, unit variance.
    net.eval()
    normed = net[1](features)
    assert normed.mean().abs() < 0.05 and (normed.std() - 1).abs() < 0.1


def test_recalibration_stops_at_its_image_budget():
    net = small_net()
    assert recalibrate_batchnorm(net, Loader(torch.rand(100, 3, 8, 8), 16), max_images=20) == 32  # two batches


def test_a_frozen_batchnorm_layer_stays_in_eval_mode_while_the_rest_trains():
    net = small_net()
    for p in net[:2].parameters():
        p.requires_grad_(False)
    assert keep_frozen_batchnorm_in_eval(net) == 1
    before = net[1].running_mean.clone()
    net.train()
    x = torch.rand(8, 3, 8, 8)
    net(x)
    assert torch.equal(net[1].running_mean, before)  # training does not move frozen statistics
    torch.manual_seed(1)
    trained = net[:3](x)
    net.eval()
    assert torch.equal(trained, net[:3](x))  # it normalises in training as in validation


def test_batchnorm_with_trainable_parameters_keeps_training():
    net = small_net()
    assert keep_frozen_batchnorm_in_eval(net) == 0
    net.train()
    before = net[1].running_mean.clone()
    net(torch.rand(8, 3, 8, 8) + 1)
    assert not torch.equal(net[1].running_mean, before)


def pretrain_resnet18(folder, path, epochs: int = 6) -> float:
    """torchvision's ResNet-18 trained on ``folder``'s classes by a hand loop, inputs
    ``(x - 0.5) / 0.25``; its state dict saved to ``path``; its training top-1."""
    import torchvision
    from PIL import Image

    files = sorted(folder.glob("*/*.png"))
    classes = sorted({f.parent.name for f in files})
    x = torch.from_numpy(np.stack([np.asarray(Image.open(f).convert("RGB").resize((32, 32))) for f in files]))
    x = (x.permute(0, 3, 1, 2).float() / 255 - 0.5) / 0.25
    y = torch.tensor([classes.index(f.parent.name) for f in files])
    torch.manual_seed(0)
    model = torchvision.models.resnet18(num_classes=len(classes))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.002)
    for _ in range(epochs):
        model.train()
        for index in torch.randperm(len(x)).split(16):
            loss = nn.functional.cross_entropy(model(x[index]), y[index])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    torch.save(model.state_dict(), path)
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


@pytest.mark.slow
def test_a_fine_tune_is_far_above_chance_after_its_first_epoch(ctx, settings, tmp_path):
    """Known normalisation (fed as trained) and unknown (BatchNorm recalibrated): either way the
    first validation is far above chance (25 %), where it sat at chance for epochs before.

    The recipe is the issue's (SGD, lr 0.01, batch 16). On this data a hand loop with BatchNorm
    refreshed the same way gets 64-82 % over seeds 0-4, trainyard 66-88 %. With half the images
    and Adam at batch 4 the hand loop got 43-62 %: that bar measured the recipe, not trainyard."""
    from tests.training.test_finetune import shapes
    from trainyard.artifact.checkpoint import checkpoint_for_epoch, load_checkpoint
    from trainyard.datasets.spec import DatasetSpec
    from trainyard.jobs.kinds.dataset import create_dataset_job
    from trainyard.jobs.kinds.training import TrainRequest, create_model_jobs
    from trainyard.weights.store import WeightsStore

    top1 = pretrain_resnet18(shapes(tmp_path / "a", 30, seed=1), tmp_path / "shapes.pth")
    assert top1 > 0.7, top1  # a useful pretraining, or the test shows nothing
    store = WeightsStore.from_settings(settings)
    store.import_file("known", tmp_path / "shapes.pth", "resnet18", "0.5", "0.25")
    store.import_file("unknown", tmp_path / "shapes.pth", "resnet18")
    names = ["ball", "box", "wedge", "x"]
    folder = shapes(settings.data_roots[0] / "b", 60, seed=2, names=names)
    made = create_dataset_job(ctx, DatasetSpec(name="few", train_folder=str(folder), width=32, height=32,
                                               channels=3, val_percent=50), foreground=True)
    made = ctx.manager.run_foreground(made.id, poll_s=0.05)
    assert made.status == "done", made.error
    small = made.id
    for entry, said in (("known", "input normalised as the pretrained weights expect: mean [0.5, 0.5, 0.5], "
                                  "std [0.25, 0.25, 0.25]"),
                        ("unknown", "BatchNorm running statistics recomputed on 120 training images before the "
                                    "first epoch; the weights' input normalisation is unknown")):
        settings_ = {"epochs": 1, "batch_size": 16, "seed": 0, "solver": "sgd",
                     "lr": {"policy": "fixed", "base_lr": 0.01}}
        [job] = create_model_jobs(ctx, TrainRequest(name=entry, datasets=[small], networks=["resnet18"],
                                                    pretrained=entry, settings=settings_), foreground=True)
        job = ctx.manager.run_foreground(job.id, poll_s=0.05)
        assert job.status == "done", job.error
        folder = ctx.manager.folder(job.id)
        ckpt = load_checkpoint(checkpoint_for_epoch(folder.path))
        [(_, accuracy)] = ckpt["metrics"]["val_accuracy"]
        assert accuracy >= 50, (entry, accuracy)  # twice chance; it sat at chance before
        assert said in folder.log.read_text()
        if entry == "known":  # recorded for validation, classify, evaluate and the archive
            assert ckpt["preprocess"]["std"] == [0.25, 0.25, 0.25]
