"""Objects as files under one directory, written atomically (temp file + rename).

Key ``a/b/c`` is the file ``<root>/a/b/c``. Internal state (temp files, multipart parts) lives in
``<root>/.profilerhub-staging``, a name keys may not start with, on the same filesystem so the
final rename is atomic. Files are created with mode 0600. A key can never reach outside the root:
keys are validated, and every path is resolved (symlinks included) and checked to stay inside.
One local-only limit: an object cannot also be a folder (``a/b`` and ``a/b/c`` cannot both exist);
storing the second raises ``Conflict``.
"""

from __future__ import annotations

import builtins
import datetime as dt
import errno
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from profilerhub_core.errors import Conflict, InvalidInput, NotFound, StorageFull, Unavailable

from .base import (
    DEFAULT_CHUNK_SIZE,
    MIN_PART_SIZE,
    MultipartUpload,
    ObjectInfo,
    ObjectStore,
    UploadedPart,
    check_chunk_size,
    check_part_number,
    check_parts,
    too_large,
)
from .keys import validate_key, validate_prefix

STAGING = ".profilerhub-staging"
_UPLOAD_ID = re.compile(r"[0-9a-f]{32}")
_STALE_TMP_SECONDS = 24 * 3600
_STALE_UPLOAD_SECONDS = 7 * 24 * 3600


def _utc(timestamp: float) -> dt.datetime:
    return dt.datetime.fromtimestamp(timestamp, dt.UTC)


def _etag(digest: str) -> str:
    return f'"{digest}"'


_NO_SPACE = frozenset({errno.ENOSPC, errno.EDQUOT})  # a full disk, a user's disk quota


class LocalStore(ObjectStore):
    """An :class:`ObjectStore` in a local directory (``file:///abs/dir``).

    ``root`` is created when missing (unless ``create=False``). With ``fsync=True`` every write is
    flushed to disk, file and directory, before it returns: slower, but survives a power cut.
    """

    supports_presigned_urls = False

    def __init__(self, root: str | os.PathLike[str], *, fsync: bool = False, create: bool = True) -> None:
        given = Path(root)
        try:
            if create:
                given.mkdir(parents=True, exist_ok=True)
            if not given.is_dir():
                raise Unavailable(
                    f"local storage root {given} is not a directory; create it or point the storage URL "
                    "elsewhere"
                )
            self.root = Path(os.path.realpath(given))
            self._tmp = self.root / STAGING / "tmp"
            self._uploads = self.root / STAGING / "multipart"
            self._tmp.mkdir(parents=True, exist_ok=True)
            self._uploads.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._unavailable(exc, given) from exc
        self.fsync = fsync
        self._sweep_stale()

    def __repr__(self) -> str:
        return f"LocalStore({str(self.root)!r})"

    # -- paths -----------------------------------------------------------------------------------

    def _path(self, key: str) -> Path:
        validate_key(key)
        if key.split("/", 1)[0] == STAGING:
            raise InvalidInput(f"storage key {key!r} uses the local store's reserved folder {STAGING}")
        path = self.root.joinpath(*key.split("/"))
        self._confine(path, key)
        return path

    def _folder(self, prefix: str) -> tuple[str, Path]:
        folder = validate_prefix(prefix)
        if not folder:
            return "", self.root
        return folder, self._path(folder[:-1])

    def _confine(self, path: Path, key: str) -> None:
        real = os.path.realpath(path)
        root = str(self.root)
        if real != root and not real.startswith(root + os.sep):
            raise InvalidInput(f"storage key {key!r} resolves outside the store's root (through a symlink)")

    def local_path(self, key: str) -> Path:
        """The file that holds ``key`` (it exists), for readers that want a path (pyarrow, mmap)."""
        path = self._path(key)
        with self._errors(key, reading=True):
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise NotFound(f"no object at key {key!r}")
        return path

    def _failure(self, exc: OSError, where: Path | None = None) -> str:
        return (
            f"local storage at {where or self.root} failed ({exc.strerror or exc}); check that the "
            "directory exists, is writable by this process and has free space"
        )

    def _unavailable(self, exc: OSError, where: Path | None = None) -> Unavailable:
        """The error for a failed file operation: ``StorageFull`` when the disk or a quota is full."""
        message = self._failure(exc, where)
        return StorageFull(message) if exc.errno in _NO_SPACE else Unavailable(message)

    @contextmanager
    def _errors(self, key: str, *, reading: bool = False) -> Iterator[None]:
        try:
            yield
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError) as exc:
            if not reading:
                raise self._unavailable(exc) from exc
            raise NotFound(f"no object at key {key!r}") from exc
        except OSError as exc:
            raise self._unavailable(exc) from exc

    # -- whole objects -------------------------------------------------------------------------

    def put_stream(self, key: str, chunks: Iterable[bytes], *, max_bytes: int | None = None) -> int:
        path = self._path(key)
        with self._errors(key):
            fd, tmp = tempfile.mkstemp(dir=self._tmp, prefix="put-")
        out = os.fdopen(fd, "wb")
        try:
            size = 0
            # Only the file operations are storage failures; what the producer raises passes as is.
            for chunk in chunks:
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise too_large(key, max_bytes)
                with self._errors(key):
                    out.write(chunk)
            with self._errors(key):
                self._sync(out)
                out.close()
                self._install(tmp, path, key)
        except BaseException:
            # Closing flushes what is buffered; on a full disk that fails again and must not
            # replace the error already raised (Unavailable, or the producer's own).
            with suppress(OSError):
                out.close()
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        return size

    def _sync(self, out: BinaryIO) -> None:
        out.flush()
        if self.fsync:
            os.fsync(out.fileno())

    def _install(self, tmp: str, path: Path, key: str) -> None:
        """Rename a finished temp file to ``path``, making its folders (a delete may prune them)."""
        for _ in range(100):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self._confine(path.parent, key)
                os.replace(tmp, path)
            except (FileNotFoundError, FileExistsError, NotADirectoryError, IsADirectoryError) as exc:
                # A concurrent delete may prune an empty folder between mkdir and rename; retry
                # unless an object really sits where a folder (or a folder where the object) must go.
                if isinstance(exc, IsADirectoryError) or self._object_on_path(path):
                    raise Conflict(
                        f"cannot store {key!r}: on a local store a key cannot be both an object and a folder"
                    ) from exc
                continue
            if self.fsync:
                dir_fd = os.open(path.parent, os.O_RDONLY)
                try:
                    os.fsync(dir_fd)
                finally:
                    os.close(dir_fd)
            return
        raise Unavailable(f"could not store {key!r}: its folder kept disappearing under concurrent deletes")

    def _object_on_path(self, path: Path) -> bool:
        """Whether a file occupies one of the folders ``path`` needs."""
        for folder in reversed(path.parents):
            if folder == self.root or self.root not in folder.parents:
                continue
            try:
                if not stat.S_ISDIR(os.lstat(folder).st_mode):
                    return True
            except FileNotFoundError:
                return False
        return False

    def _existing_file(self, key: str) -> tuple[Path, os.stat_result]:
        path = self._path(key)
        with self._errors(key, reading=True):
            info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise NotFound(f"no object at key {key!r}")
        return path, info

    def open(self, key: str) -> BinaryIO:
        path, _ = self._existing_file(key)
        with self._errors(key, reading=True):
            return builtins.open(path, "rb")

    def stream(self, key: str, chunk_size: int = DEFAULT_CHUNK_SIZE) -> Iterator[bytes]:
        check_chunk_size(chunk_size)
        path, _ = self._existing_file(key)
        return self._chunks(path, key, chunk_size)

    def _chunks(self, path: Path, key: str, chunk_size: int) -> Iterator[bytes]:
        with self._errors(key, reading=True), builtins.open(path, "rb") as src:
            while chunk := src.read(chunk_size):
                yield chunk

    def get(self, key: str) -> bytes:
        path, _ = self._existing_file(key)
        with self._errors(key, reading=True):
            return path.read_bytes()

    def head(self, key: str) -> ObjectInfo:
        _, info = self._existing_file(key)
        return ObjectInfo(key, info.st_size, _utc(info.st_mtime))

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        folder, path = self._folder(prefix)
        return self._walk(path, folder)

    def _walk(self, directory: Path | str, key_prefix: str) -> Iterator[ObjectInfo]:
        try:
            with os.scandir(directory) as found:
                entries = builtins.list(found)
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise self._unavailable(exc) from exc
        # A folder sorts as "name/" so the whole walk yields keys in byte order ("a-b" < "a/x").
        named: builtins.list[tuple[bytes, os.DirEntry[str]]] = []
        for entry in entries:
            if (not key_prefix and entry.name == STAGING) or entry.is_symlink():
                continue
            is_dir = entry.is_dir(follow_symlinks=False)
            name = entry.name + "/" if is_dir else entry.name
            named.append((name.encode("utf-8", "surrogateescape"), entry))
        named.sort(key=lambda item: item[0])
        for _, entry in named:
            key = key_prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                yield from self._walk(entry.path, key + "/")
                continue
            try:
                validate_key(key)
                info = entry.stat(follow_symlinks=False)
            except (InvalidInput, FileNotFoundError):
                continue  # not a name this store writes, or deleted while listing
            if stat.S_ISREG(info.st_mode):
                yield ObjectInfo(key, info.st_size, _utc(info.st_mtime))

    def delete(self, key: str) -> None:
        path = self._path(key)
        with self._errors(key):
            try:
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    return
                os.unlink(path)
            except (FileNotFoundError, NotADirectoryError):
                return
            self._prune(path.parent)

    def delete_prefix(self, prefix: str) -> int:
        folder, path = self._folder(prefix)
        if not folder:
            raise InvalidInput("delete_prefix needs a non-empty prefix; refusing to empty the whole store")
        count = 0
        with self._errors(folder):
            for directory, dirnames, filenames in os.walk(path, topdown=False):
                for name in filenames:
                    with suppress(FileNotFoundError):
                        os.unlink(os.path.join(directory, name))
                        count += 1
                for name in dirnames:
                    with suppress(OSError):  # a concurrent writer may have just filled it
                        os.rmdir(os.path.join(directory, name))
            with suppress(OSError):
                os.rmdir(path)
            self._prune(path.parent)
        return count

    def _prune(self, directory: Path) -> None:
        """Remove now-empty folders from ``directory`` up to (not including) the root."""
        while directory != self.root and self.root in directory.parents:
            try:
                os.rmdir(directory)
            except OSError:
                return
            directory = directory.parent

    # -- multipart -------------------------------------------------------------------------------

    def _upload_dir(self, upload: MultipartUpload) -> Path:
        validate_key(upload.key)
        if not _UPLOAD_ID.fullmatch(upload.upload_id):
            raise NotFound(f"no multipart upload {upload.upload_id!r} for key {upload.key!r}")
        where = self._uploads / upload.upload_id
        try:
            recorded = (where / "key").read_text("utf-8")
        except FileNotFoundError:
            recorded = None
        except OSError as exc:
            raise self._unavailable(exc) from exc
        if recorded != upload.key:
            raise NotFound(f"no multipart upload {upload.upload_id!r} for key {upload.key!r}")
        return where

    def create_multipart_upload(self, key: str) -> MultipartUpload:
        self._path(key)
        upload = MultipartUpload(key, uuid.uuid4().hex)
        with self._errors(key):
            where = self._uploads / upload.upload_id
            where.mkdir()
            (where / "key").write_text(key, "utf-8")
        return upload

    def upload_part(self, upload: MultipartUpload, part_number: int, data: bytes) -> UploadedPart:
        check_part_number(part_number)
        where = self._upload_dir(upload)
        with self._errors(upload.key):
            fd, tmp = tempfile.mkstemp(dir=self._tmp, prefix="part-")
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    self._sync(out)
                os.replace(tmp, where / f"{part_number:05d}")
            except BaseException:
                with suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
        return UploadedPart(part_number, _etag(hashlib.md5(data, usedforsecurity=False).hexdigest()))

    def complete_multipart_upload(self, upload: MultipartUpload, parts: Sequence[UploadedPart]) -> None:
        check_parts(parts)
        where = self._upload_dir(upload)
        path = self._path(upload.key)
        with self._errors(upload.key):
            fd, tmp = tempfile.mkstemp(dir=self._tmp, prefix="join-")
            try:
                with os.fdopen(fd, "wb") as out:
                    for index, part in enumerate(parts):
                        size = self._append_part(out, where, part)
                        if size < MIN_PART_SIZE and index < len(parts) - 1:
                            raise InvalidInput(
                                f"part {part.part_number} is {size} bytes; every part but the last "
                                f"must be at least {MIN_PART_SIZE} bytes (5 MiB)"
                            )
                    self._sync(out)
                self._install(tmp, path, upload.key)
            except BaseException:
                with suppress(FileNotFoundError):
                    os.unlink(tmp)
                raise
            shutil.rmtree(where, ignore_errors=True)

    def _append_part(self, out: BinaryIO, where: Path, part: UploadedPart) -> int:
        digest = hashlib.md5(usedforsecurity=False)
        size = 0
        part_file = where / f"{part.part_number:05d}"
        if not part_file.is_file():
            raise InvalidInput(f"part {part.part_number} was never uploaded")
        with builtins.open(part_file, "rb") as src:
            while chunk := src.read(DEFAULT_CHUNK_SIZE):
                digest.update(chunk)
                size += len(chunk)
                out.write(chunk)
        if digest.hexdigest() != part.etag.strip('"'):
            raise InvalidInput(f"part {part.part_number}'s ETag does not match the uploaded part")
        return size

    def abort_multipart_upload(self, upload: MultipartUpload) -> None:
        try:
            where = self._upload_dir(upload)
        except NotFound:
            return
        shutil.rmtree(where, ignore_errors=True)

    # -- lifecycle -------------------------------------------------------------------------------

    def check(self) -> None:
        probe = self._tmp / f"check-{uuid.uuid4().hex}"
        try:
            probe.write_bytes(b"ok")
            if probe.read_bytes() != b"ok":
                raise Unavailable(f"local storage at {self.root} did not read back what was written")
        except OSError as exc:
            raise self._unavailable(exc) from exc
        finally:
            with suppress(OSError):
                probe.unlink()

    def _sweep_stale(self) -> None:
        """Drop temp files and multipart uploads a crashed process left behind."""
        now = time.time()
        for directory, age in ((self._tmp, _STALE_TMP_SECONDS), (self._uploads, _STALE_UPLOAD_SECONDS)):
            with suppress(OSError), os.scandir(directory) as found:
                for entry in found:
                    with suppress(OSError):
                        if now - entry.stat(follow_symlinks=False).st_mtime > age:
                            if entry.is_dir(follow_symlinks=False):
                                shutil.rmtree(entry.path, ignore_errors=True)
                            else:
                                os.unlink(entry.path)


__all__ = ["LocalStore"]
