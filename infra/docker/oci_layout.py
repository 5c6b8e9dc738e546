"""The OCI image layout ``rootfs_image.py build`` writes: one reproducible layer, the config, the
manifest, the index (and Docker's ``manifest.json``), as a folder and as a tarball.

Standard library only, like the script that loads it (``rootfs_image.py``: see its docstring).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

# Directories whose contents belong to the runtime, not the image (kept empty in the layer).
RUNTIME_DIRS = ("dev", "proc", "sys", "tmp")

MEDIA_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
MEDIA_CONFIG = "application/vnd.oci.image.config.v1+json"
MEDIA_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
MEDIA_INDEX = "application/vnd.oci.image.index.v1+json"


class _Hashing:
    """A write-only file that hashes and counts what passes through it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw, self.sha256, self.size = raw, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        self.sha256.update(data)
        self.size += len(data)
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()


def write_layer(rootfs: Path, out: IO[bytes]) -> tuple[str, str, int, int]:
    """``rootfs`` as one gzipped layer on ``out``: ``(digest, diff_id, compressed, uncompressed)``.
    Entries sorted, owners numeric only, times as they are; runtime folders left empty."""
    compressed = _Hashing(out)
    with gzip.GzipFile(fileobj=compressed, mode="wb", mtime=0, compresslevel=6) as zipped:
        plain = _Hashing(zipped)  # type: ignore[arg-type]
        with tarfile.open(fileobj=plain, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            for path in walk(rootfs):
                info = tar.gettarinfo(str(path), arcname=path.relative_to(rootfs).as_posix())
                info.mtime = int(info.mtime)  # what a .pyc compares with its source's
                info.uname = info.gname = ""
                if info.isreg():
                    with path.open("rb") as data:
                        tar.addfile(info, data)
                else:
                    tar.addfile(info)
    return (
        f"sha256:{compressed.sha256.hexdigest()}",
        f"sha256:{plain.sha256.hexdigest()}",
        compressed.size,
        plain.size,
    )


def walk(rootfs: Path) -> Iterator[Path]:
    """Every path under ``rootfs`` in sorted order, parents first; runtime folders' contents and
    the base's marker skipped."""
    for directory, folders, names in os.walk(rootfs):
        here = Path(directory)
        if here != rootfs:
            yield here
        if here.parent == rootfs and here.name in RUNTIME_DIRS:
            folders.clear()
            continue
        folders.sort()
        for name in sorted(names):
            if not (here == rootfs and name == ".profilerhub-base"):
                yield here / name
        for name in list(folders):
            if (here / name).is_symlink():
                folders.remove(name)
                yield here / name


def write_blob(layout: Path, data: bytes) -> tuple[str, int]:
    digest = hashlib.sha256(data).hexdigest()
    (layout / "blobs" / "sha256" / digest).write_bytes(data)
    return f"sha256:{digest}", len(data)


def pack(rootfs: Path, config: dict[str, Any], layout: Path, ref: str, epoch: int) -> dict[str, Any]:
    """Write the OCI image layout of ``rootfs`` with ``config`` into ``layout``; its figures."""
    blobs = layout / "blobs" / "sha256"
    blobs.mkdir(parents=True, exist_ok=True)
    partial = blobs / "layer.partial"
    with partial.open("wb") as out:
        layer, diff_id, layer_size, tar_size = write_layer(rootfs, out)
    partial.rename(blobs / layer.split(":", 1)[1])
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    image = {
        "created": created,
        "architecture": {"x86_64": "amd64", "aarch64": "arm64"}.get(os.uname().machine, os.uname().machine),
        "os": "linux",
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": created, "created_by": "infra/docker/rootfs_image.py build"}],
    }
    config_digest, config_size = write_blob(layout, json.dumps(image, indent=2).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {"mediaType": MEDIA_CONFIG, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": MEDIA_LAYER, "digest": layer, "size": layer_size}],
    }
    manifest_digest, manifest_size = write_blob(layout, json.dumps(manifest, indent=2).encode())
    index = {
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [
            {
                "mediaType": MEDIA_MANIFEST,
                "digest": manifest_digest,
                "size": manifest_size,
                "annotations": {"org.opencontainers.image.ref.name": ref},
            }
        ],
    }
    (layout / "index.json").write_text(json.dumps(index, indent=2))
    (layout / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    docker = [
        {
            "Config": f"blobs/sha256/{config_digest[7:]}",
            "RepoTags": [ref],
            "Layers": [f"blobs/sha256/{layer[7:]}"],
        }
    ]
    (layout / "manifest.json").write_text(json.dumps(docker))
    return {
        "layer_gzip_bytes": layer_size,
        "layer_tar_bytes": tar_size,
        "config_bytes": config_size,
        "manifest_bytes": manifest_size,
        "manifest_digest": manifest_digest,
    }


def read_config(layout: Path) -> dict[str, Any]:
    """The image config (``config`` object) of the layout's one image."""
    blob = layout / "blobs" / "sha256"
    (entry,) = json.loads((layout / "index.json").read_text())["manifests"]
    manifest = json.loads((blob / entry["digest"][7:]).read_text())
    config: dict[str, Any] = json.loads((blob / manifest["config"]["digest"][7:]).read_text())["config"]
    return config


def tar_layout(layout: Path, tarball: Path, epoch: int) -> None:
    with tarfile.open(tarball, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(p for p in layout.rglob("*") if p.is_file()):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(layout).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "", ""
            with path.open("rb") as data:
                tar.addfile(info, data)
