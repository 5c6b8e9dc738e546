"""Where a webhook may point: a URL whose host resolves only to public addresses, or to
addresses the operator allow-listed (``webhook_allowed_networks``).

A user must not be able to make the hub call what only the hub can reach: its own loopback, the
cloud's metadata service (169.254.169.254, link-local), the cluster's private network. So the
check is on addresses, never on names alone: the host is resolved, and *every* address it
resolves to must be public (``ipaddress``'s ``is_global``, and not multicast) or inside an
allow-listed network. An IP literal is checked as it is, and an IPv6 address that embeds an
IPv4 one (``::ffff:7f00:1``, ``64:ff9b::a9fe:a9fe``, ``2002:7f00:1::1``…) is checked as that IPv4
address as well (``addresses_reached``): ``is_global`` alone calls those public. Delivery
resolves again and connects to the address it checked (``Destination.address``, the name kept
for ``Host`` and TLS), so a name that re-resolves to an internal address between the check and
the call (DNS rebinding) gets nowhere, and redirects are never followed.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

MAX_URL = 2000
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressRefused(ValueError):
    """The URL is malformed, does not resolve, or reaches an address webhooks may not call."""


@dataclass(frozen=True)
class Destination:
    """A checked URL: the address to connect to, and what the request names."""

    url: str
    host: str
    address: str
    port: int
    scheme: str

    @property
    def connect_url(self) -> str:
        """The URL with the checked address in place of the host (brackets for IPv6)."""
        parts = urlsplit(self.url)
        shown = f"[{self.address}]" if ":" in self.address else self.address
        return SplitResult(parts.scheme, f"{shown}:{self.port}", parts.path or "/", parts.query, "").geturl()


def parse_url(url: str) -> SplitResult:
    """``url`` split, or ``AddressRefused`` saying what is wrong with it."""
    if len(url) > MAX_URL:
        raise AddressRefused(f"The webhook URL is longer than {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as exc:
        raise AddressRefused(f"The webhook URL is not valid ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise AddressRefused("The webhook URL must start with https:// (or http://)")
    if not parts.hostname:
        raise AddressRefused("The webhook URL has no host")
    if parts.username is not None or parts.password is not None:
        raise AddressRefused("The webhook URL may not carry a user name or password")
    if parts.fragment:
        raise AddressRefused("The webhook URL may not have a #fragment")
    return parts


# IPv6 prefixes whose addresses carry an IPv4 address in their last 32 bits, and mean it: a
# translator or relay delivers to that IPv4 address (RFC 6052's NAT64 prefixes; the IPv4-mapped,
# -translated and -compatible forms are that IPv4 address outright).
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_AS_IPV4 = (
    ipaddress.ip_network("::ffff:0:0/96"),  # IPv4-mapped, ::ffff:a.b.c.d
    ipaddress.ip_network("::ffff:0:0:0/96"),  # IPv4-translated (SIIT), ::ffff:0:a.b.c.d
    ipaddress.ip_network("::/96"),  # IPv4-compatible (deprecated), ::a.b.c.d
)


def _ipv4_of(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def addresses_reached(ip: IPAddress) -> list[IPAddress]:
    """Every address a connection to ``ip`` may end up at: ``ip`` itself, or for the IPv6 forms
    that embed an IPv4 address (``ipaddress``'s ``is_global`` calls ``[::7f00:1]``,
    ``[64:ff9b::7f00:1]``, ``[2002:7f00:1::1]`` public) that IPv4 address too: mapped,
    translated and compatible forms are the IPv4 address alone; NAT64, 6to4 and Teredo add it."""
    if not isinstance(ip, ipaddress.IPv6Address):
        return [ip]
    if any(ip in net for net in _AS_IPV4) and int(ip) > 1:  # "::" and "::1" are IPv6's own
        return [_ipv4_of(ip)]
    reached: list[IPAddress] = [ip]
    if any(ip in net for net in _NAT64):
        reached.append(_ipv4_of(ip))
    if ip.sixtofour is not None:
        reached.append(ip.sixtofour)
    if ip.teredo is not None:
        reached.extend(ip.teredo)  # the Teredo server and the (de-obfuscated) client
    return reached


def _allowed(ip: IPAddress, networks: Sequence[str]) -> bool:
    """Every address ``ip`` reaches is allow-listed or public (and not multicast)."""
    allowed = [ipaddress.ip_network(net, strict=False) for net in networks]
    return all(
        any(each.version == net.version and each in net for net in allowed)
        or (each.is_global and not each.is_multicast)
        for each in addresses_reached(ip)
    )


def _resolve(host: str, port: int) -> list[str]:
    try:
        return [ipaddress.ip_address(host).compressed]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError, ValueError) as exc:  # ValueError: a NUL in the name
        raise AddressRefused(f"The webhook host '{host}' does not resolve ({exc})") from None
    return list(dict.fromkeys(str(info[4][0]).split("%", 1)[0] for info in infos))


def check_destination(url: str, allowed_networks: Sequence[str] = ()) -> Destination:
    """Resolve ``url``'s host and check every address; ``AddressRefused`` names the one refused."""
    parts = parse_url(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = _resolve(host, port)
    if not addresses:
        raise AddressRefused(f"The webhook host '{host}' resolves to no address")
    for text in addresses:
        if not _allowed(ipaddress.ip_address(text), allowed_networks):
            shown = host if text == host else f"{host}' resolves to '{text}"
            raise AddressRefused(
                f"The webhook URL is refused: '{shown}', which is not a public address (loopback, "
                "link-local, private or reserved); the operator can allow networks with "
                "PROFILERHUB_WEBHOOK_ALLOWED_NETWORKS"
            )
    return Destination(url=url, host=host, address=addresses[0], port=port, scheme=parts.scheme)


__all__ = ["AddressRefused", "Destination", "addresses_reached", "check_destination", "parse_url"]
