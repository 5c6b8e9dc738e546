"""JupyterHub, measured in the same run: the anchor that bench_apps.py and bench_api.py print beside
ProfilerHub's figures, so a ratio never compares today's ProfilerHub with another day's machine.

    from jupyterhub_anchor import JupyterHub, Unavailable
    with JupyterHub.started() as jh:          # installs on first use, then starts it on free ports
        jh.add_users(["u1"]); seconds = jh.spawn("u1")

What runs: JupyterHub (``VERSION``) in its own virtual environment with jupyter_server for the
single-user servers, and configurable-http-proxy (``CHP_VERSION``) from the npm registry, both
installed once under ``$PROFILERHUB_BENCH_CACHE`` (default ``~/.cache/profilerhub-bench``): about a
minute the first time, nothing after. The hub uses the dummy authenticator and
``SimpleLocalProcessSpawner`` (JupyterHub's local-process spawner without a Unix user per person,
the one its own tests use; servers run as this process's user, so as root they get
``--allow-root``), a SQLite database, and a service token with the admin scopes the benchmarks need.

Without the registries (no network, no ``npm``) ``Unavailable`` says what is missing, and the
benchmarks fall back to the figures written into them, saying so.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import psutil
from bench_cache import CACHE, Unavailable, venv

VERSION = "5.2.1"
CHP_VERSION = "4.6.3"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(check: Callable[[], bool], timeout: float, what: str, interval: float = 0.02) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"JupyterHub: {what} not within {timeout:.0f} s")
        time.sleep(interval)
    return time.monotonic() - started


def ensure() -> tuple[Path, Path]:
    """JupyterHub's ``bin`` folder and configurable-http-proxy's executable, installed if missing."""
    bin_dir = venv(f"jupyterhub-{VERSION}", [f"jupyterhub=={VERSION}", "jupyter_server"], "jupyterhub")
    chp_dir = CACHE / f"chp-{CHP_VERSION}"
    chp = chp_dir / "node_modules" / ".bin" / "configurable-http-proxy"
    if not chp.exists():
        if shutil.which("npm") is None:
            raise Unavailable("configurable-http-proxy needs npm: install Node.js 18+ and run again")
        print(f"installing configurable-http-proxy {CHP_VERSION} into {chp_dir} (once) ...", file=sys.stderr)
        npm = ["npm", "install", "--silent", "--prefix", str(chp_dir)]
        done = subprocess.run(
            [*npm, f"configurable-http-proxy@{CHP_VERSION}"], capture_output=True, text=True
        )
        if done.returncode or not chp.exists():
            raise Unavailable(f"npm could not install configurable-http-proxy: {done.stderr.strip()[-300:]}")
    return bin_dir, chp


CONFIG = """\
c = get_config()  # noqa: F821
c.JupyterHub.ip = "127.0.0.1"
c.JupyterHub.port = {port}
c.JupyterHub.hub_port = {hub_port}
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{proxy_api_port}"
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allow_all = True
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {homes!r} + "/{{username}}"
c.Spawner.args = {args!r}
c.Spawner.default_url = "/api/status"
c.JupyterHub.db_url = "sqlite:///{root}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{root}/cookie_secret"
c.JupyterHub.cleanup_servers = False  # a restarted hub finds its users' servers, as ProfilerHub's apps
c.JupyterHub.services = [{{"name": "bench", "api_token": {token!r}}}]
c.JupyterHub.load_roles = [{{"name": "bench", "services": ["bench"],
    "scopes": ["admin:users", "admin:servers", "list:users", "read:users", "access:servers"]}}]
"""


class JupyterHub:
    """One JupyterHub on free ports, driven through its REST API with an admin service token."""

    def __init__(self, root: Path, bin_dir: Path, chp: Path) -> None:
        self.root, self.bin_dir = root, bin_dir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.token = secrets.token_hex(16)
        args = ["--allow-root"] if os.geteuid() == 0 else []
        (root / "homes").mkdir(parents=True, exist_ok=True)
        config = CONFIG.format(
            port=self.port, hub_port=_free_port(), proxy_api_port=_free_port(), chp=str(chp),
            homes=str(root / "homes"), args=args, root=root, token=self.token,
        )  # fmt: skip
        (root / "jupyterhub_config.py").write_text(config)
        self.process: subprocess.Popen[bytes] | None = None
        self.client = httpx.Client(
            base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60
        )

    @classmethod
    @contextlib.contextmanager
    def started(cls) -> Iterator[JupyterHub]:
        bin_dir, chp = ensure()
        root = Path(tempfile.mkdtemp(prefix="profilerhub-bench-jupyterhub-"))
        hub = cls(root, bin_dir, chp)
        try:
            hub.start()
            yield hub
        finally:
            hub.stop(servers=True)

    def start(self) -> float:
        """Start the hub; seconds until its API answers."""
        env = {**os.environ, "PATH": f"{self.bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
        log = (self.root / "jupyterhub.log").open("ab")
        started = time.monotonic()
        self.process = subprocess.Popen(
            [str(self.bin_dir / "jupyterhub"), "-f", str(self.root / "jupyterhub_config.py")],
            cwd=self.root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        log.close()
        try:
            _wait(self._answers, 120, "its API")
        except TimeoutError as e:
            raise Unavailable(f"{e}; its log: {self.root / 'jupyterhub.log'}") from None
        return time.monotonic() - started

    def _answers(self) -> bool:
        if self.process is not None and self.process.poll() is not None:
            raise Unavailable(f"JupyterHub exited; its log: {self.root / 'jupyterhub.log'}")
        try:
            return self.client.get("/hub/api/").status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, servers: bool = False) -> None:
        """Stop the hub (and its proxy); with ``servers`` its users' servers too."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
        if servers:
            for p in self._servers():
                with contextlib.suppress(psutil.Error):
                    p.kill()

    def _servers(self) -> list[psutil.Process]:
        found = []
        for p in psutil.process_iter(["cmdline", "cwd"]):
            with contextlib.suppress(psutil.Error):
                if "jupyterhub-singleuser" in " ".join(p.info["cmdline"] or []) and str(
                    p.info["cwd"] or ""
                ).startswith(str(self.root)):
                    found.append(p)
        return found

    def server_process(self, name: str) -> psutil.Process:
        """The single-user server of ``name`` (its home is its working folder)."""
        home = str(self.root / "homes" / name)
        for p in self._servers():
            with contextlib.suppress(psutil.Error):
                if p.cwd() == home:
                    return p
        raise LookupError(f"no JupyterHub server running for {name}")

    def add_users(self, names: list[str]) -> None:
        self.client.post("/hub/api/users", json={"usernames": names}).raise_for_status()

    def request_server(self, name: str) -> None:
        answer = self.client.post(f"/hub/api/users/{name}/server")
        if answer.status_code not in (201, 202):
            raise RuntimeError(f"JupyterHub refused {name}'s server: {answer.status_code} {answer.text}")

    def ready(self, name: str) -> bool:
        server = self.client.get(f"/hub/api/users/{name}").json()["servers"].get("")
        return bool(server and server.get("ready"))

    def routable(self, name: str) -> bool:
        """The server answers through the proxy (as ProfilerHub's app answering through the hub)."""
        try:
            return self.client.get(f"/user/{name}/api/status").status_code == 200
        except httpx.HTTPError:
            return False

    def spawn(self, name: str, timeout: float = 120) -> float:
        """Seconds from asking for ``name``'s server to it answering through the proxy."""
        started = time.monotonic()
        self.request_server(name)
        _wait(lambda: self.ready(name) and self.routable(name), timeout, f"{name}'s server")
        return time.monotonic() - started

    def spawn_all(self, names: list[str], timeout: float = 300) -> float:
        """Seconds from asking for every server at once to all of them answering."""
        started = time.monotonic()
        for name in names:
            self.request_server(name)
        _wait(lambda: all(self.ready(n) for n in names), timeout, "all servers", 0.1)
        _wait(lambda: all(self.routable(n) for n in names), timeout, "all routes", 0.1)
        return time.monotonic() - started

    def noticed_kill(self, name: str, timeout: float = 120) -> float:
        """SIGKILL ``name``'s server; seconds until the hub no longer reports it running (its
        spawner's poll, every ``Spawner.poll_interval``: 30 s by default)."""
        self.server_process(name).kill()
        started = time.monotonic()
        _wait(lambda: not self.ready(name), timeout, f"noticing {name}'s server died", 0.05)
        return time.monotonic() - started

    def restart(self, name: str, timeout: float = 120) -> float:
        """Stop the hub (servers left running) and start it; seconds until ``name`` is routable."""
        self.stop()
        started = time.monotonic()
        self.start()
        _wait(lambda: self.routable(name), timeout, f"{name} routable after the restart")
        return time.monotonic() - started


__all__ = ["CHP_VERSION", "VERSION", "JupyterHub", "Unavailable", "ensure"]
