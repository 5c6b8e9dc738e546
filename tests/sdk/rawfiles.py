"""Reading the SDK's raw layout back, from a directory or from a {path: bytes} mapping."""

from __future__ import annotations

import gzip
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def files_of_dir(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def records(files: Mapping[str, bytes], kind: str) -> list[dict[str, Any]]:
    """All records of ``<kind>/*.jsonl.gz`` chunks, in chunk order."""
    out: list[dict[str, Any]] = []
    for path in sorted(p for p in files if p.startswith(f"{kind}/")):
        assert path.endswith(".jsonl.gz"), path
        out += [json.loads(line) for line in gzip.decompress(files[path]).decode().splitlines()]
    return out


def job_json(files: Mapping[str, bytes]) -> dict[str, Any]:
    return json.loads(files["job.json"])


def torch_traces(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    return [
        json.loads(gzip.decompress(data)) for path, data in sorted(files.items()) if path.startswith("torch/")
    ]
