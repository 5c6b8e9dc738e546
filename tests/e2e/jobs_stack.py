"""A running ProfilerHub for the job end-to-end tests: a migrated database, ``profilerhub hub``
and ``profilerhub worker`` as real processes on a real Redis, and a real training script.

    stack = JobStack.start(tmp_path, redis_url, env={...})
    token = stack.user_token("ml", "alice")
    result = stack.train(token, steps=12)            # runs TRAIN_SCRIPT in a subprocess
    job = stack.wait_for_job(token, result.job_id)   # until Ready or Failed
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import testservices

from tests.support.hub import STACK_HUB_WORKERS, TEST_SECRET_KEY, auth, cli_command, own_token, wait_for

# A small PyTorch model trained on the CPU, instrumented with the SDK the way the README shows.
# ``GATES`` (env) lists "step:file" pairs: at that step the script writes file.reached and waits
# for file.go, so a test can stop and restart the hub at a known point.
TRAIN_SCRIPT = r"""
import json, os, sys, time
from pathlib import Path
import torch
import profilerhub as ph

steps = int(os.environ["STEPS"])
gates = dict(g.split(":", 1) for g in os.environ.get("GATES", "").split(",") if g)
ph.init(job="mlp-e2e", torch_profiler={"wait": 1, "warmup": 1, "active": 3}, sample_interval_s=0.1,
        chunk_interval_s=0.5, flush_timeout_s=float(os.environ.get("FLUSH", "30")),
        metric_definitions=[{"Name": "train:acc", "Regex": "acc=([0-9.]+)"}])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for i in range(steps):
    gate = gates.get(str(i))
    if gate:
        Path(gate + ".reached").touch()
        deadline = time.monotonic() + 120
        while not Path(gate + ".go").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
    with ph.step(i):
        x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
        with ph.annotate("forward"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        with ph.annotate("backward"):
            opt.zero_grad()
            loss.backward()
            opt.step()
    ph.log_metric("train:loss", loss.item(), step=i)
    print(f"step {i} acc={0.5 + i / 100:.2f}", flush=True)
summary = ph.finish()
print("FINISHED " + json.dumps(summary), flush=True)
"""


@dataclass
class Training:
    returncode: int
    output: str
    finish: dict[str, Any]

    @property
    def job_id(self) -> str:
        return str(self.finish["location"]).rstrip("/").rsplit("/", 1)[-1]


@dataclass
class JobStack:
    tmp: Path
    env: dict[str, str]
    port: int
    hub: subprocess.Popen[bytes] | None = None
    worker: subprocess.Popen[bytes] | None = None
    logs: list[Path] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def spill_dir(self) -> Path:
        """Where training runs spill what the hub did not take (never the user's own cache)."""
        return self.tmp / "spill"

    @classmethod
    def start(cls, tmp: Path, redis_url: str, env: dict[str, str] | None = None) -> JobStack:
        home = tmp / "home"
        stack_env = {
            "PROFILERHUB_HOME": str(home),
            "PROFILERHUB_REDIS_URL": redis_url,
            "PROFILERHUB_CELERY_QUEUE": f"phjobs-{uuid.uuid4().hex[:10]}",
            "PROFILERHUB_SECRET_KEY": TEST_SECRET_KEY,
            "PROFILERHUB_ACCESS_LOG": "false",
            "PROFILERHUB_HUB_WORKERS": STACK_HUB_WORKERS,
            # the hub's default place, named so that it is migrated here, in process: a `profilerhub
            # db upgrade` process first cost a full start (~2 s) at every stack (test_hub_cli runs it)
            "PROFILERHUB_DATABASE_URL": f"sqlite:///{home / 'profilerhub.db'}",
            **(env or {}),
        }
        home.mkdir(parents=True, exist_ok=True)
        migrate_in_process(stack_env["PROFILERHUB_DATABASE_URL"])
        stack = cls(tmp, stack_env, testservices.free_port())
        try:
            stack.start_worker()  # not waited for: tasks wait in Redis until it consumes them
            stack.start_hub()
        except BaseException:
            stack.stop()
            raise
        return stack

    def _spawn(self, name: str, *args: str) -> subprocess.Popen[bytes]:
        log = self.tmp / f"{name}-{len(self.logs)}.log"
        self.logs.append(log)
        base = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
        env = base | self.env | {"PROFILERHUB_PORT": str(self.port), "PROFILERHUB_PUBLIC_URL": self.url}
        with log.open("wb") as sink:
            return subprocess.Popen(
                [*cli_command(), name, *args], env=env, stdout=sink, stderr=subprocess.STDOUT
            )

    def output(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in self.logs)

    def start_hub(self) -> None:
        hub = self.hub = self._spawn("hub")
        wait_for(lambda: _healthy(self.url) or hub.poll() is not None, "the hub answering", 180)
        assert hub.poll() is None, self.output()

    def stop_hub(self) -> None:
        _stop(self.hub)
        wait_for(lambda: not _healthy(self.url), "the hub stopping", 20)

    def start_worker(self) -> None:
        self.worker = self._spawn("worker", "--concurrency", "2")

    def stop(self) -> None:
        """Stop the worker and hub, and the app processes they spawned (those outlive both by design)."""
        from tests.e2e.apps_stack import stop_app_instances

        _stop(self.worker)
        _stop(self.hub)
        stop_app_instances(Path(self.env["PROFILERHUB_HOME"]))

    def admin(self) -> dict[str, str]:
        return auth((Path(self.env["PROFILERHUB_HOME"]) / "admin-token").read_text().strip())

    def user_token(self, domain: str, user: str) -> str:
        with httpx.Client(base_url=f"{self.url}/api/v1", headers=self.admin(), timeout=30) as http:
            if http.get(f"/domains/{domain}").status_code == 404:
                http.post("/domains", json={"name": domain}).raise_for_status()
            http.post(f"/domains/{domain}/users", json={"name": user}).raise_for_status()
        with httpx.Client(base_url=self.url, timeout=30) as hub:
            return own_token(hub, self.admin(), domain, user)  # the user's own: no impersonation

    def train(
        self,
        token: str,
        steps: int,
        *,
        env: dict[str, str] | None = None,
        on_output: Callable[[], None] | None = None,
    ) -> Training:
        script = self.tmp / "train.py"
        script.write_text(TRAIN_SCRIPT)
        base = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")}
        child = subprocess.Popen(
            [sys.executable, str(script)],
            env=base
            | {
                "PROFILERHUB_URL": self.url,
                "PROFILERHUB_TOKEN": token,
                "STEPS": str(steps),
                "PROFILERHUB_SPILL_DIR": str(self.spill_dir),
            }
            | (env or {}),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            cwd=self.tmp,
        )
        if on_output is not None:
            on_output()
        out, _ = child.communicate(timeout=240)
        text = out.decode(errors="replace")
        finished = [line for line in text.splitlines() if line.startswith("FINISHED ")]
        return Training(child.returncode, text, json.loads(finished[-1][9:]) if finished else {})

    def job(self, token: str, job_id: str, domain: str = "ml", user: str = "alice") -> dict[str, Any]:
        answer = httpx.get(
            f"{self.url}/api/v1/domains/{domain}/users/{user}/jobs/{job_id}", headers=auth(token)
        )
        answer.raise_for_status()
        return dict(answer.json())

    def wait_for_job(
        self, token: str, job_id: str, user: str = "alice", timeout: float = 90
    ) -> dict[str, Any]:
        state: dict[str, Any] = {}

        def done() -> bool:
            state.update(self.job(token, job_id, user=user))
            return state["status"] in ("Ready", "Failed")

        assert self.worker is not None and self.worker.poll() is None, self.output()
        wait_for(done, f"job {job_id} Ready or Failed (logs in {self.tmp})", timeout, 0.25)
        return state


def migrate_in_process(database_url: str) -> None:
    """What ``profilerhub db upgrade`` does to ``database_url``, without starting a process for it."""
    from profilerhub_core.db.migrate import upgrade
    from profilerhub_core.db.session import make_engine

    engine = make_engine(database_url)
    try:
        upgrade(engine)
    finally:
        engine.dispose()


def _stop(process: subprocess.Popen[bytes] | None, grace: float = 20) -> None:
    """SIGTERM ``process``, and SIGKILL it if it is still there after ``grace`` seconds."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/healthz", timeout=1.0).status_code == 200
    except httpx.HTTPError:
        return False


def wait_for_file(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout:.0f}s")
        time.sleep(0.05)
