"""The sandbox's processes read their settings without pydantic (core/environment.py); what they
read must be what settings.py's ProcessSettings declares, for every value a person may give."""

from __future__ import annotations

import os

import pytest

from trainyard.core import environment
from trainyard.sandbox import rank_network
from trainyard.settings import PROCESS_FIELDS, ProcessSettings, Settings

YES_OR_NO = ["", "0", "1", "no", "yes", "off", "on", "false", "TRUE", "No", "f", "y"]


@pytest.mark.parametrize("value", YES_OR_NO)
def test_yes_or_no_settings_read_alike(monkeypatch, value):
    for name in ("SANDBOX_NAMESPACES", "SANDBOX_CGROUPS", "ALLOW_UNSANDBOXED"):
        monkeypatch.setenv(f"TRAINYARD_{name}", value)
    declared = ProcessSettings()
    assert environment.sandbox_namespaces_on() is declared.sandbox_namespaces
    assert environment.sandbox_cgroups_on() is declared.sandbox_cgroups
    assert environment.unsandboxed_allowed() is declared.allow_unsandboxed


@pytest.mark.parametrize("value", ["", "0", "1234"])
def test_numbers_read_alike(monkeypatch, value):
    for name in ("SANDBOX_UID", "RANK_UID_BASE", "SANDBOX_MEMORY_MB"):
        monkeypatch.setenv(f"TRAINYARD_{name}", value)
    monkeypatch.setenv("TRAINYARD_JOIN_TIMEOUT_S", value.replace("0", "5"))  # a timeout of 0 is refused
    declared = ProcessSettings()
    assert environment.sandbox_uid() == declared.sandbox_uid
    assert environment.rank_uid_base(rank_network.DEFAULT_UID_BASE) == declared.rank_uid_base
    assert environment.memory_setting_mb() == declared.sandbox_memory_mb
    assert environment.join_timeout_s(180) == declared.join_timeout_s


def test_unset_settings_are_the_declared_defaults(monkeypatch):
    for name in ("SANDBOX_UID", "RANK_UID_BASE", "JOIN_TIMEOUT_S", "SANDBOX_MEMORY_MB", "SANDBOX_NAMESPACES",
                 "SANDBOX_CGROUPS", "ALLOW_UNSANDBOXED", "HOME"):
        monkeypatch.delenv(f"TRAINYARD_{name}", raising=False)
    declared = ProcessSettings()
    assert (environment.sandbox_uid(), environment.rank_uid_base(rank_network.DEFAULT_UID_BASE),
            environment.join_timeout_s(180), environment.memory_setting_mb()) == \
        (declared.sandbox_uid, declared.rank_uid_base, declared.join_timeout_s, declared.sandbox_memory_mb)
    assert environment.trainyard_home() == os.path.realpath(os.path.expanduser("~/.trainyard"))


def test_the_protocol_readers_say_what_a_launcher_set(monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert (environment.torch_rank(), environment.world_size(), environment.local_world_size()) == (3, 4, 1)
    assert environment.launched_as_rank() and environment.cuda_visible_devices() == ""
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "")
    monkeypatch.delenv("NCCL_SOCKET_IFNAME", raising=False)
    wanted = ("RANK", "GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")  # handed on to a Ray actor as they are
    assert dict(environment.present(wanted)) == {"RANK": "3", "GLOO_SOCKET_IFNAME": ""}
    assert dict(environment.present(wanted, non_empty=True)) == {"RANK": "3"}
    monkeypatch.delenv("RANK")
    assert not environment.launched_as_rank() and environment.torch_rank() == 0
    monkeypatch.setenv(environment.RANK_LOCK_FD_VARIABLE, "7")
    assert environment.take_rank_lock_fd() == "7" and environment.RANK_LOCK_FD_VARIABLE not in os.environ


def test_an_empty_process_setting_is_its_default_and_the_servers_own_settings_are_untouched(monkeypatch, tmp_path):
    assert set(PROCESS_FIELDS) == set(ProcessSettings.model_fields)
    for name in PROCESS_FIELDS:
        monkeypatch.setenv(f"TRAINYARD_{name.upper()}", "")
    assert ProcessSettings() == ProcessSettings.model_construct()  # every field at its default
    monkeypatch.setenv("TRAINYARD_PORT", "")
    with pytest.raises(ValueError):  # as before: an empty port is refused, not taken as 5000
        Settings(home=tmp_path)
