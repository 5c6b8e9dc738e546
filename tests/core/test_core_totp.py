"""RFC 6238's own test vectors (Appendix B, SHA-1), and what ``verify`` accepts and refuses."""

from __future__ import annotations

import base64

import pytest

from profilerhub_core import totp

RFC_SECRET = base64.b32encode(b"12345678901234567890").decode()


@pytest.mark.parametrize(
    ("when", "code"),
    [(59, "94287082"), (1111111109, "07081804"), (1111111111, "14050471"),
     (1234567890, "89005924"), (2000000000, "69279037"), (20000000000, "65353130")],
)  # fmt: skip
def test_codes_are_rfc_6238s_test_vectors(when: int, code: str) -> None:
    assert totp.code_at(RFC_SECRET, when, digits=8) == code
    assert totp.code_at(RFC_SECRET, when) == code[-6:]  # six digits: the same number's last six


def test_verify_allows_one_step_of_skew_and_never_a_step_twice() -> None:
    secret, now = totp.new_secret(), 1_700_000_000.0
    step = int(now) // totp.PERIOD
    assert totp.verify(secret, totp.code_at(secret, now), now=now) == step
    assert totp.verify(secret, totp.code_at(secret, now - 30), now=now) == step - 1
    assert totp.verify(secret, totp.code_at(secret, now + 30), now=now) == step + 1
    assert totp.verify(secret, totp.code_at(secret, now - 60), now=now) is None  # too old
    assert totp.verify(secret, totp.code_at(secret, now), now=now, after=step) is None  # replayed
    assert totp.verify(secret, "12345", now=now) is None and totp.verify(secret, "abcdef", now=now) is None


def test_the_otpauth_url_names_the_account_and_the_secret() -> None:
    url = totp.otpauth_url("JBSWY3DPEHPK3PXP", "research/alice", "ProfilerHub")
    assert url.startswith("otpauth://totp/ProfilerHub%3Aresearch%2Falice?secret=JBSWY3DPEHPK3PXP&issuer=")
