"""Cluster mode without a cluster: what a job asks Ray for, how ranks are laid out over nodes,
the storage check, the job's needs and spec, and clear failures when no cluster answers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.training.model_helpers import make_dataset, model_spec, statuses, write_job
from trainyard.cluster.job_spec import LaunchSpec
from trainyard.cluster.placement import Placement, WorkerInfo, rank_environments, rank_order, worker_docs
from trainyard.cluster.rank_worker import RankWorker, child_environment
from trainyard.core.stored import read_stored
from trainyard.jobs.context import open_context
from trainyard.jobs.kinds.devices import cluster_placement, devices_needed
from trainyard.jobs.runs.manager import JobError
from trainyard.jobs.scheduling.resources import Pools
from trainyard.training.spec import ModelSpec

REPO = Path(__file__).resolve().parents[2]


def test_a_pending_placement_says_what_it_waits_for():
    assert Placement(8, "gpu").waiting_detail({"GPU": 5.0, "CPU": 64.0}) == "waiting for 8 GPUs on the cluster (5 free)"
    assert Placement(1, "cpu").waiting_detail({}) == "waiting for 1 CPU on the cluster (0 free)"
    # Ray's free figures lag its reservations: never "waiting for 2 CPUs (2 free)"
    assert Placement(2, "cpu").waiting_detail({"CPU": 2.0}) == "waiting for Ray to reserve 2 CPUs on the cluster"
    assert Placement(2, "gpu").bundles() == [{"GPU": 1.0, "CPU": 1.0}] * 2
    spec = read_stored(LaunchSpec, {"cluster": {"workers": 3, "device": "cpu"}})
    assert Placement.from_spec(spec) == Placement(3, "cpu")


def test_ranks_are_numbered_node_by_node_with_local_ranks_and_their_gpus():
    a, b = "a" * 56, "b" * 56
    infos = [WorkerInfo(a, "10.0.0.1", "gpu-a", ["3"]), WorkerInfo(b, "10.0.0.2", "gpu-b", ["0"]),
             WorkerInfo(a, "10.0.0.1", "gpu-a", ["1"])]
    ranked = [infos[i] for i in rank_order(infos)]
    assert [i.gpu_ids for i in ranked] == [["3"], ["1"], ["0"]]  # node a's two ranks first
    envs = rank_environments(ranked, 29500, "job1", "gpu")
    assert [(e["RANK"], e["LOCAL_RANK"], e["LOCAL_WORLD_SIZE"], e["GROUP_RANK"]) for e in envs] == [
        ("0", "0", "2", "0"), ("1", "1", "2", "0"), ("2", "0", "1", "1")]
    assert {(e["MASTER_ADDR"], e["MASTER_PORT"], e["WORLD_SIZE"]) for e in envs} == {("10.0.0.1", "29500", "3")}
    # cuda:LOCAL_RANK is the rank's own GPU: node a sees its job GPUs 3,1 in local-rank order
    assert [e["CUDA_VISIBLE_DEVICES"] for e in envs] == ["3,1", "3,1", "0"]
    assert all(e["TORCHELASTIC_RUN_ID"] == "job1" for e in envs)  # run.py ends with its actor
    assert rank_environments(ranked, 1, "j", "cpu")[0]["CUDA_VISIBLE_DEVICES"] == ""
    docs = worker_docs(ranked, "gpu")
    assert [(d["rank"], d["host"], d["device"]) for d in docs] == [(0, "gpu-a", "gpu:3"), (1, "gpu-a", "gpu:1"),
                                                                   (2, "gpu-b", "gpu:0")]
    assert WorkerInfo(a, "10.0.0.1", "gpu-a").node_label == "node gpu-a (aaaaaaaa)"


def test_one_rank_trains_as_a_local_process_and_gloo_is_told_each_nodes_interface():
    a, b = "a" * 56, "b" * 56
    (alone,) = rank_environments([WorkerInfo(a, "10.0.0.1", "gpu-a", [], "eth1")], 29500, "j", "cpu")
    assert "RANK" not in alone and "WORLD_SIZE" not in alone and "MASTER_ADDR" not in alone
    assert alone["TORCHELASTIC_RUN_ID"] == "j"  # it still ends with its actor
    envs = rank_environments([WorkerInfo(a, "10.0.0.1", "h-a", [], "eth1"), WorkerInfo(b, "10.0.0.2", "h-b", [], "br0"),
                              WorkerInfo(b, "10.0.0.2", "h-b", [], "")], 29500, "j", "cpu")
    assert [(e.get("GLOO_SOCKET_IFNAME"), e.get("NCCL_SOCKET_IFNAME")) for e in envs] == [
        ("eth1", "=eth1"), ("br0", "=br0"), (None, None)]  # NCCL: "=" for this name, not eth10
    assert {e["MASTER_ADDR"] for e in envs} == {"10.0.0.1"}  # the address, no host name to resolve


def test_a_rank_takes_the_launchers_thread_settings_and_niceness_not_rays(tmp_path, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # as Ray sets it in its workers
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "eth7")  # as a node's operator may have set it
    env = child_environment({"GLOO_SOCKET_IFNAME": "lo", "RANK": "1"})
    assert "OMP_NUM_THREADS" not in env and env["GLOO_SOCKET_IFNAME"] == "eth7" and env["RANK"] == "1"
    assert child_environment({"OMP_NUM_THREADS": "4"})["OMP_NUM_THREADS"] == "4"  # the launcher's
    # A worker at Ray's niceness 15 starts its rank at the launcher's (0): allowed as root only.
    script = ("import sys; from trainyard.cluster.rank_worker import RankWorker; w = RankWorker(); "
              "print(w.start([sys.executable, '-c', 'import time; time.sleep(5)'], {}, '.', 'out.txt', 0)"
              "['niceness']); w.child.kill()")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         preexec_fn=lambda: os.nice(15), env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) == (0 if os.geteuid() == 0 else 15)


def test_a_ranks_worker_takes_the_launchers_niceness_on_every_thread_where_allowed(tmp_path):
    # As Ray leaves its worker: threads at 15 (Ray renices after starting some; here all of them).
    script = ("import os, threading, time; from trainyard.cluster.rank_worker import RankWorker; "
              "[threading.Thread(target=time.sleep, args=(5,), daemon=True).start() for _ in range(3)]; "
              "print(RankWorker.take_niceness(0), "
              "sorted({os.getpriority(os.PRIO_PROCESS, int(t)) for t in os.listdir('/proc/self/task')}))")
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                         preexec_fn=lambda: os.nice(15), env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    assert out.returncode == 0, out.stderr
    assert out.stdout.split(None, 1) == (["0", "[0]\n"] if os.geteuid() == 0 else ["15", "[15]\n"])


def test_the_storage_check_names_what_this_node_cannot_reach(tmp_path):
    dataset = make_dataset(tmp_path / "ds", train=4, val=2)
    job = tmp_path / "job"
    job.mkdir()
    assert RankWorker.check_storage(str(dataset), str(job)) is None
    assert list(job.iterdir()) == []  # the probe file is gone
    problem = RankWorker.check_storage(str(tmp_path / "elsewhere"), str(job))
    assert problem.startswith(f"cannot read the dataset {tmp_path / 'elsewhere'} (No such file")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert RankWorker.check_storage(str(dataset), str(not_a_folder)).startswith(
        f"cannot write the job folder {not_a_folder} (Not a directory")


@pytest.fixture
def cluster_ctx(settings):
    return open_context(settings.model_copy(update={"cluster": "ray"}), pools=Pools(1, 1, []))


def test_cluster_jobs_ask_the_cluster_for_workers_not_this_machine(cluster_ctx):
    assert devices_needed(cluster_ctx, 8, None) == {"pool": "cluster", "device": "gpu", "count": 8}
    needs = devices_needed(cluster_ctx, None, None, processes=2)
    assert needs == {"pool": "cluster", "device": "cpu", "count": 2}
    assert cluster_placement(needs) == {"workers": 2, "device": "cpu"}
    assert cluster_ctx.pools.acquire(cluster_ctx.store, "job", needs) == []  # no local lease
    with pytest.raises(JobError, match="on the cluster ask for a number of GPUs"):
        devices_needed(cluster_ctx, None, [0, 1])


def test_max_restarts_and_nnodes_are_checked_against_cluster_mode(tmp_path):
    base = model_spec(tmp_path).model_dump()
    with pytest.raises(ValueError, match="max_restarts applies to cluster jobs"):
        ModelSpec(**{**base, "max_restarts": 1})
    with pytest.raises(ValueError, match="Ray places the processes"):
        ModelSpec(**{**base, "cluster": {"workers": 2}, "nnodes": 2, "master": "h:1"})
    assert ModelSpec(**{**base, "cluster": {"workers": 2}, "max_restarts": 3}).cluster.device == "cpu"


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_without_a_reachable_cluster_the_api_answers_503_and_a_job_fails_saying_so(settings, client_for,
                                                                                tmp_path, monkeypatch):
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()  # this test process joined the session's cluster earlier; a server joins one
    address = f"127.0.0.1:{closed_port()}"
    monkeypatch.setenv("RAY_ADDRESS", address)
    with client_for(settings.model_copy(update={"cluster": "ray"}), run_scheduler=False) as client:
        response = client.get("/api/system")
    assert response.status_code == 503
    assert response.json()["detail"].startswith(f"no Ray cluster reachable at RAY_ADDRESS={address}")
    job = write_job(tmp_path / "job", model_spec(make_dataset(tmp_path / "ds", train=4, val=2),
                                                  cluster={"workers": 2}))
    done = subprocess.run([sys.executable, "-m", "trainyard.cluster.launcher", str(job)], timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True)
    assert done.returncode == 1
    final = statuses(job)[-1]
    assert final["status"] == "failed" and final["error"].startswith("no Ray cluster reachable at RAY_ADDRESS")


def test_local_mode_never_imports_ray():
    """Every trainyard module but the cluster package, the app and a system report: no ray."""
    code = (
        "import pkgutil, sys, importlib, trainyard\n"
        "for m in pkgutil.walk_packages(trainyard.__path__, 'trainyard.'):\n"
        "    if not m.name.startswith('trainyard.cluster') and not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "from fastapi.testclient import TestClient\n"
        "from trainyard.settings import Settings\n"
        "from trainyard.web.app import create_app\n"
        "import tempfile\n"
        "s = Settings(home=tempfile.mkdtemp(), data_roots=[tempfile.gettempdir()])\n"
        "app = create_app(s, run_scheduler=False)\n"
        "with TestClient(app, headers={'Authorization': 'Bearer ' + app.state.auth_token}) as c:\n"
        "    doc = c.get('/api/system').json()\n"
        "assert doc['backend'] == 'local' and 'nodes' not in doc, doc\n"
        "print('ray' in sys.modules)\n")
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "TRAINYARD_CLUSTER": "local"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr[-3000:]


def test_a_dead_node_is_listed_once_with_when_it_died_then_leaves_the_list(monkeypatch):
    from trainyard.cluster import nodes

    def node(node_id, alive, ended=None):
        return {"id": node_id, "host": "10.0.0.9", "ip": "10.0.0.9", "alive": alive, "head": False, "cpus": 4,
                "cpus_in_use": None, "gpus": [], "gpus_in_use": None, "memory_total": 0, "jobs": [], "ended": ended}

    table = [node("live", True), node("old", False, ended=1_000.0), node("new", False)]
    monkeypatch.setattr(nodes, "_died", {})
    monkeypatch.setattr(nodes._agent, "ask", lambda name, *args, **kw: [dict(n) for n in table])
    listed = nodes.list_nodes(now=1_100.0)
    assert [(n["id"], n["alive"], n.get("died_at")) for n in listed] == [
        ("live", True, None), ("old", False, "1970-01-01T00:16:40+00:00"), ("new", False, "1970-01-01T00:18:20+00:00")]
    assert all("ended" not in n for n in listed)
    later = nodes.list_nodes(now=1_100.0 + nodes.DEAD_SHOWN_S - 50)  # "new" keeps the time it was first seen dead
    assert [(n["id"], n.get("died_at")) for n in later] == [("live", None), ("new", "1970-01-01T00:18:20+00:00")]
    assert [n["id"] for n in nodes.list_nodes(now=1_100.0 + nodes.DEAD_SHOWN_S + 1)] == ["live"]
