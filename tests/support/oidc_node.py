"""``NodeOpenIDProvider``: panva's certified ``oidc-provider`` (npm), run on node, for tests that
sign in through an OpenID provider nobody here wrote (tests/support/oidc/provider.mjs configures it;
tests/support/oidc_provider.py is the project's own, for the misbehaviours a real one never shows).

The package is installed with ``npm ci`` from tests/support/oidc/package-lock.json into a cache
folder named for the lock file's hash (``$PROFILERHUB_TEST_CACHE``, else ``~/.cache/profilerhub-tests``),
once per machine; a test is skipped, saying why, where node or npm is missing or the registry
cannot be reached.

    provider = NodeOpenIDProvider.start(tmp_path, client={...}, accounts={"alice": {...}})
    provider.issuer          # http://127.0.0.1:PORT
    provider.rotate_keys()   # a new signing key (new kid); the old one is gone from its JWKS
    provider.stop()
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SOURCE = Path(__file__).with_name("oidc")
NODE_MAJOR = 20  # what oidc-provider 9 runs on (it asks for ^20.19 || ^22.12 || >= 23)


def cache_root() -> Path:
    return Path(os.environ.get("PROFILERHUB_TEST_CACHE") or Path.home() / ".cache" / "profilerhub-tests")


def _node_version(node: str) -> tuple[int, ...]:
    done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    return tuple(int(part) for part in done.stdout.strip().lstrip("v").split(".")[:2])


def installed_modules() -> Path:
    """``node_modules`` of tests/support/oidc's lock file, installed once (``npm ci``) into the
    cache; skips the test, saying why, where that cannot be done."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are not installed: signing in through panva's oidc-provider needs them")
    if _node_version(node) < (NODE_MAJOR, 19):
        pytest.skip(f"node {'.'.join(map(str, _node_version(node)))} is too old for oidc-provider 9 (20.19+)")
    lock = (SOURCE / "package-lock.json").read_bytes()
    target = cache_root() / f"oidc-provider-{hashlib.sha256(lock).hexdigest()[:16]}"
    modules = target / "node_modules"
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"{target.name}.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)  # another test process may be installing the same
        if not (target / ".installed").exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            for name in ("package.json", "package-lock.json"):
                shutil.copy(SOURCE / name, target / name)
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"],
                cwd=target, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            if done.returncode != 0:
                why = done.stderr[-2000:]
                pytest.skip(f"npm ci of oidc-provider failed (is the npm registry reachable?):\n{why}")
            (target / ".installed").touch()
    return modules


@dataclass
class NodeOpenIDProvider:
    """A running provider; see the module docstring."""

    process: subprocess.Popen[str]
    issuer: str
    log: Path

    @classmethod
    def start(
        cls, folder: Path, *, client: dict[str, Any], accounts: dict[str, dict[str, Any]]
    ) -> NodeOpenIDProvider:
        """Run provider.mjs from ``folder`` (beside a link to the cached ``node_modules``)."""
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(SOURCE / "provider.mjs", folder / "provider.mjs")
        (folder / "node_modules").symlink_to(installed_modules())
        env = {**os.environ, "OIDC_CLIENT": json.dumps(client), "OIDC_ACCOUNTS": json.dumps(accounts)}
        log = folder / "provider.log"
        with log.open("w") as sink:
            process = subprocess.Popen(
                [str(shutil.which("node")), "provider.mjs"], cwd=folder, env=env,
                stdout=subprocess.PIPE, stderr=sink, text=True,
            )  # fmt: skip
        provider = cls(process, "", log)
        provider.issuer = provider._said("ready")
        return provider

    def _said(self, word: str) -> str:
        """What follows ``word`` on the next line of stdout that starts with it (the library's
        notices are on stdout too); fails with the output if the process ends first."""
        assert self.process.stdout is not None
        seen = []
        for line in self.process.stdout:
            if line.startswith(word + " "):
                return line.split()[1]
            seen.append(line)
        self.process.wait(30)
        said = "".join(seen) + self.log.read_text()
        pytest.fail(f"oidc-provider exited ({self.process.returncode}): {said}")

    def rotate_keys(self) -> str:
        """Sign with a new key from now on (the JWKS holds only it); returns its key id."""
        self.process.send_signal(signal.SIGUSR2)
        return self._said("rotated")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


__all__ = ["NodeOpenIDProvider", "installed_modules"]
