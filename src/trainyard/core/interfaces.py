"""Which network interface a process reaches its peers through, for gloo and NCCL to bind to.

Left to themselves, gloo and NCCL bind to the address of the machine's host name. Where that
name does not resolve (a container, a network namespace) or resolves to loopback (Debian's
/etc/hosts maps it to 127.0.1.1), every rank offers its peers an address they cannot reach, and
a job across machines never forms. The interface that matters is the one holding this machine's
address towards the rendezvous (node 0): the route the kernel takes there, found without
sending anything.
"""

from __future__ import annotations

import os
import socket

import psutil


def interface_of(address: str) -> str:
    """The name of this machine's network interface that holds ``address``; "" if none does."""
    for name, addresses in psutil.net_if_addrs().items():
        if any(a.family in (socket.AF_INET, socket.AF_INET6) and a.address.split("%")[0] == address
               for a in addresses):
            return name
    return ""


def interface_towards(host: str) -> str:
    """The interface holding this machine's address on the route to ``host`` (a name or an
    address; node 0's own address gives the interface that holds it); "" if there is no route
    or ``host`` does not resolve."""
    try:
        family, _, _, _, where = socket.getaddrinfo(host, 9, type=socket.SOCK_DGRAM)[0]
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.connect(where)  # UDP: the kernel picks the route and the source address; nothing is sent
            source = probe.getsockname()[0]
    except OSError:
        return ""
    return interface_of(source)


def bind_towards_rendezvous(environ: dict | os._Environ) -> None:
    """gloo and NCCL bind to the interface on the route to node 0 (MASTER_ADDR), not to the host
    name's address: on one machine loopback, across machines the interface the other nodes reach
    this one by. An interface the node's operator named (GLOO_SOCKET_IFNAME, NCCL_SOCKET_IFNAME)
    stays; NCCL is left to its own choice on one machine (it prefers shared memory there)."""
    master = environ.get("MASTER_ADDR", "")
    if not master or environ.get("GLOO_SOCKET_IFNAME"):
        return
    interface = interface_towards(master)
    if interface:
        environ["GLOO_SOCKET_IFNAME"] = interface
    if interface and interface != "lo":
        environ.setdefault("NCCL_SOCKET_IFNAME", f"={interface}")  # "=": this name, not every one it begins
