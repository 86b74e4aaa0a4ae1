"""The SSRF guard: which addresses a fetch may reach, decided once per hop on resolved addresses.

A URL's host is resolved here, once; the fetcher and the browser then connect to the
address this module returned (pinned), never resolving the name again, so a DNS answer
that changes between the check and the connection (rebinding) cannot take a fetch
somewhere else. Every address is checked against the refused networks below unless it
lies in one of the networks the operator allowed with `WEB_ALLOW_NETS` (comma-separated
CIDRs in the pool's `env`; empty by default).
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from workers_common import FetchFailed, Unsupported

__all__ = [
    "ALLOW_ENV",
    "REFUSED_NETWORKS",
    "Guard",
    "Pinned",
    "Refused",
    "refusal_rule",
]

ALLOW_ENV = "WEB_ALLOW_NETS"

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*cidrs: str) -> tuple[IPNetwork, ...]:
    return tuple(ipaddress.ip_network(c) for c in cidrs)


REFUSED_NETWORKS: tuple[tuple[str, tuple[IPNetwork, ...]], ...] = (
    ("loopback", _nets("127.0.0.0/8", "::1/128")),
    ("unspecified", _nets("0.0.0.0/8", "::/128")),
    ("private", _nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")),
    # 169.254.169.254 (the cloud metadata service) lives here.
    ("link-local", _nets("169.254.0.0/16", "fe80::/10")),
    ("cgnat", _nets("100.64.0.0/10")),
    ("multicast", _nets("224.0.0.0/4", "ff00::/8")),
    ("reserved", _nets("240.0.0.0/4", "192.0.0.0/24", "198.18.0.0/15")),
    ("ipv6-ula", _nets("fc00::/7")),
    # These embed an IPv4 address, which may be any of the above.
    ("ipv4-mapped", _nets("::ffff:0:0/96")),
    ("nat64", _nets("64:ff9b::/96", "64:ff9b:1::/48")),
    ("6to4", _nets("2002::/16")),
)
"""Rule name -> networks refused under it, checked in this order."""


def refusal_rule(address: IPAddress) -> str | None:
    """The name of the rule that refuses `address`, or None when it is a public address."""
    for rule, networks in REFUSED_NETWORKS:
        if any(address.version == net.version and address in net for net in networks):
            return rule
    return None


class Refused(Unsupported):
    """A URL whose address the guard refuses (permanent `unsupported`)."""


@dataclass(frozen=True, slots=True)
class Pinned:
    """Where one hop connects: the URL's host and port, and the one address checked for it."""

    host: str
    port: int
    address: str

    @property
    def netloc(self) -> str:
        """The address as it goes into a URL (IPv6 in brackets)."""
        return f"[{self.address}]" if ":" in self.address else self.address


def _parse_allow(text: str) -> tuple[IPNetwork, ...]:
    nets: list[IPNetwork] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        try:
            nets.append(ipaddress.ip_network(item, strict=False))
        except ValueError as err:
            raise ValueError(f"{ALLOW_ENV}: {item!r} is not a CIDR network: {err}") from err
    return tuple(nets)


class Guard:
    """Resolves a host once and says which of its addresses a fetch may use."""

    def __init__(self, allow: Sequence[IPNetwork] = ()) -> None:
        self.allow = tuple(allow)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> Guard:
        """The guard the pool configured (`WEB_ALLOW_NETS`); a malformed entry raises ValueError."""
        return cls(_parse_allow(environ.get(ALLOW_ENV, "")))

    def verdict(self, address: IPAddress) -> str | None:
        """None when `address` may be reached, else the name of the rule that refuses it."""
        if any(address.version == net.version and address in net for net in self.allow):
            return None
        return refusal_rule(address)

    def pin(self, host: str, port: int) -> Pinned:
        """Resolves `host` (once) and returns the first address the rules allow.

        An IP literal is not resolved. No address at all -> `fetch_failed` (DNS is worth
        another try); only refused addresses -> permanent `unsupported`, naming the first.
        """
        addresses = _resolve(host, port)
        first_refusal: tuple[IPAddress, str] | None = None
        for address in addresses:
            rule = self.verdict(address)
            if rule is None:
                return Pinned(host=host, port=port, address=str(address))
            first_refusal = first_refusal or (address, rule)
        if first_refusal is None:
            raise FetchFailed(f"DNS: no address for {host}")
        address, rule = first_refusal
        raise Refused(f"refused {host} -> {address}: {rule} address (SSRF guard)")


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _resolve(host: str, port: int) -> list[IPAddress]:
    literal = _literal(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:
        raise FetchFailed(f"DNS: {host}: {err}") from err
    seen: list[IPAddress] = []
    for info in infos:
        # A scope id (fe80::1%eth0) is not part of the address the rules look at.
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address not in seen:
            seen.append(address)
    return seen
