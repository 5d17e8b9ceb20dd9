"""All configuration, from TRAINYARD_* environment variables (pydantic-settings): the one module
that reads a setting from the environment (tests/test_environment_reads.py).

`ProcessSettings` are the settings every trainyard process may need, the job processes, training
ranks and network checks included: those build it (`process_settings`) and never the server's
`Settings`, which makes the home's folders and holds the token (docs/architecture.md, "Layers": a
job process reads its job folder and nothing else). They inherit the variables from the server
or CLI that starts them. `Settings` adds the server's and the CLI's. `trainyard system` lists both.

The sandbox's own processes read their few settings through core/environment.py instead, parsed
alike: they must not import pydantic (its docstring says why).
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

# ProcessSettings' fields, where an empty value means the default; not Settings' own, which keep
# pydantic's reading of "" (tests/core/test_environment_settings.py holds this list to the class)
PROCESS_FIELDS = ("check_timeout_s", "collective_timeout_s", "join_timeout_s", "sandbox_namespaces",
                  "sandbox_cgroups", "allow_unsandboxed", "sandbox_uid", "sandbox_memory_mb", "job_work_mb",
                  "rank_uid_base", "inference_runtime", "inject_oom", "checkpoint_hold", "test_kill_build_at")
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
MIN_TOKEN_LENGTH = 12  # a token is the only lock on a server others can reach: no short ones


class ProcessSettings(BaseSettings):
    """The settings of every trainyard process; each field can be set as TRAINYARD_<FIELD>, and
    an empty value means the default (as these were read before they were gathered here)."""

    model_config = SettingsConfigDict(env_prefix="TRAINYARD_", extra="ignore")

    check_timeout_s: float = Field(900.0, gt=0, description=(
        "how long one network check (build, two forward passes) may take before it is given up; "
        "fits the largest timm models (vit_giant took 388 s on 2 busy cores)"))
    collective_timeout_s: float = Field(600.0, gt=0, description=(
        "how long a rank of a multi-process training waits at a collective (long enough for rank 0 "
        "to write a checkpoint while the others wait)"))
    join_timeout_s: float = Field(180.0, gt=0, description=(
        "how long a multi-process training's ranks may take to meet at the start"))
    sandbox_namespaces: bool = Field(True, description="confine user code in bubblewrap namespaces where they work")
    sandbox_cgroups: bool = Field(True, description="bound user code's memory by a cgroup (else rlimits only)")
    allow_unsandboxed: bool = Field(False, description=(
        "run custom networks unconfined on a machine that offers no sandbox (else they are refused)"))
    sandbox_uid: int | None = Field(None, description=(
        "the uid user code runs as when trainyard runs as root (default: nobody inside namespaces)"))
    sandbox_memory_mb: int | None = Field(None, description=(
        "the most memory a process running user code may take (default: a share of the machine's)"))
    job_work_mb: int | None = Field(None, description=(
        "the most a training job running user code may write into its work folder (default: three "
        "quarters of the disk's free space when it starts)"))
    rank_uid_base: int = Field(1 << 30, description=(
        "the first uid of a cluster job's ranks (a uid per job, a group per rank, above it)"))
    inference_runtime: str = Field("onnx", description="onnx, or torch: classify with PyTorch only")
    inject_oom: str = Field("", description="FOR TESTS: fake an out-of-memory error at STEP[xCOUNT][@RANK]")
    checkpoint_hold: str = Field("", description="FOR TESTS: a folder where checkpoint writes wait for a .hold file")
    test_kill_build_at: int = Field(-1, description="FOR TESTS: kill a dataset build after this many images")

    @field_validator(*PROCESS_FIELDS, mode="before")
    @classmethod
    def _empty_is_default(cls, value, info):
        if value == "":
            return cls.model_fields[info.field_name].get_default(call_default_factory=True)
        return value


def process_settings() -> ProcessSettings:
    """The process settings as this process's environment says now (no folder is made)."""
    return ProcessSettings()


class Settings(ProcessSettings):
    """trainyard's settings; every field can be set as TRAINYARD_<FIELD>."""

    model_config = SettingsConfigDict(env_prefix="TRAINYARD_", extra="ignore")

    home: Path = Field(default_factory=lambda: Path.home() / ".trainyard")
    # Folders the server and CLI may read images from. Separated by os.pathsep or commas.
    data_roots: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    database_url: str = ""
    host: str = "127.0.0.1"
    port: int = 5000
    auth_token: str = ""
    # Names the server answers to besides localhost, 127.0.0.1, [::1] and ``host`` (a reverse
    # proxy's name, say); "*" accepts any Host header. Separated by commas.
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    max_upload_mb: int = 2048
    dataset_builds: int = 2  # dataset builds at once
    cpu_jobs: int = 1  # trainings on the CPU at once (when no GPU is asked for)
    # classify-many, top-N and evaluate jobs at once on a machine without GPUs, beside the
    # trainings (with GPUs, each takes a free GPU or shares a busy one)
    inference_jobs: int = Field(1, ge=1)
    abort_grace_s: float = 10.0  # SIGTERM, then SIGKILL after this long
    # A job whose holder (a server or a foreground CLI, on any machine) has not renewed its
    # heartbeat for this long is ended as interrupted by any other manager (jobs/runs/heartbeat.py).
    heartbeat_timeout_s: float = Field(30.0, gt=0)
    # local: jobs run on this machine. ray: training jobs run as workers on the Ray cluster at
    # Ray's own RAY_ADDRESS (trainyard.cluster); TRAINYARD_HOME must then be shared by every node.
    cluster: Literal["local", "ray"] = "local"
    weights_url: str = ""  # a mirror of torchvision's weight files (default: download.pytorch.org)
    # The most jobs one training request may make (a sweep's grid of datasets x networks x
    # learning rates x batch sizes, or its --trials draws): one request must not queue hundreds.
    max_sweep_jobs: int = Field(64, ge=1)
    # Running jobs per user at once, unless the user has a cap of their own (trainyard users
    # set-quota); 0: no cap. Either way the queue is fair between users (jobs/scheduling/fairness.py).
    user_max_jobs: int = Field(0, ge=0)
    # The other per-user quotas, for users without their own (0: no cap): GPUs leased at once,
    # CPU training slots at once (a job over either waits), and bytes of the user's dataset and
    # model job folders (a new dataset or model job past it is refused; jobs/scheduling/quotas.py).
    user_max_gpus: int = Field(0, ge=0)
    user_max_cpu_slots: int = Field(0, ge=0)
    user_max_disk_bytes: int = Field(0, ge=0)
    fake_gpus: int = 0  # FOR TESTS: pretend this many GPUs exist (jobs on them train on the CPU)

    @field_validator("data_roots", mode="before")
    @classmethod
    def _split_roots(cls, value):
        if isinstance(value, str):
            parts = value.replace(",", ":").split(":")
            return [p.strip() for p in parts if p.strip()]
        return value

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value):
        if isinstance(value, str):
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    @field_validator("auth_token", mode="after")
    @classmethod
    def _long_token(cls, value: str) -> str:
        # The message never repeats the token (validation messages carry only this text).
        if value and not value.strip():  # passes a length check, and no client can send it back
            raise ValueError("TRAINYARD_AUTH_TOKEN is only spaces; make a real one with: python -c "
                             "\"import secrets; print(secrets.token_urlsafe(24))\"")
        if value and len(value) < MIN_TOKEN_LENGTH:
            raise ValueError(f"TRAINYARD_AUTH_TOKEN must be at least {MIN_TOKEN_LENGTH} characters "
                             f"(it has {len(value)}); make one with: python -c \"import secrets; "
                             "print(secrets.token_urlsafe(24))\"")
        return value

    @field_validator("home", mode="after")
    @classmethod
    def _absolute_home(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    @property
    def jobs_dir(self) -> Path:
        return self.home / "jobs"

    @property
    def weights_dir(self) -> Path:
        return self.home / "weights"

    @property
    def uploads_dir(self) -> Path:
        return self.home / "uploads"

    @cached_property
    def allowed_roots(self) -> list[Path]:
        """The data roots, defaulting to the user's home folder plus HOME/uploads."""
        roots = [Path(r).expanduser().resolve() for r in self.data_roots] or [Path.home().resolve()]
        return roots + [self.uploads_dir.resolve()]

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{self.home / 'trainyard.db'}"

    def ensure_dirs(self) -> None:
        """Make the home's folders, 0700, and its database 0600 (core/home.py: no other local
        account reads the store); an existing home is tightened."""
        from trainyard.core import home

        home.make_private([self.home, self.jobs_dir, self.uploads_dir])
        if not self.database_url:  # the default SQLite file, made 0600 before SQLite opens it
            database = self.home / "trainyard.db"
            home.create_private_file(database)
            home.make_private([], [database, *(database.with_name(database.name + s) for s in ("-wal", "-shm"))])


def get_settings() -> Settings:
    from trainyard.core import home

    home.restrict_process()  # before the first file of the process (core/home.py)
    settings = Settings()
    settings.ensure_dirs()
    return settings


SECRET_FIELDS = ("auth_token", "database_url")  # a database URL may hold a password: never shown


def listing(settings: ProcessSettings) -> list[tuple[str, str, str]]:
    """Each setting as `trainyard system` shows it: (variable, value, what it is; "" where only a
    comment in this file says)."""
    rows = []
    for name, field in type(settings).model_fields.items():
        value = getattr(settings, name)
        shown = ("set" if value else "not set") if name in SECRET_FIELDS else str(value)
        rows.append((f"TRAINYARD_{name.upper()}", shown, field.description or ""))
    return rows
