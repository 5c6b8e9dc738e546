"""The README's five-minute tour, run as written against a fresh ``profilerhub up`` (what ``make
up`` runs): the shell blocks of its steps 2 to 6 are read from README.md itself, not copied here,
so the README cannot drift from what works.

The test plays the people between the commands: the administrator's blocks run as they stand
(``~`` is a fresh home, the hub listens on a free port instead of 8080: the one substitution);
every invitation link a block prints is opened as a browser would and given a password; the user's
``profilerhub login --user`` reads it (from standard input, as it does without a terminal). Then
what the tour promises is checked: Alice is signed in as herself, her app is InService and her
one-time link opens it, her token is her own (it drives the SDK's job API), nobody impersonates.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from tests.support.hub import STACK_HUB_WORKERS, auth

README = Path(__file__).resolve().parents[2] / "README.md"
PASSWORD = "orchid-lantern-ferry-27"
INVITATION = re.compile(r"https?://[^\s\"']+/console/invitation\?token=phi_[A-Za-z0-9_-]+")


def tour_blocks(text: str) -> list[str]:
    """The ```bash blocks of the tour's steps 2 to 6 (step 1 is ``make up``; step 7 needs traces)."""
    tour = text[text.index("## A five-minute tour") :]
    tour = tour[tour.index("**2.") : tour.index("**7.")]
    return re.findall(r"```bash\n(.*?)```", tour, flags=re.S)


def accept(url: str) -> None:
    """Open an invitation link as a browser would and choose the password."""
    parts = urlsplit(url)
    with httpx.Client(base_url=f"{parts.scheme}://{parts.netloc}", timeout=30) as browser:
        form = browser.get(f"{parts.path}?{parts.query}")
        assert form.status_code == 200, form.text
        fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', form.text))
        fields |= {"password": PASSWORD, "again": PASSWORD}
        origin = {"origin": f"{parts.scheme}://{parts.netloc}"}
        done = browser.post(parts.path, data=fields, headers=origin, follow_redirects=False)
        assert done.status_code == 303 and done.headers["location"] == "/console/", done.text


def test_the_readme_tour_works_as_written_for_the_admin_and_the_user(
    hub_process: Any, tmp_path: Path
) -> None:
    blocks = tour_blocks(README.read_text())
    assert len(blocks) >= 3, "the tour's shell blocks are gone from README.md"
    home = tmp_path / "home"
    up = hub_process("up", home=home / ".profilerhub", env={"PROFILERHUB_HUB_WORKERS": STACK_HUB_WORKERS})
    where = urlsplit(up.url).netloc
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROFILERHUB_", "XDG_"))}
    env |= {"HOME": str(home), "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"}

    said: list[str] = []
    for block in blocks:
        script = block.replace("127.0.0.1:8080", where)
        run = subprocess.run(
            ["bash", "-e", "-o", "pipefail", "-c", script], env=env, cwd=tmp_path, input=PASSWORD + "\n",
            capture_output=True, text=True, timeout=300, start_new_session=True,  # no terminal: stdin
        )  # fmt: skip
        output = run.stdout + run.stderr
        said.append(output)
        assert run.returncode == 0, (
            f"README block failed:\n{block}\n--- said:\n{output}\n--- hub:\n{up.output()}"
        )
        assert '"error"' not in run.stdout, f"README block got an error answer:\n{block}\n{output}"
        for url in dict.fromkeys(INVITATION.findall(run.stdout)):
            accept(url)

    everything = "\n".join(said)
    assert "signed in to" in everything and "as research/alice (user)" in everything
    assert "as system/admin (admin)" in everything
    token = re.search(r"export PROFILERHUB_TOKEN=(phk_\S+)", everything)
    link = re.search(rf"http://{re.escape(where)}/apps/[0-9a-f-]+/\S*token=\S+", everything)
    assert token and link, everything
    with httpx.Client(base_url=up.url, timeout=30) as client:
        alice = auth(token.group(1))
        me = client.get("/api/v1/me", headers=alice).json()
        assert (me["user"], me["domain"], me["impersonated_by"]) == ("alice", "research", None)
        app = client.get("/api/v1/domains/research/users/alice/apps/DetailedProfiler/default", headers=alice)
        assert app.json()["status"] == "InService", app.text
        opened = client.get(link.group(0), follow_redirects=True)  # the one-time link: into her app
        assert opened.status_code == 200 and "/apps/" in str(opened.url), opened.text
        job = client.post("/api/v1/domains/research/users/alice/jobs", json={"name": "tour"}, headers=alice)
        assert job.status_code == 201, job.text  # what the SDK's ph.init does first
        admin = auth(up.admin_token())
        events = client.get("/api/v1/audit?action=OpenApp", headers=admin).json()["items"]
        assert [e for e in events if e["detail"].get("impersonation")] == []
        bob = client.get("/api/v1/audit?action=AcceptInvitation", headers=admin).json()["items"]
        assert {e["actor"] for e in bob} == {"research/alice", "research/bob"}
