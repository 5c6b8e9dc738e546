"""Hub-signed app tokens: only the hub's key, this app, this owner, and only while fresh."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest
from joserfc import jwt
from joserfc.jwk import OctKey

from profilerhub_core.apptokens import (
    generate_signing_key,
    issue_app_token,
    load_or_create_signing_key,
    load_public_key,
    public_key_pem,
    verify_app_token,
)
from profilerhub_core.errors import Unauthorized


@pytest.fixture(scope="module")
def key():
    return generate_signing_key()


def test_token_for_this_app_and_owner_verifies_with_public_key_only(key) -> None:
    public = load_public_key(public_key_pem(key))
    assert not public.is_private
    claims = verify_app_token(public, issue_app_token(key, "app-1", "user-1"), "app-1", "user-1")
    assert claims["aud"] == "app-1" and claims["sub"] == "user-1"


@pytest.mark.parametrize(("app_id", "owner"), [("app-2", "user-1"), ("app-1", "user-2")])
def test_token_for_another_app_or_owner_is_refused(key, app_id: str, owner: str) -> None:
    token = issue_app_token(key, "app-1", "user-1")
    with pytest.raises(Unauthorized):
        verify_app_token(load_public_key(public_key_pem(key)), token, app_id, owner)


def test_expired_token_is_refused(key) -> None:
    token = issue_app_token(key, "app-1", "user-1", ttl=-30)
    with pytest.raises(Unauthorized):
        verify_app_token(load_public_key(public_key_pem(key)), token, "app-1", "user-1")


def test_token_signed_by_another_key_is_refused(key) -> None:
    forged = issue_app_token(generate_signing_key(), "app-1", "user-1")
    with pytest.raises(Unauthorized):
        verify_app_token(load_public_key(public_key_pem(key)), forged, "app-1", "user-1")


def test_symmetric_or_unsigned_forgeries_are_refused(key) -> None:
    now = int(time.time())
    claims = {"iss": "profilerhub-hub", "aud": "app-1", "sub": "user-1", "exp": now + 60}
    hs256 = jwt.encode({"alg": "HS256"}, claims, OctKey.generate_key(256))
    public = load_public_key(public_key_pem(key))
    for token in (hs256, "garbage", "a.b.c", ""):
        with pytest.raises(Unauthorized):
            verify_app_token(public, token, "app-1", "user-1")


def test_signing_key_is_created_once_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "app-token-key.pem"
    first = load_or_create_signing_key(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    again = load_or_create_signing_key(path)
    assert public_key_pem(first) == public_key_pem(again)
