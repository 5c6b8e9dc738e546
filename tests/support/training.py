"""The small CPU training run the end-to-end tests drive through the SDK, and its environment.

``cpu_training_script(init, ...)`` writes the script: ``ph.init(<init>)``, a two-layer MLP on
random batches stepped under ``ph.step`` until the hub asks it to stop (``ph.StopTraining``:
``stopped by <rule> at step <i>``) or ``GIVE_UP_S`` passes (a safety net, not a bound a test
checks: ``gave up``); then ``ph.finish()`` and two lines a test reads with ``json_line``:
``STOPPED {"rule", "step"}`` (``null`` when nothing stopped it) and ``FINISHED <the summary>``.
A test varies what one step does (``step``), what follows it (``after_step``) and the pause
between steps. ``run_env(url, token, ...)`` is a run's environment: the test process's own but
for its ``PROFILERHUB_`` and ``AWS_`` variables (``clean_env``), pointed at the hub with the user's
token; ``run_script`` runs one to its end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent, indent
from typing import Any

# One step's work: a batch, the loss, the update.
PLAIN_STEP = """\
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
loss = torch.nn.functional.cross_entropy(model(x), y)
opt.zero_grad()
loss.backward()
opt.step()
"""

_SCRIPT = """\
import json, os, time
import torch
import profilerhub as ph
ph.init({init})
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, {hidden}), torch.nn.ReLU(), torch.nn.Linear({hidden}, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
stopped, i = None, 0
give_up = time.monotonic() + float(os.environ["GIVE_UP_S"])
try:
    while time.monotonic() < give_up:
        with ph.step(i):
{step}{after_step}        i += 1
{pause}    print("gave up", flush=True)
except ph.StopTraining as stop:
    stopped = {{"rule": stop.rule, "step": i}}
    print(f"stopped by {{stop.rule}} at step {{i}}", flush=True)
summary = ph.finish()
print("STOPPED " + json.dumps(stopped), flush=True)
print("FINISHED " + json.dumps(summary), flush=True)
"""


def cpu_training_script(
    init: str, *, step: str = PLAIN_STEP, after_step: str = "", pause_s: float = 0.0, hidden: int = 128
) -> str:
    """The script's text; ``step`` and ``after_step`` are Python lines at no indent."""
    return _SCRIPT.format(
        init=init,
        hidden=hidden,
        step=_block(step, 12),
        after_step=_block(after_step, 8),
        pause=_block(f"time.sleep({pause_s})", 8) if pause_s else "",
    )


def _block(lines: str, spaces: int) -> str:
    """``lines`` (at any common indent) at ``spaces``, ending in a newline; nothing for none."""
    text = dedent(lines).strip("\n")
    return indent(text, " " * spaces) + "\n" if text else ""


def clean_env() -> dict[str, str]:
    """The test process's environment without its ``PROFILERHUB_`` and ``AWS_`` variables."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("PROFILERHUB_", "AWS_"))}


def run_env(url: str, token: str, **more: str) -> dict[str, str]:
    """A training run's environment against the hub at ``url`` as the owner of ``token``."""
    return clean_env() | {"PROFILERHUB_URL": url, "PROFILERHUB_TOKEN": token} | more


def run_script(folder: Path, name: str, text: str, env: dict[str, str], timeout: float) -> tuple[int, str]:
    """Write ``text`` to ``folder/name`` and run it there to its end: (exit status, stdout + stderr)."""
    script = folder / name
    script.write_text(text)
    run = subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=timeout, cwd=folder
    )
    return run.returncode, run.stdout + run.stderr


def json_line(output: str, prefix: str) -> Any:
    """The JSON after ``prefix`` on the last line of ``output`` that starts with it."""
    lines = [line for line in output.splitlines() if line.startswith(prefix)]
    assert lines, output
    return json.loads(lines[-1][len(prefix) :])


__all__ = ["PLAIN_STEP", "clean_env", "cpu_training_script", "json_line", "run_env", "run_script"]
