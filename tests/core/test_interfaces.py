"""Which interface gloo and NCCL bind to: the one on the route to node 0, whatever the host name says."""

from __future__ import annotations

import psutil
import pytest

from trainyard.core.interfaces import bind_towards_rendezvous, interface_of, interface_towards


def an_outward_address() -> tuple[str, str] | None:
    """(interface, IPv4 address) of one of this machine's interfaces other than loopback, if any."""
    for name, addresses in psutil.net_if_addrs().items():
        for a in addresses:
            if a.family.name == "AF_INET" and not a.address.startswith("127."):
                return name, a.address
    return None


def test_the_route_to_an_address_names_the_interface_holding_ours():
    assert interface_of("127.0.0.1") == "lo" and interface_of("203.0.113.9") == ""
    assert interface_towards("127.0.0.1") == "lo" and interface_towards("localhost") == "lo"
    assert interface_towards("no-such-host.invalid") == ""  # does not resolve: left to gloo


def test_gloo_binds_towards_node_0_and_an_operators_choice_stays():
    one_machine = {"MASTER_ADDR": "127.0.0.1"}
    bind_towards_rendezvous(one_machine)
    assert one_machine == {"MASTER_ADDR": "127.0.0.1", "GLOO_SOCKET_IFNAME": "lo"}
    by_name = {"MASTER_ADDR": "localhost"}
    bind_towards_rendezvous(by_name)
    assert by_name == {"MASTER_ADDR": "localhost", "GLOO_SOCKET_IFNAME": "lo"}
    chosen = {"MASTER_ADDR": "localhost", "GLOO_SOCKET_IFNAME": "eth7"}
    bind_towards_rendezvous(chosen)
    assert chosen == {"MASTER_ADDR": "localhost", "GLOO_SOCKET_IFNAME": "eth7"}
    nowhere = {"MASTER_ADDR": "no-such-host.invalid"}
    bind_towards_rendezvous(nowhere)
    assert nowhere == {"MASTER_ADDR": "no-such-host.invalid"}  # torchrun's rendezvous says why it fails
    alone: dict[str, str] = {}  # one process, no rendezvous
    bind_towards_rendezvous(alone)
    assert alone == {}


def test_across_machines_both_bind_to_the_interface_holding_this_machines_address():
    outward = an_outward_address()
    if outward is None:
        pytest.skip("this machine has no interface but loopback")
    interface, address = outward
    assert interface_towards(address) == interface  # node 0's own address: not loopback
    across = {"MASTER_ADDR": address}
    bind_towards_rendezvous(across)
    assert across == {"MASTER_ADDR": address, "GLOO_SOCKET_IFNAME": interface,
                      "NCCL_SOCKET_IFNAME": f"={interface}"}  # NCCL: exactly it, not every name it begins
