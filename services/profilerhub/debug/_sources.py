"""Where a trial reads from: a local output folder, S3, or the hub's tensors API.

A local or S3 source reads the SDK's ``tensors/*.jsonl.gz`` chunks itself (each once: a chunk is
never rewritten) and merges them into one ``TensorTable``; a folder of several runs (one per rank
of a distributed job, ``<job>``, ``<job>-2`` …) is read as one trial. The hub source asks the hub
for the table in its stored form (``GET …/jobs/{job_id}/tensors?format=npz``), which the hub builds
from the processed table, or while the job runs from the chunks so far. Each rank of a distributed
run is its own hub job of the run's name; a trial by name reads them all (``HubSource``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from profilerhub_analysis.tensor_chunks import ChunkedTable
from profilerhub_analysis.tensors import TensorTable

MAX_RANK_JOBS = 4096
"""At most this many jobs of one name are read as the ranks of one distributed run."""


@dataclass(frozen=True)
class FullRef:
    """A tensor saved whole (``full_tensors``): where its ``.npy`` is."""

    name: str
    mode: str
    rank: int
    step: int
    where: str  # a file path, an S3 key or a hub path


class Source(Protocol):
    name: str

    def load(self) -> tuple[TensorTable, list[FullRef]]: ...

    def read_full(self, ref: FullRef) -> bytes: ...

    def finished(self) -> bool: ...


class _ChunkSource:
    """The incremental part shared by the local and S3 sources (``ChunkedTable``)."""

    name = ""

    def __init__(self) -> None:
        self._chunks = ChunkedTable()

    def _keys(self) -> list[str]:
        raise NotImplementedError

    def _read(self, key: str) -> bytes:
        raise NotImplementedError

    def load(self) -> tuple[TensorTable, list[FullRef]]:
        table = self._chunks.update(self._keys(), self._read)
        full = [
            FullRef(f.name, f.mode, f.rank, f.step, f"{f.run}/{f.path}" if f.run else f.path)
            for f in self._chunks.full
        ]
        return table, full

    def read_full(self, ref: FullRef) -> bytes:
        return self._read(ref.where)


class LocalSource(_ChunkSource):
    def __init__(self, folder: Path) -> None:
        super().__init__()
        self.folder = folder
        self.name = str(folder)
        if not folder.is_dir():
            raise FileNotFoundError(f"no folder {folder}")

    def _runs(self) -> list[Path]:
        if (self.folder / "job.json").exists():
            return [self.folder]
        return sorted(p.parent for p in self.folder.glob("*/job.json"))

    def _keys(self) -> list[str]:
        return [str(p) for run in self._runs() for p in sorted((run / "tensors").glob("*.jsonl.gz"))]

    def _read(self, key: str) -> bytes:
        return Path(key).read_bytes()

    def finished(self) -> bool:
        runs = self._runs()
        return bool(runs) and all((run / "_SUCCESS").exists() for run in runs)


class S3Source(_ChunkSource):
    def __init__(self, url: str) -> None:
        super().__init__()
        import boto3

        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        self.bucket, self.prefix = bucket, prefix.strip("/")
        self.name = url
        endpoint = os.environ.get("PROFILERHUB_S3_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL")
        self._s3 = boto3.client("s3", endpoint_url=endpoint)

    def _list(self) -> list[str]:
        keys: list[str] = []
        token: dict[str, Any] = {}
        base = f"{self.prefix}/" if self.prefix else ""
        while True:
            page = self._s3.list_objects_v2(Bucket=self.bucket, Prefix=base, **token)
            keys += [o["Key"] for o in page.get("Contents", [])]
            if not page.get("IsTruncated"):
                return keys
            token = {"ContinuationToken": page["NextContinuationToken"]}

    def _keys(self) -> list[str]:
        return self._list()

    def _read(self, key: str) -> bytes:
        body: bytes = self._s3.get_object(Bucket=self.bucket, Key=key)["Body"].read()
        return body

    def finished(self) -> bool:
        keys = self._list()
        runs = [k.removesuffix("job.json") for k in keys if k.endswith("job.json")]
        return bool(runs) and all(f"{r}_SUCCESS" in keys for r in runs)


class HubSource:
    """A hub job by id; or by name, the newest job of that name with, for a distributed run
    (each rank registers its own job), the jobs of its other ranks.

    The other ranks are the next newest jobs of the name, taken while each brings ranks not seen
    yet, until the run's ``world_size`` (the newest Ready job's ``job.json``) ranks are there; a
    job repeating a rank (an earlier run) or without tensors ends the search. Their tables merge
    into one (the ``rank`` column tells them apart)."""

    def __init__(self, job: str, hub_url: str | None, token: str | None, http: Any = None) -> None:
        if http is None:
            from profilerhub.hubhttp import HubHTTP

            url = hub_url or os.environ.get("PROFILERHUB_URL")
            if not url:
                raise ValueError(f"{job!r} is not a folder or s3:// URL, and no hub is set (PROFILERHUB_URL)")
            token = token or os.environ.get("PROFILERHUB_TOKEN")
            http = HubHTTP(url, token, component="debug")  # the hub's one client (hubhttp)
        self._http = http  # or a test's signed-in client with the same ``send``
        me = self._get("/api/v1/me").json()
        self._jobs = f"/api/v1/domains/{me['domain']}/users/{me['user']}/jobs"
        self.job_id = self._find(self._jobs, job)
        self._by_name = self.job_id != job
        self.job_ids = [self.job_id]  # every rank's job once ``load`` found them (newest first)
        self.base = f"{self._jobs}/{self.job_id}"
        self._job = job
        self.name = f"{job} ({self.job_id})"

    def _get(self, path: str, **params: Any) -> Any:
        from profilerhub.hubhttp import error_of

        resp = self._http.send("GET", path, params=params)
        if resp.status_code >= 400:
            raise LookupError(f"GET {path}: HTTP {resp.status_code}: {error_of(resp)[1]}")
        return resp

    def _find(self, jobs: str, job: str) -> str:
        resp = self._http.send("GET", f"{jobs}/{job}")
        if resp.status_code == 200:
            return str(resp.json()["job_id"])
        token: str | None = None
        while True:
            page = self._get(jobs, **({"next_token": token} if token else {})).json()
            for item in page["items"]:
                if item["name"] == job:
                    return str(item["job_id"])
            token = page.get("next_token")
            if not token:
                raise LookupError(f"no job named or numbered {job!r} on the hub")

    def _one(self, job_id: str) -> tuple[TensorTable, list[FullRef]]:
        base = f"{self._jobs}/{job_id}"
        table = TensorTable.unpack(self._get(f"{base}/tensors", format="npz").content)
        full = self._get(f"{base}/tensors/full").json()["items"]
        refs = [
            FullRef(f["name"], f["mode"], int(f["rank"]), int(f["step"]), f"{job_id}/{f['path']}")
            for f in full
        ]
        return table, refs

    def _siblings(self) -> Iterator[str]:
        """The jobs of the name older than the newest, newest first (its other ranks' candidates),
        read page by page as the caller asks for more."""
        token: str | None = None
        seen, given = False, 0
        while True:
            page = self._get(self._jobs, **({"next_token": token} if token else {})).json()
            for item in page["items"]:
                if item["name"] != self._job:
                    continue
                if seen:
                    yield str(item["job_id"])
                    given += 1
                    if given >= MAX_RANK_JOBS:
                        return
                seen = seen or item["job_id"] == self.job_id
            token = page.get("next_token")
            if not token:
                return

    def load(self) -> tuple[TensorTable, list[FullRef]]:
        table, refs = self._one(self.job_id)
        ids = [self.job_id]
        ranks = set(table.ranks())
        world = self._world_size()
        if self._by_name and ranks and (world is None or len(ranks) < world):
            for job_id in self._siblings():
                more, more_refs = self._one(job_id)
                theirs = set(more.ranks())
                if not theirs or theirs & ranks:
                    break  # no tensors, or a rank already read: not this run's
                table, refs, ranks = table.merge(more), refs + more_refs, ranks | theirs
                ids.append(job_id)
                if world is not None and len(ranks) >= world:
                    break
        self.job_ids = ids
        return table, refs

    def _world_size(self) -> int | None:
        summary = self._get(self.base).json().get("summary") or {}
        world = (summary.get("job") or {}).get("world_size")
        return int(world) if isinstance(world, int) and world > 0 else None

    def read_full(self, ref: FullRef) -> bytes:
        job_id, path = ref.where.split("/", 1)
        data: bytes = self._get(f"{self._jobs}/{job_id}/tensors/full/{path}").content
        return data

    def finished(self) -> bool:
        """Every rank's job is over."""
        done = ("Ready", "Failed", "Stopped")
        return all(self._get(f"{self._jobs}/{j}").json()["status"] in done for j in self.job_ids)


def source_for(
    job_or_path: str, *, hub_url: str | None = None, token: str | None = None, http: Any = None
) -> Source:
    if http is not None:
        return HubSource(job_or_path, hub_url, token, http)
    if job_or_path.startswith("s3://"):
        return S3Source(job_or_path)
    path = Path(os.path.expanduser(job_or_path))
    if path.is_dir():
        return LocalSource(path)
    if "/" in job_or_path or os.sep in job_or_path:
        raise FileNotFoundError(f"no folder {job_or_path}")
    return HubSource(job_or_path, hub_url, token)
