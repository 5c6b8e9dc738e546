"""Checking a SigV4-signed request: parse ``Authorization``, recompute the signature with
botocore's own signer over the canonical request, compare in constant time.

    signed = parse_authorization(headers)               # AwsError when malformed or missing
    check_clock(signed, now, skew_seconds)              # InvalidSignatureException: "Signature expired"
    check_signature(signed, secret, method, url, headers, body)

Only the headers the client lists in ``SignedHeaders`` take part, exactly as the client's signer
chose them (botocore leaves out ``User-Agent`` and ``Expect``). The region and service come from
the credential scope; the service must be the door's (``sagemaker``, ``monitoring`` for CloudWatch,
``logs``), any region is accepted.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from profilerhub_hub.sagemaker.errors import AwsError

if TYPE_CHECKING:  # botocore: imported by the functions that sign, not at the hub's start
    from botocore.auth import SigV4Auth
    from botocore.compat import HTTPHeaders

SERVICE = "sagemaker"
ALGORITHM = "AWS4-HMAC-SHA256"
AMZ_DATE = "%Y%m%dT%H%M%SZ"
_AMZ_DATE = re.compile(r"(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z", re.ASCII)
_AUTH = re.compile(
    ALGORITHM
    + r"\s+Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[a-z0-9-]+)/(?P<service>[a-z0-9-]+)"
    r"/aws4_request\s*,\s*SignedHeaders=(?P<headers>[a-z0-9;_.-]+)\s*,\s*Signature=(?P<signature>[0-9a-f]{64})\s*"
)


@dataclass(frozen=True, slots=True)
class Signed:
    """What the ``Authorization`` header of a signed request says."""

    access_key_id: str
    amz_date: str
    region: str
    signed_headers: tuple[str, ...]
    signature: str
    service: str = SERVICE


def parse_authorization(authorization: str | None, amz_date: str | None, service: str = SERVICE) -> Signed:
    if not authorization:
        raise AwsError("MissingAuthenticationTokenException", "Missing Authentication Token", 403)
    match = _AUTH.fullmatch(authorization.strip())
    if match is None:
        raise AwsError(
            "IncompleteSignatureException",
            "Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' "
            f"parameters of the {ALGORITHM} algorithm.",
        )
    if match["service"] != service:
        raise AwsError(
            "InvalidSignatureException", f"Credential should be scoped to correct service: '{service}'."
        )
    headers = tuple(match["headers"].split(";"))
    if not amz_date or "x-amz-date" not in headers:
        raise AwsError("IncompleteSignatureException", "The request must carry a signed X-Amz-Date header.")
    if "host" not in headers:
        raise AwsError("IncompleteSignatureException", "The Host header must be signed.")
    if amz_date[:8] != match["date"]:
        raise AwsError(
            "InvalidSignatureException", "Credential should be scoped to a valid date matching X-Amz-Date."
        )
    return Signed(match["key"], amz_date, match["region"], headers, match["signature"], service)


def check_clock(signed: Signed, now: datetime, skew_seconds: int) -> None:
    """Refuse a request signed more than ``skew_seconds`` away from ``now`` (AWS's wording)."""
    match = _AMZ_DATE.fullmatch(signed.amz_date)  # rather than strptime: a fifth of the cost
    try:
        if match is None:
            raise ValueError(signed.amz_date)
        year, month, day, hour, minute, second = (int(part) for part in match.groups())
        at = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
    except ValueError:  # not the format; a month 13, a February 30
        raise AwsError("IncompleteSignatureException", "X-Amz-Date must be like 20240131T235959Z.") from None
    if abs((now - at).total_seconds()) > skew_seconds:
        earliest = datetime.fromtimestamp(now.timestamp() - skew_seconds, UTC).strftime(AMZ_DATE)
        raise AwsError(
            "InvalidSignatureException",
            f"Signature expired: {signed.amz_date} is now earlier than {earliest} "
            f"({now.strftime(AMZ_DATE)} - {skew_seconds // 60} min.)"
            if at < now
            else f"Signature not yet current: {signed.amz_date} is still later than "
            f"{datetime.fromtimestamp(now.timestamp() + skew_seconds, UTC).strftime(AMZ_DATE)}",
        )


@dataclass(slots=True)
class _Received:
    """A received request as botocore's signer reads one: an ``AWSRequest``'s attributes, with the
    body as it came (an ``AWSRequest`` would prepare a copy of itself to give its body)."""

    method: str
    url: str
    headers: HTTPHeaders
    body: bytes
    context: dict[str, Any]
    params: dict[str, str] = field(default_factory=dict)


def expected_signature(
    signed: Signed, secret: str, method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes
) -> str:
    """The signature botocore computes for this request with ``secret``."""
    wanted = set(signed.signed_headers)
    from botocore.compat import HTTPHeaders

    request = _Received(method, url, HTTPHeaders(), body, {"timestamp": signed.amz_date})
    for name, value in headers:
        if name.lower() in wanted:
            request.headers[name.lower()] = value  # adds: a repeated header keeps every value
    signer = _signer(signed.access_key_id, secret, signed.region, signed.service)
    string_to_sign = signer.string_to_sign(request, signer.canonical_request(request))
    key = signing_key(secret, signed.amz_date[:8], signed.region, signed.service)
    return hmac.new(key, string_to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


@functools.lru_cache(maxsize=1024)
def _signer(access_key_id: str, secret: str, region: str, service: str = SERVICE) -> SigV4Auth:
    from botocore.auth import SigV4Auth
    from botocore.credentials import Credentials

    return SigV4Auth(Credentials(access_key_id, secret), service, region)


@functools.lru_cache(maxsize=1024)
def signing_key(secret: str, day: str, region: str, service: str = SERVICE) -> bytes:
    """SigV4's derived key (four HMACs, as botocore's ``SigV4Auth.signature`` chains them), once
    per key, day and region rather than on every request."""
    key = ("AWS4" + secret).encode("utf-8")
    for part in (day, region, service, "aws4_request"):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def check_signature(
    signed: Signed, secret: str, method: str, url: str, headers: Iterable[tuple[str, str]], body: bytes
) -> None:
    expected = expected_signature(signed, secret, method, url, headers, body)
    if not hmac.compare_digest(expected, signed.signature):
        raise AwsError(
            "InvalidSignatureException",
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method.",
            403,
        )


__all__ = [
    "SERVICE",
    "Signed",
    "check_clock",
    "check_signature",
    "expected_signature",
    "parse_authorization",
    "signing_key",
]
