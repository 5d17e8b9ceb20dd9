"""Benchmark classify-one: the HTTP path against a direct call, and GoogLeNet's visualizations.

In one run, over a temporary home holding one model job (a GoogLeNet checkpoint at 224x224
crops of 256x256 images, random weights: the cost does not depend on them):

- a warm ``POST /api/models/{id}/classify`` of one 256x256 JPEG through a real uvicorn server
  (in a thread of this process, so both sides use the very same cached loaded model), against
  calling that loaded model directly (preprocess, forward, top-5) on the same decoded image.
  Both run --rounds times, alternating, and the medians are compared; the aim is a ratio of at
  most 1.15;
- classify-one with visualizations and the Grad-CAM map (``?visualize=true``), over HTTP and
  directly; the aim is under 3 seconds on the CPU.

    python bench/inference/classify.py                     # GoogLeNet, 30 rounds
    python bench/inference/classify.py --network lenet --size 28 --stored 28   # the overhead on a tiny net
    python bench/inference/classify.py --many 100000       # also a classify-many job of 100,000 list lines

With ``--many N``, a classify-many job (the real job subprocess) classifies a list of N lines
(repeating a few generated JPEGs) with the same model; its images/s and the job process's peak
memory (RSS, sampled) at N/10 and N images are printed: flat memory means about equal peaks.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

import httpx
import numpy as np
import torch
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ helpers when run from a checkout
from tests.live_server import serving  # noqa: E402  (after the path is set)


def photo_jpeg(size: int, seed: int = 0) -> bytes:
    """A photo-like JPEG: a smooth random colour field plus noise."""
    rng = np.random.default_rng(seed)
    coarse = Image.fromarray(rng.integers(0, 256, (5, 7, 3), dtype=np.uint8))
    smooth = np.asarray(coarse.resize((size, size), Image.Resampling.BICUBIC), dtype=np.int16)
    buf = io.BytesIO()
    noisy = np.clip(smooth + rng.normal(0, 6, smooth.shape), 0, 255).astype(np.uint8)
    Image.fromarray(noisy).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def make_model_job(ctx, network: str, stored: int, crop: int | None, classes: int) -> str:
    from tests.inference.checkpoints import write_checkpoint

    job = ctx.manager.create("model", f"{network} bench", {"name": f"{network} bench"}, needs={"pool": "cpu"},
                             foreground=True)
    ctx.store.update_job(job.id, status="done")  # no training: the scheduler leaves it alone
    write_checkpoint(ctx.manager.folder(job.id).checkpoints / "epoch-0001.pt", network=network,
                     classes=[f"class_{i:02d}" for i in range(classes)], stored=stored, crop=crop)
    return job.id


def many_job(ctx, model_id: str, root: Path, count: int, stored: int) -> dict:
    """Run a classify-many job over a list of ``count`` lines; images/s and peak RSS of the job."""
    import psutil

    from trainyard.jobs.kinds.inference import create_inference_job

    images = root / "many"
    images.mkdir(parents=True, exist_ok=True)
    for i in range(8):
        (images / f"{i}.jpg").write_bytes(photo_jpeg(stored, seed=i))
    listing = root / f"list-{count}.txt"
    listing.write_text("".join(f"many/{i % 8}.jpg class_{i % 3:02d}\n" for i in range(count)))
    job = create_inference_job(ctx, "classify-many", model_id, list_file=str(listing), foreground=True)
    peak, started = 0, time.perf_counter()
    while True:
        ctx.manager.tick(only=job.id)
        job = ctx.manager.get(job.id)
        if job.pid and job.status == "running":
            try:
                peak = max(peak, psutil.Process(job.pid).memory_info().rss)
            except psutil.NoSuchProcess:
                pass
        if job.status in ("done", "failed", "aborted"):
            break
        time.sleep(0.05)
    assert job.status == "done", job.error
    seconds = time.perf_counter() - started
    return {"images": count, "seconds": round(seconds, 1), "images_per_s": round(count / seconds, 1),
            "peak_rss_mb": round(peak / 2**20, 1)}


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="googlenet")
    parser.add_argument("--stored", type=int, default=256, help="the dataset's image size")
    parser.add_argument("--size", type=int, default=224, help="the crop the network sees")
    parser.add_argument("--classes", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--vis-rounds", type=int, default=5)
    parser.add_argument("--many", type=int, default=0, help="also run a classify-many job of this many images")
    args = parser.parse_args()

    from trainyard.inference.classify import decode, prepare
    from trainyard.inference.loader import load_model, model_checkpoint
    from trainyard.inference.responses import classify_named
    from trainyard.inference.visualize import visualize
    from trainyard.jobs.context import open_context
    from trainyard.jobs.scheduling.resources import Pools
    from trainyard.settings import Settings
    from trainyard.web.app import create_app

    home = Path(tempfile.mkdtemp(prefix="trainyard-bench-classify-"))
    settings = Settings(home=home / "home", data_roots=[home / "data"])
    ctx = open_context(settings, pools=Pools(1, 1, []))
    crop = args.size if args.size != args.stored else None
    model_id = make_model_job(ctx, args.network, args.stored, crop, args.classes)
    server = ExitStack()  # the live server runs until the timings are taken
    app = create_app(settings, pools=Pools(1, 1, []))
    url = server.enter_context(serving(app))
    data = photo_jpeg(args.stored)
    client = httpx.Client(base_url=url, timeout=120, headers={"Authorization": f"Bearer {app.state.auth_token}"})

    def http(visualize: bool = False) -> dict:
        response = client.post(f"/api/models/{model_id}/classify", params={"visualize": visualize},
                               files=[("images", ("photo.jpg", data, "image/jpeg"))])
        response.raise_for_status()
        return response.json()

    loaded = load_model(model_checkpoint(ctx.manager.folder(model_id).path)[1])  # the server's cached object
    image = decode(data, loaded)
    direct = lambda: classify_named(loaded, [("photo.jpg", image)], top=5)  # noqa: E731
    for _ in range(3):  # warm: the server loads the model, oneDNN picks its kernels
        http(), direct()
    assert http()["results"][0]["predictions"] == direct()[0]["predictions"]

    # The direct call runs on the server's inference thread too (timed there), so both sides
    # use the same thread and OpenMP team; only the HTTP path's own work differs.
    from trainyard.web.routers.inference import INFERENCE

    http_s, direct_s = [], []
    for _ in range(args.rounds):
        http_s.append(timed(http))
        direct_s.append(INFERENCE.submit(timed, direct).result())
    http_ms, direct_ms = 1000 * statistics.median(http_s), 1000 * statistics.median(direct_s)

    http(True)  # warm the hooked pass too
    vis_http = [timed(lambda: http(True)) for _ in range(args.vis_rounds)]
    vis_direct = [timed(lambda: visualize(loaded, prepare(loaded, [image]), saliency=True))
                  for _ in range(args.vis_rounds)]
    layers = len(http(True)["results"][0]["visualization"]["layers"])
    payload = len(client.post(f"/api/models/{model_id}/classify", params={"visualize": True},
                              files=[("images", ("photo.jpg", data, "image/jpeg"))]).content)
    server.close()

    report = {
        "network": args.network, "input": f"{args.size}x{args.size}", "threads": torch.get_num_threads(),
        "classify_http_ms": round(http_ms, 2), "classify_direct_ms": round(direct_ms, 2),
        "http_over_direct": round(http_ms / direct_ms, 3), "aim_ratio": 1.15,
        "http_overhead_ms": round(http_ms - direct_ms, 2), "load_average": round(os.getloadavg()[0], 2),
        "visualize_http_s": round(statistics.median(vis_http), 3),
        "visualize_direct_s": round(statistics.median(vis_direct), 3), "aim_visualize_s": 3.0,
        "layers": layers, "visualize_response_mb": round(payload / 2**20, 2),
    }
    print(f"{args.network} {args.size}x{args.size} on the CPU ({torch.get_num_threads()} threads), "
          f"median of {args.rounds}:", file=sys.stderr)
    print(f"  classify one, HTTP   {http_ms:8.1f} ms", file=sys.stderr)
    print(f"  classify one, direct {direct_ms:8.1f} ms   ratio {http_ms / direct_ms:.3f} (aim <= 1.15); "
          f"load average {report['load_average']} on {os.cpu_count()} cores", file=sys.stderr)
    print(f"  with visualizations + Grad-CAM: HTTP {report['visualize_http_s']:.2f} s, direct "
          f"{report['visualize_direct_s']:.2f} s (aim < 3 s); {layers} layers, {report['visualize_response_mb']} MiB",
          file=sys.stderr)
    if args.many:
        report["many"] = [many_job(ctx, model_id, home / "data", n, args.stored) for n in (args.many // 10, args.many)]
        for run in report["many"]:
            print(f"  classify-many job, {run['images']} images: {run['images_per_s']} images/s, "
                  f"job peak RSS {run['peak_rss_mb']} MiB", file=sys.stderr)
    print(json.dumps(report))


if __name__ == "__main__":
    main()
