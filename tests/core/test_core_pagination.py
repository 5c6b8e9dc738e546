"""Page tokens are opaque and tamper-proof: altered, forged or foreign tokens are refused."""

from __future__ import annotations

import base64
from datetime import UTC, datetime

import pytest

from profilerhub_core.errors import InvalidInput
from profilerhub_core.pagination import decode_page_token, encode_page_token

KEY = b"k" * 32


def test_page_token_round_trips_strings_numbers_and_times() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    token = encode_page_token(KEY, "users:1", ["alice", 7, when])
    assert decode_page_token(KEY, "users:1", token) == ["alice", 7, when]


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: base64.urlsafe_b64encode(b'["zzz"]').decode().rstrip("=") + "." + t.split(".")[1],
        lambda t: "garbage",
        lambda t: "a.b.c",
        lambda t: "",
    ],
    ids=["signature-changed", "payload-swapped", "garbage", "extra-dots", "empty"],
)
def test_altered_page_token_is_refused(mangle) -> None:  # type: ignore[no-untyped-def]
    token = encode_page_token(KEY, "users:1", ["alice"])
    with pytest.raises(InvalidInput, match="next_token"):
        decode_page_token(KEY, "users:1", mangle(token))


def test_page_token_from_another_listing_is_refused() -> None:
    token = encode_page_token(KEY, "users:1", ["alice"])
    with pytest.raises(InvalidInput):
        decode_page_token(KEY, "users:2", token)
    with pytest.raises(InvalidInput):
        decode_page_token(b"other-key" * 4, "users:1", token)
