"""``import profilerhub`` is cheap: standard library only, measured in a fresh interpreter."""

from __future__ import annotations

import json
import re
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


def test_import_takes_under_100_ms() -> None:
    # Best of three: the figure is the import's own cost, not the machine's load at that moment.
    best = min(_import_us() for _ in range(3))
    assert best < 100_000, f"import profilerhub took {best / 1000:.1f} ms"


def _import_us() -> int:
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import profilerhub"],
        capture_output=True,
        text=True,
        check=True,
    )
    (line,) = [ln for ln in done.stderr.splitlines() if re.search(r"\|\s+profilerhub$", ln)]
    return int(line.split("|")[1])
