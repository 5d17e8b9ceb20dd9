"""Replay the issue-13 adversarial set against a live server on loopback and print the figures.

Starts ``trainyard serve`` as a subprocess in a temporary home (so its RSS can be watched and it
can be killed with SIGKILL), then runs bounded loops of:

- malformed input: deep JSON, NaN/inf/1e308 epochs, NUL bytes in paths, huge Last-Event-ID,
  inf and out-of-range settings, over-long names, bad multipart fields;
- path escapes: folders and images outside the data roots, ``..``, a symlink out of a root;
- auth variants against a second server started with a token;
- bounded requests, with the server's peak RSS sampled: 64 large PNGs to classify, an import
  whose labels.txt names 200,000 classes, a zip bomb, processes=100000;
- jobs: dataset builds queued, the server killed with SIGKILL mid-way and restarted; every job
  must be listed exactly once and end, and no lease may be left held;
- user code (issue 20, adversary_payloads.py): custom networks whose build() hunts the token,
  writes the store or another job's folder, forges its snapshot's cache, holds memory, forks,
  floods or forges the answer pipe; a table says what each reached;
- the job folder and the doors (issue 28, adversary_trust.py): links and FIFOs planted in a job
  folder, a rewritten spec.json, a checkpoint claiming a standard network, a loopback call
  without the credential, a sweep grid bomb, the /dev/shm decode ring; a second table;
- the split job folder (adversary_split.py): a confined job rewrites its spec, plants links and
  FIFOs named like the server's files in its work folder, replaces that folder by a link; a third;
- the network and memory (issue 28, adversary_isolation.py): a cluster rank trying the API, GCS
  and PostgreSQL ports, a check holding tmpfs past its limit, a link named rank-1.error, a rank
  rewriting or deleting its fence; a fourth.

    python bench/security/adversary.py              # about two minutes on two cores
    python bench/security/adversary.py --rounds 3   # repeat the malformed-input loop
    python bench/security/adversary.py --payloads-only   # only the user-code payloads (a minute or two)
"""

from __future__ import annotations

import argparse
import io
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

import httpx
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # tests/ helpers from a checkout
from bench.security.adversary_server import PeakRSS, Server, Tally, make_images, wait_job  # noqa: E402

from trainyard.jobs.store.store import Store  # noqa: E402


def malformed(client: httpx.Client, tally: Tally, data: Path, dataset_id: str) -> None:
    json_type = {"content-type": "application/json"}
    raw = [
        ("deep json", "/api/datasets", "[" * 100_000),
        ("deep dict", "/api/models",
         '{"name": "x", "datasets": ["d"], "settings": ' + '{"a":' * 5000 + "1" + "}" * 5001),
        ("inf epochs", "/api/models", f'{{"name": "m", "datasets": ["{dataset_id}"], "networks": ["lenet"], '
                                      '"settings": {"epochs": Infinity}}'),
        ("nan in invalid body", "/api/models", '{"name": "", "datasets": [], "base_lrs": [NaN]}'),
        ("nan lr curve", "/api/solvers/lr-curve", '{"lr": {"base_lr": NaN}}'),
    ]
    for label, path, body in raw:
        tally.seen(client.post(path, content=body, headers=json_type), label)
    model = {"name": "m", "datasets": [dataset_id], "networks": ["lenet"]}
    for label, settings in [("processes", {"processes": 100_000}), ("seed", {"seed": 10**23}),
                            ("epochs 1e308", {"epochs": 1e308})]:
        tally.seen(client.post("/api/models", json={**model, "settings": settings}), label)
    tally.seen(client.post("/api/models", json={**model, "name": "x" * 10_000}), "long name")
    tally.seen(client.post("/api/datasets", json={"name": "d", "train_folder": str(data), "seed": -1}), "seed -1")
    for epoch in ("nan", "inf", "1e308", "-1"):
        tally.seen(client.get("/api/models/nope/download", params={"epoch": epoch}), "epoch " + epoch)
    tally.seen(client.post("/api/datasets", json={"name": "x", "train_folder": f"{data}/a\x00b"}), "nul")
    tally.seen(client.post("/api/datasets/preview", data={"folder": f"{data}\x00"}), "nul preview")
    tally.seen(client.get(f"/api/jobs/{dataset_id}/events", headers={"Last-Event-ID": "9" * 5000}), "last-event-id")
    tally.seen(client.post("/api/datasets/upload", data={"spec": "[" * 100_000},
                           files={"file": ("a.zip", b"PK\x05\x06" + bytes(18))}), "deep spec field")


def escapes(client: httpx.Client, tally: Tally, data: Path, outside: Path) -> None:
    (data / "link").symlink_to(outside, target_is_directory=True)
    attempts = [
        ("POST", "/api/datasets", {"json": {"name": "e", "train_folder": str(outside)}}),
        ("POST", "/api/datasets", {"json": {"name": "e", "train_folder": f"{data}/../{outside.name}"}}),
        ("POST", "/api/datasets", {"json": {"name": "e", "train_folder": str(data / "link")}}),
        ("POST", "/api/datasets/preview", {"data": {"folder": str(data / "link")}}),
        ("POST", "/api/datasets/preview", {"data": {"folder": "/etc"}}),
        ("GET", "/api/datasets/images", {"params": {"folder": "/etc"}}),
    ]
    for method, path, kwargs in attempts:
        response = tally.seen(client.request(method, path, **kwargs), "escape " + path)
        if response.status_code < 300:
            tally.escapes += 1
            tally.notes.append(f"escape: {method} {path} {kwargs} -> {response.status_code}")


def auth_variants(server: Server, token: str, tally: Tally) -> None:
    wrong = token[:-1] + ("x" if token[-1] != "x" else "y")
    headers = [{}, {"Authorization": f"Bearer {wrong}"}, {"Authorization": "Bearer"},
               {"Authorization": f"Basic {token}"}, {"Authorization": token}, {"Cookie": f"trainyard_token={wrong}"},
               {"X-Forwarded-For": "127.0.0.1"}, {"Authorization": f"Bearer {token[:8]}"}]
    paths = ["/api/jobs", "/api/system", "/api/datasets", "/openapi.json", "//api/jobs", "/api/jobs/",
             "/static/../api/jobs", "/api/%6aobs", "/login/../api/jobs", "/API/jobs"]
    with httpx.Client(base_url=server.url, timeout=30) as client:
        ok = client.get("/api/jobs", headers={"Authorization": f"Bearer {token}"})
        assert ok.status_code == 200, "the right token must work"
        for path in paths:
            for header in headers:
                response = tally.seen(client.get(path, headers=header), "auth " + path)
                if response.status_code < 300 and "json" in response.headers.get("content-type", ""):
                    tally.bypasses += 1
                    tally.notes.append(f"bypass: {path} {header} -> {response.status_code}")
        # The limiter slows the guesser, never the right credential (issue 42): after all the
        # wrong tokens above, the right one from the same client still works.
        again = tally.seen(client.get("/api/jobs", headers={"Authorization": f"Bearer {token}"}), "auth again")
        if again.status_code != 200:
            tally.notes.append(f"limiter: the right token refused after wrong ones ({again.status_code})")


def _png(side: int) -> bytes:
    """A flat-colour PNG: tens of KiB on the wire, side x side x 3 bytes once decoded (the
    adversarial run's 83 KiB PNG that decoded to 84 MiB)."""
    buf = io.BytesIO()
    Image.new("RGB", (side, side), (200, 40, 40)).save(buf, "PNG")
    return buf.getvalue()


def bounded(client: httpx.Client, server: Server, tally: Tally, model_id: str, tmp: Path) -> int:
    """The bounded-request cases, sampling the server's RSS; returns the peak in bytes."""
    archive = client.get(f"/api/models/{model_id}/download")
    tally.seen(archive, "download")
    hostile = _many_labels(archive.content, tmp)
    bomb = tmp / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("cat/zeros.bmp", bytes(1024 * 2**20))  # 1 GiB of zeros in ~1 MB
    png = _png(5000)
    with PeakRSS(server.proc.pid) as rss:
        files = [("images", (f"{i}.png", png, "image/png")) for i in range(64)]
        tally.seen(client.post(f"/api/models/{model_id}/classify", files=files, timeout=600), "classify 64")
        tally.seen(client.post("/api/models/import", files={"file": ("m.tar.gz", hostile, "application/gzip")}),
                   "import 200k labels")
        response = tally.seen(client.post("/api/datasets/upload", files={"file": ("b.zip", bomb.read_bytes())},
                                          data={"spec": '{"name": "bomb"}'}), "zip bomb")
        if response.status_code == 201:
            job = wait_job(client, response.json()["id"])
            if job["status"] == "done":
                tally.notes.append("zip bomb built a dataset")
    return rss.peak


def _many_labels(archive: bytes, tmp: Path) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    [top] = list((tmp / "unpacked").iterdir())
    (top / "labels.txt").write_text("".join(f"c{i}\n" for i in range(200_000)))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(top, arcname=top.name)
    return buf.getvalue()


def crash_and_recover(server: Server, tally: Tally, images: Path, builds: int) -> tuple[int, int, int]:
    """Queue builds, SIGKILL the server, start it again: (lost, duplicated, stuck leases)."""
    ids = []
    with httpx.Client(base_url=server.url, timeout=60, headers=server.headers) as client:
        for i in range(builds):
            response = tally.seen(client.post("/api/datasets", json={"name": f"b{i}", "train_folder": str(images),
                                                                     "width": 28, "height": 28}), "queue build")
            ids.append(response.json()["id"])
        time.sleep(1.5)
    server.kill()
    server.start()
    with httpx.Client(base_url=server.url, timeout=60, headers=server.headers) as client:
        for job_id in ids:
            wait_job(client, job_id)
        listed = [j["id"] for j in tally.seen(client.get("/api/jobs"), "list").json()["jobs"]]
    lost = sum(job_id not in listed for job_id in ids)
    duplicated = len(listed) - len(set(listed))
    time.sleep(1.5)  # one more scheduler pass after the last job ended
    store = Store(f"sqlite:///{Path(server.env['TRAINYARD_HOME']) / 'trainyard.db'}")
    return lost, duplicated, len(store.leases())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=1, help="repeats of the malformed-input loop")
    parser.add_argument("--builds", type=int, default=4, help="dataset builds queued before the kill -9")
    parser.add_argument("--payloads-only", action="store_true", help="only the user-code payloads")
    args = parser.parse_args()
    if args.payloads_only:
        return payloads()
    tally = Tally()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        data, outside = tmp / "data", tmp / "outside"
        images = make_images(data / "images")
        make_images(outside)
        server = Server(tmp / "home", data).start()
        try:
            with httpx.Client(base_url=server.url, timeout=120, headers=server.headers) as client:
                dataset = tally.seen(client.post("/api/datasets", json={"name": "colours", "train_folder": str(images),
                                                                        "width": 28, "height": 28}), "dataset")
                dataset_id = dataset.json()["id"]
                wait_job(client, dataset_id)
                model = tally.seen(client.post("/api/models", json={
                    "name": "m", "datasets": [dataset_id], "networks": ["lenet"],
                    "settings": {"epochs": 1, "batch_size": 8}}), "model").json()["jobs"][0]["id"]
                for _ in range(args.rounds):
                    malformed(client, tally, data, dataset_id)
                escapes(client, tally, data, outside)
                wait_job(client, model)
                peak = bounded(client, server, tally, model, tmp)
            lost, duplicated, stuck = crash_and_recover(server, tally, images, args.builds)
        finally:
            server.stop()
        _report(tally, lost, duplicated, stuck, peak)  # before the auth run, so a failure there keeps these
        token = "adversary-" + "k" * 32
        secured = Server(tmp / "home-token", data, token=token).start()
        try:
            auth_variants(secured, token, tally)
        finally:
            secured.stop()
    print(f"requests (with auth variants) {tally.requests}, 5xx {tally.server_errors}, auth bypasses {tally.bypasses}")
    for note in tally.notes:
        print("  " + note)
    payloads()


def payloads() -> None:
    """The user-code payloads against a server with a token, and the table of what they reached."""
    from bench.security.adversary_isolation import run_isolation_payloads
    from bench.security.adversary_payloads import against_live_server, table
    from bench.security.adversary_split import run_split_payloads
    from bench.security.adversary_trust import trust_against_live_server

    token = "adversary-" + "p" * 32
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        server = Server(tmp / "home", tmp, token=token).start()
        try:
            assert server.proc is not None
            print(table(against_live_server(server.url, tmp / "home", server.proc.pid, token, tmp)), flush=True)
            print(table(trust_against_live_server(server, tmp)), flush=True)
            print(table(trust_against_live_server(server, tmp, run_split_payloads)), flush=True)
            print(table(run_isolation_payloads(tmp)), flush=True)
        finally:
            server.stop()


def _report(tally: Tally, lost: int, duplicated: int, stuck: int, peak: int) -> None:
    print(f"requests          {tally.requests}")
    print(f"5xx               {tally.server_errors}")
    print(f"escapes           {tally.escapes}")
    print(f"auth bypasses     {tally.bypasses}")
    print(f"lost jobs         {lost}")
    print(f"duplicated jobs   {duplicated}")
    print(f"stuck leases      {stuck}")
    print(f"peak server RSS   {peak / 2**20:.0f} MiB (64 x 5000-pixel PNGs, 200k-label import, zip bomb)", flush=True)


if __name__ == "__main__":
    main()
