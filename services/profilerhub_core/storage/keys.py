"""Object keys: what a safe key looks like, checked the same way by every backend.

A key is relative and ``/``-separated (``acme/alice/jobs/j1/raw/trace.json.gz``). Every backend
rejects, with :class:`~profilerhub_core.errors.InvalidInput`, what could escape a directory or be
read two ways: empty keys or segments, a leading ``/``, ``.`` and ``..`` segments, backslashes,
control characters (NUL included), segments over 255 bytes and keys over 1024 bytes (S3's limit).

A *prefix* names a folder: ``a/b`` and ``a/b/`` both mean "everything under ``a/b/``", so ``a/b``
never matches ``a/bc``. The empty prefix means the whole store.
"""

from __future__ import annotations

import re
import unicodedata

from profilerhub_core.errors import InvalidInput

MAX_KEY_BYTES = 1024
MAX_SEGMENT_BYTES = 255


def _describe(key: str) -> str:
    shown = key if len(key) <= 80 else key[:77] + "..."
    return ascii(shown)


def validate_key(key: str) -> str:
    """Return ``key`` unchanged when it is a safe object key, else raise ``InvalidInput``."""
    if not isinstance(key, str):
        raise InvalidInput(f"storage key must be a string, not {type(key).__name__}")
    if not key:
        raise InvalidInput("storage key must not be empty")
    if len(key.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise InvalidInput(f"storage key {_describe(key)} is longer than {MAX_KEY_BYTES} bytes")
    if key.startswith("/"):
        raise InvalidInput(f"storage key {_describe(key)} must be relative (no leading '/')")
    if "\\" in key:
        raise InvalidInput(f"storage key {_describe(key)} must use '/' as separator, not '\\'")
    for char in key:
        # Cc: NUL and the other C0/C1 controls; Cs: lone surrogates that cannot be encoded.
        if unicodedata.category(char) in ("Cc", "Cs"):
            raise InvalidInput(f"storage key {_describe(key)} contains a control character")
    for segment in key.split("/"):
        if segment in ("", ".", ".."):
            raise InvalidInput(
                f"storage key {_describe(key)} has an empty, '.' or '..' segment; use plain names"
            )
        if len(segment.encode("utf-8")) > MAX_SEGMENT_BYTES:
            raise InvalidInput(
                f"storage key {_describe(key)} has a segment longer than {MAX_SEGMENT_BYTES} bytes"
            )
    return key


def matching(value: str, pattern: re.Pattern[str], what: str, rule: str) -> str:
    """Return ``value`` when it fully matches ``pattern``, else ``InvalidInput("{what} ... {rule}")``."""
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise InvalidInput(f"{what} {value!r} is not valid: {rule}")
    return value


def validate_prefix(prefix: str) -> str:
    """Return the folder form of ``prefix`` (``""`` or ending in ``/``), or raise ``InvalidInput``."""
    if not isinstance(prefix, str):
        raise InvalidInput(f"storage prefix must be a string, not {type(prefix).__name__}")
    if prefix == "":
        return ""
    folder = prefix[:-1] if prefix.endswith("/") else prefix
    validate_key(folder)
    return folder + "/"


__all__ = ["MAX_KEY_BYTES", "MAX_SEGMENT_BYTES", "validate_key", "validate_prefix"]
