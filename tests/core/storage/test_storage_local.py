"""What only the local-directory store promises: confinement to its root, atomic files, tidy folders."""

from __future__ import annotations

import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from profilerhub_core.errors import Conflict, InvalidInput, NotFound, Unavailable
from profilerhub_core.storage import LocalStore, MultipartUpload
from profilerhub_core.storage.local import STAGING


def _entries(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if STAGING not in p.parts}


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the store's root, holding a secret nothing should reach."""
    place = tmp_path / "outside"
    place.mkdir()
    (place / "secret").write_bytes(b"do not read")
    return place


def test_symlinked_folder_cannot_lead_out_of_the_root(local_store: LocalStore, outside: Path) -> None:
    (local_store.root / "evil").symlink_to(outside, target_is_directory=True)
    with pytest.raises(InvalidInput, match="outside the store's root"):
        local_store.get("evil/secret")
    with pytest.raises(InvalidInput, match="outside the store's root"):
        local_store.put("evil/planted", b"x")
    with pytest.raises(InvalidInput, match="outside the store's root"):
        local_store.delete_prefix("evil")
    assert sorted(p.name for p in outside.iterdir()) == ["secret"]
    assert (outside / "secret").read_bytes() == b"do not read"
    assert [info.key for info in local_store.list()] == []


def test_symlinked_file_cannot_be_read_through(local_store: LocalStore, outside: Path) -> None:
    (local_store.root / "link").symlink_to(outside / "secret")
    with pytest.raises(InvalidInput, match="outside the store's root"):
        local_store.get("link")
    with pytest.raises(InvalidInput, match="outside the store's root"):
        local_store.open("link")


def test_staging_folder_is_reserved_and_never_listed(local_store: LocalStore) -> None:
    local_store.create_multipart_upload("pending")
    with pytest.raises(InvalidInput, match="reserved"):
        local_store.put(f"{STAGING}/tmp/x", b"x")
    with pytest.raises(InvalidInput, match="reserved"):
        local_store.delete_prefix(STAGING)
    assert list(local_store.list()) == []
    local_store.put(f"deeper/{STAGING}", b"fine below the top")
    assert [i.key for i in local_store.list()] == [f"deeper/{STAGING}"]


def test_readers_never_see_a_half_written_object(local_store: LocalStore) -> None:
    size = 512 * 1024
    local_store.put("hot", b"A" * size)
    stop = threading.Event()

    def writer() -> None:
        for i in range(60):
            letter = b"AB"[i % 2 : i % 2 + 1]
            local_store.put_stream("hot", (letter * 4096 for _ in range(size // 4096)))
        stop.set()

    thread = threading.Thread(target=writer)
    thread.start()
    while not stop.is_set():
        data = local_store.get("hot")
        assert len(data) == size
        assert data in (b"A" * size, b"B" * size)
    thread.join()
    assert local_store.get("hot") == b"B" * size


def test_failed_write_leaves_no_temp_file(local_store: LocalStore) -> None:
    def chunks() -> Iterator[bytes]:
        yield b"partial"
        raise OSError("disk went away")

    with pytest.raises(OSError, match="disk went away"):
        local_store.put_stream("x", chunks())
    assert list((local_store.root / STAGING / "tmp").iterdir()) == []
    assert _entries(local_store.root) == set()


def test_an_object_cannot_also_be_a_folder(local_store: LocalStore) -> None:
    local_store.put("a/b", b"object")
    with pytest.raises(Conflict, match="both an object and a folder"):
        local_store.put("a/b/c", b"x")
    local_store.put("x/y/z", b"object")
    with pytest.raises(Conflict, match="both an object and a folder"):
        local_store.put("x/y", b"x")
    assert local_store.get("a/b") == b"object"
    assert local_store.get("x/y/z") == b"object"


def test_deleting_the_last_object_removes_its_empty_folders(local_store: LocalStore) -> None:
    local_store.put("d/u/jobs/j1/raw/a", b"1")
    local_store.put("d/u/jobs/j2/raw/b", b"2")
    local_store.delete("d/u/jobs/j1/raw/a")
    assert _entries(local_store.root) == {
        "d",
        "d/u",
        "d/u/jobs",
        "d/u/jobs/j2",
        "d/u/jobs/j2/raw",
        "d/u/jobs/j2/raw/b",
    }
    assert local_store.delete_prefix("d/u/jobs/j2") == 1
    assert _entries(local_store.root) == set()
    assert local_store.root.is_dir()


def test_local_path_is_the_file_holding_the_object(local_store: LocalStore) -> None:
    local_store.put("p/q.parquet", b"PAR1")
    path = local_store.local_path("p/q.parquet")
    assert path == local_store.root / "p" / "q.parquet"
    assert path.read_bytes() == b"PAR1"
    with pytest.raises(NotFound):
        local_store.local_path("p/missing")
    with pytest.raises(NotFound):
        local_store.local_path("p")


def test_objects_are_readable_by_their_owner_only(local_store: LocalStore) -> None:
    local_store.put("private", b"x")
    assert stat.S_IMODE(os.stat(local_store.root / "private").st_mode) == 0o600


def test_fsync_mode_writes_the_same_objects(tmp_path: Path) -> None:
    with LocalStore(tmp_path / "synced", fsync=True) as store:
        store.put("a/b", b"durable")
        upload = store.create_multipart_upload("a/c")
        store.complete_multipart_upload(upload, [store.upload_part(upload, 1, b"part")])
        assert store.get("a/b") == b"durable"
        assert store.get("a/c") == b"part"


def test_opening_sweeps_what_a_crashed_writer_left(tmp_path: Path) -> None:
    LocalStore(tmp_path / "s").create_multipart_upload("abandoned")
    tmp = tmp_path / "s" / STAGING / "tmp"
    (tmp / "put-old").write_bytes(b"stale")
    (tmp / "put-new").write_bytes(b"in flight")
    long_ago = time.time() - 8 * 24 * 3600
    os.utime(tmp / "put-old", (long_ago, long_ago))
    for upload in (tmp_path / "s" / STAGING / "multipart").iterdir():
        os.utime(upload, (long_ago, long_ago))
    LocalStore(tmp_path / "s")
    assert sorted(p.name for p in tmp.iterdir()) == ["put-new"]
    assert list((tmp_path / "s" / STAGING / "multipart").iterdir()) == []


def test_a_root_that_is_a_file_is_unavailable(tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(Unavailable, match="check that the directory exists"):
        LocalStore(tmp_path / "file")
    with pytest.raises(Unavailable, match="not a directory"):
        LocalStore(tmp_path / "missing", create=False)


def test_unknown_or_aborted_upload_is_not_found(local_store: LocalStore) -> None:
    upload = local_store.create_multipart_upload("mp/x")
    part = local_store.upload_part(upload, 1, b"data")
    with pytest.raises(NotFound):
        local_store.upload_part(MultipartUpload("mp/other-key", upload.upload_id), 1, b"data")
    local_store.abort_multipart_upload(upload)
    with pytest.raises(NotFound):
        local_store.upload_part(upload, 2, b"more")
    with pytest.raises(NotFound):
        local_store.complete_multipart_upload(upload, [part])
    for upload_id in ("f" * 32, "../../escape", "", "F" * 32):
        with pytest.raises(NotFound):
            local_store.upload_part(MultipartUpload("mp/x", upload_id), 1, b"data")


def test_missing_part_is_refused_at_completion(local_store: LocalStore) -> None:
    upload = local_store.create_multipart_upload("mp/gap")
    first = local_store.upload_part(upload, 1, b"x" * (5 * 1024 * 1024))
    with pytest.raises(InvalidInput, match="part 2 was never uploaded"):
        local_store.complete_multipart_upload(upload, [first, first.__class__(2, '"abc"')])
    assert not local_store.exists("mp/gap")


@pytest.mark.skipif(
    not os.path.exists("/dev/full"), reason="needs /dev/full (Linux) to stand for a full disk"
)
def test_a_full_disk_is_unavailable_and_leaves_nothing(
    local_store: LocalStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    made: list[str] = []
    real_mkstemp = tempfile.mkstemp

    def on_a_full_disk(*args: object, **kwargs: object) -> tuple[int, str]:
        fd, path = real_mkstemp(*args, **kwargs)  # type: ignore[call-overload]
        os.close(fd)
        made.append(path)
        return os.open("/dev/full", os.O_WRONLY), path  # every write or flush: ENOSPC

    monkeypatch.setattr(tempfile, "mkstemp", on_a_full_disk)
    with pytest.raises(Unavailable, match="No space left"):
        local_store.put("small.json", b"{}")  # buffered: it is the flush (then close) that fails
    assert made and not os.path.exists(made[0])
    assert not local_store.exists("small.json")
