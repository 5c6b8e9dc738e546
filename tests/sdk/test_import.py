"""``import profilerhub`` is cheap: standard library only, measured in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "torch",
    "httpx",
    "boto3",
    "botocore",
    "psutil",
    "numpy",
    "fastapi",
    "sqlalchemy",
    "pydantic",
    "celery",
    "redis",
    "typer",
    "rich",
    "profilerhub_core",
    "profilerhub_hub",
)


def test_import_pulls_in_no_heavy_or_server_dependency() -> None:
    code = "import json, sys; import profilerhub; print(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = {m.split(".")[0] for m in json.loads(done.stdout)}
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


# How long the import takes is a benchmark's figure, not a test's: benchmarks/bench_sdk_import.py.
