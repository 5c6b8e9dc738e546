"""The pages' static files, under a URL that holds their version, so the browser keeps them.

A page links its modules, styles and vendored libraries as ``{base}assets/{version}/…`` (the
app's ``static/`` folder; ``…/base/`` is ``profilerhub_core/web``, as under ``static/base/``),
where ``version`` is a hash of every file's path and bytes taken when the app starts. Those
answers say ``Cache-Control: max-age=31536000, immutable``: a page opened again (another
tab of the Profile page, a dashboard after the timeline) asks the app for none of them, where
each file under the unversioned ``static/`` is revalidated on every load, one request each (a
dozen for the Profile page). Module imports are relative, so a module's imports resolve under
its own version too.

A new app version, or a file changed on disk, is a new hash, hence new URLs; meanwhile two
cases are answered as ``static/`` answers them (``no-cache``: the ETag revalidates): a URL of
another version (a page loaded before the app restarted asks for a module it had not loaded
yet: it gets today's file rather than a 404) and a file changed since the hash was taken (an
editable install edited while the app runs is never cached for good under the old version).
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

from starlette.responses import Response
from starlette.staticfiles import PathLike, StaticFiles
from starlette.types import Scope

#: The answer for a file of this app's version: kept by the browser, never asked again (not
#: ``public``: a shared cache keeps no answer to a request with credentials).
IMMUTABLE = "max-age=31536000, immutable"
#: Every other static answer: revalidated on each use (ETag / If-None-Match).
REVALIDATE = "no-cache"


def folder_version(*folders: Path) -> str:
    """A short hash of the files under ``folders``: their paths (relative) and bytes."""
    digest = hashlib.sha256()
    for i, folder in enumerate(folders):
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest.update(f"{i}:{path.relative_to(folder).as_posix()}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class Static(StaticFiles):
    """The files of one folder; revalidated each load (ETag), unless mounted under a ``{version}``
    path parameter that is ``version`` and the file is as it was at ``taken`` (``time.time()``)."""

    def __init__(self, *, directory: Path, version: str | None = None, taken: float = 0.0) -> None:
        super().__init__(directory=directory)
        self.version, self.taken = version, taken

    def file_response(
        self, full_path: PathLike, stat_result: os.stat_result, scope: Scope, status_code: int = 200
    ) -> Response:
        response = super().file_response(full_path, stat_result, scope, status_code)
        current = (
            self.version is not None
            and scope.get("path_params", {}).get("version") == self.version
            and stat_result.st_mtime <= self.taken
        )
        response.headers["cache-control"] = IMMUTABLE if current else REVALIDATE
        return response


class Assets:
    """The version of ``static`` and ``shared`` (the app's and ``profilerhub_core.web``), taken once."""

    def __init__(self, static: Path, shared: Path) -> None:
        self.static, self.shared = static, shared
        self.taken = time.time()  # before reading: a file written meanwhile is newer than the hash
        self.version = folder_version(static, shared)

    def url(self, base: str) -> str:
        """Where the pages link their files: ``{base}assets/{version}`` (no trailing slash)."""
        return f"{base}assets/{self.version}"

    def folder(self, shared: bool = False) -> Static:
        """The app serving ``static`` (or ``shared``) under a ``{version}`` path parameter."""
        folder = self.shared if shared else self.static
        return Static(directory=folder, version=self.version, taken=self.taken)


__all__ = ["IMMUTABLE", "REVALIDATE", "Assets", "Static", "folder_version"]
