"""Build a store from a storage URL: ``file:///abs/dir`` or ``s3://bucket/prefix``."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

from profilerhub_core.errors import InvalidInput

from .base import ObjectStore
from .local import LocalStore

if TYPE_CHECKING:
    from .s3 import AddressingStyle

_FORMS = "use file:///absolute/dir for a local directory or s3://bucket/prefix for S3"


def open_store(
    storage_url: str,
    *,
    s3_endpoint_url: str | None = None,
    s3_region: str | None = None,
    s3_addressing_style: AddressingStyle | None = None,
    aws_access_key_id: str | None = None,
    aws_secret_access_key: str | None = None,
    aws_session_token: str | None = None,
    fsync: bool = False,
) -> ObjectStore:
    """The store ``storage_url`` names; ``InvalidInput`` (saying the accepted forms) for anything else.

    ``file:///abs/dir`` opens a :class:`LocalStore` there (creating the directory, ``fsync``
    passed on); percent-escapes in the path are decoded. ``s3://bucket/prefix`` opens an
    :class:`~profilerhub_core.storage.s3.S3Store`; the ``s3_*`` and ``aws_*`` arguments go to it
    and are ignored for ``file://``. Credentials left unset come from boto3's usual chain.
    """
    if not isinstance(storage_url, str) or not storage_url.strip():
        raise InvalidInput(f"storage URL is empty; {_FORMS}")
    parts = urlsplit(storage_url)
    if parts.query or parts.fragment:
        raise InvalidInput(f"storage URL {storage_url!r} must not have a query or fragment; {_FORMS}")
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise InvalidInput(
                f"storage URL {storage_url!r} names a host ({parts.netloc!r}); a local directory needs "
                "three slashes and an absolute path: file:///absolute/dir"
            )
        path = unquote(parts.path)
        if not path.startswith("/") or path == "/":
            raise InvalidInput(f"storage URL {storage_url!r} needs an absolute directory below '/'; {_FORMS}")
        return LocalStore(path, fsync=fsync)
    if parts.scheme == "s3":
        from .s3 import S3Store

        if not parts.netloc or "@" in parts.netloc or ":" in parts.netloc:
            raise InvalidInput(f"storage URL {storage_url!r} needs a bucket name after s3://; {_FORMS}")
        return S3Store(
            parts.netloc,
            parts.path.removeprefix("/").removesuffix("/"),
            endpoint_url=s3_endpoint_url,
            region=s3_region,
            aws_access_key_id=aws_access_key_id,
            aws_secret_access_key=aws_secret_access_key,
            aws_session_token=aws_session_token,
            addressing_style=s3_addressing_style,
        )
    raise InvalidInput(f"storage URL {storage_url!r} has an unsupported scheme {parts.scheme!r}; {_FORMS}")


__all__ = ["open_store"]
