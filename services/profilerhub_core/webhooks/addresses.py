"""Where a webhook may point: a URL whose host resolves only to public addresses, or to
addresses the operator allow-listed (``webhook_allowed_networks``).

A user must not be able to make the hub call what only the hub can reach: its own loopback, the
cloud's metadata service (169.254.169.254, link-local), the cluster's private network. So the
check is on addresses, never on names alone: the host is resolved, and *every* address it
resolves to must be public (``ipaddress``'s ``is_global``, and not multicast) or inside an
allow-listed network. An IP literal is checked as it is. Delivery resolves again and connects to
the address it checked (``Destination.address``, the name kept for ``Host`` and TLS), so a name
that re-resolves to an internal address between the check and the call (DNS rebinding) gets
nowhere, and redirects are never followed.
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


def _allowed(ip: IPAddress, networks: Sequence[str]) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped  # ::ffff:127.0.0.1 is 127.0.0.1
    if any(ip in ipaddress.ip_network(net, strict=False) for net in networks):
        return True
    return ip.is_global and not ip.is_multicast


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


__all__ = ["AddressRefused", "Destination", "check_destination", "parse_url"]
