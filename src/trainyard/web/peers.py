"""Who is on the other end of a connection, for the sign-in and bearer-token limiter.

A limiter keyed by the client's address alone lets one local account lock every other one out:
everybody on the machine connects from 127.0.0.1. For a loopback client the kernel knows which
account opened the socket (``/proc/net/tcp`` and ``tcp6`` list each socket with its owner's
uid), so the key becomes the address plus that uid. Elsewhere (another machine, no /proc) the
key is the address.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path

PROC_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


def client_key(host: str | None, port: int | None) -> str:
    """What the limiter counts failures against: ``host``, or ``host uid N`` for a local account."""
    if not host:
        return "unknown"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:  # not an address (a test client's name)
        return host
    if not address.is_loopback or port is None:
        return host
    uid = socket_owner(address, port)
    return host if uid is None else f"{host} uid {uid}"


def socket_owner(address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> int | None:
    """The uid owning the local socket bound to ``address``:``port``, or None if not found."""
    for table in PROC_TABLES:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 7 and _same(fields[1], address, port):
                return int(fields[7])
    return None


def _same(local: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address, port: int) -> bool:
    hex_address, _, hex_port = local.partition(":")
    if not hex_port or int(hex_port, 16) != port:
        return False
    try:
        found = _parse(hex_address)
    except ValueError:
        return False
    if isinstance(found, ipaddress.IPv6Address) and found.ipv4_mapped is not None:
        found = found.ipv4_mapped  # an IPv4 client of a server bound to "::"
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return found == address


def _parse(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    """The kernel writes each 32-bit word of an address in host (little-endian) order."""
    raw = b"".join(bytes.fromhex(hex_address[i:i + 8])[::-1] for i in range(0, len(hex_address), 8))
    return ipaddress.ip_address(raw)
