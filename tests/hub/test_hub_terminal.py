"""The terminal commands (``profilerhub domains|users|tokens|apps|jobs|login|config|whoami``)
against a real ``profilerhub hub`` process.

Most calls run the command line in this process (typer's runner: the same code, without paying
an interpreter start per call) against the hub over real HTTP; a few run ``profilerhub`` as a
process, to see what a shell sees: the exit status, the file ``login`` writes, no traceback.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import testservices
from typer.testing import CliRunner

from tests.support.hub import RunningHub, auth, cli_command, own_token, wait_for

ADMIN = "terminal-admin-token-0123456789abcdef"


@pytest.fixture(scope="module")
def hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningHub]:
    """One hub for the module, on SQLite, with a known platform-admin token."""
    home = tmp_path_factory.mktemp("terminal-hub")
    port = testservices.free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")} | {
        "PROFILERHUB_HOME": str(home),
        "PROFILERHUB_DATABASE_URL": f"sqlite:///{home / 'hub.db'}",
        "PROFILERHUB_HOST": "127.0.0.1",
        "PROFILERHUB_PORT": str(port),
        "PROFILERHUB_ADMIN_TOKEN": ADMIN,
        "PROFILERHUB_HUB_WORKERS": "1",
    }
    upgraded = subprocess.run([*cli_command(), "db", "upgrade"], env=env, capture_output=True, timeout=120)
    assert upgraded.returncode == 0, upgraded.stderr
    log = home / "hub.log"
    with log.open("wb") as sink:
        process = subprocess.Popen([*cli_command(), "hub"], env=env, stdout=sink, stderr=subprocess.STDOUT)
    running = RunningHub(process, f"http://127.0.0.1:{port}", home, log, env)
    wait_for(lambda: running.healthy() or process.poll() is not None, "the hub answering", 180)
    assert process.poll() is None, running.output()
    yield running
    running.stop()


@pytest.fixture
def cli(hub: RunningHub, tmp_path: Path) -> Any:
    """``cli(*args, token=ADMIN, **env)`` -> click's Result (exit_code, stdout, stderr).

    The config file is one in ``tmp_path`` (never the real ~/.config); output is laid out for
    ``COLUMNS`` (120 unless given)."""
    from profilerhub.cli.main import app

    runner = CliRunner()

    def run(*args: str, token: str | None = ADMIN, url: str | None = None, **env: str | None) -> Any:
        environ = {
            "PROFILERHUB_URL": hub.url if url is None else (url or None),
            "PROFILERHUB_TOKEN": token,
            "PROFILERHUB_CONFIG": str(tmp_path / "config.toml"),
            "COLUMNS": "120",
            "PROFILERHUB_OUTPUT": None,
            **env,
        }
        result = runner.invoke(app, list(args), env=environ, catch_exceptions=False)
        assert "Traceback" not in result.output and "Traceback" not in result.stderr
        return result

    return run


def ok(result: Any) -> Any:
    assert result.exit_code == 0, result.stdout + result.stderr
    return result


def as_json(result: Any) -> Any:
    return json.loads(ok(result).stdout)


def said(result: Any) -> str:
    """Everything the command printed, with the console's line wrapping undone."""
    return " ".join((result.stdout + result.stderr).split())


def test_an_admin_manages_domains_users_and_tokens(cli: Any, hub: RunningHub) -> None:
    made = ok(cli("domains", "create", "research", "--idle-minutes", "60", "--no-users-manage-own-apps"))
    assert "Domain research" in made.stdout and "60" in made.stdout
    assert [d["name"] for d in as_json(cli("domains", "list", "-o", "json"))] == ["research", "system"]
    domain = as_json(cli("domains", "describe", "research", "--output", "json"))
    assert domain["settings"]["idle_minutes"] == 60 and domain["settings"]["users_manage_own_apps"] is False
    changed = as_json(cli("domains", "update", "research", "--job-idle-hours", "2", "-o", "json"))
    assert changed["settings"]["job_idle_hours"] == 2 and changed["settings"]["idle_minutes"] == 60
    assert "research" in ok(cli("domains", "list")).stdout

    ok(cli("users", "create", "alice", "-d", "research"))
    boss = as_json(cli("users", "create", "boss", "-d", "research", "--role", "admin", "-o", "json"))
    assert boss["role"] == "admin" and boss["domain"] == "research"
    names = [u["name"] for u in as_json(cli("users", "list", "-d", "research", "-o", "json"))]
    assert names == ["alice", "boss"]
    table = ok(cli("users", "list", "-d", "research")).stdout
    assert "Users of research" in table and "alice" in table and "admin" in table
    assert "User research/alice" in ok(cli("users", "describe", "alice", "-d", "research")).stdout

    created = ok(
        cli("tokens", "create", "-d", "research", "-u", "alice", "--note", "ci", "--expires-in", "30d")
    )
    secret = next(w.split("=", 1)[1] for w in created.stdout.split() if w.startswith("PROFILERHUB_TOKEN="))
    assert f"PROFILERHUB_URL={hub.url}" in created.stdout
    me = as_json(cli("whoami", "-o", "json", token=secret))
    assert (me["domain"], me["user"], me["role"]) == ("research", "alice", "user")
    mine = as_json(cli("tokens", "list", "-o", "json", token=secret))  # her own, by default
    assert [t["note"] for t in mine] == ["ci"] and mine[0]["created_by"] == "system/admin"
    token_id = mine[0]["token_id"]
    described = as_json(cli("tokens", "describe", token_id, "-d", "research", "-u", "alice", "-o", "json"))
    assert described["status"] == "active" and described["expires_at"]

    ok(cli("tokens", "revoke", token_id, "-d", "research", "-u", "alice"))
    refused = cli("whoami", token=secret)
    assert refused.exit_code == 1
    assert "Unauthorized" in said(refused) and "profilerhub login" in said(refused)
    assert (
        as_json(cli("tokens", "list", "-d", "research", "-u", "alice", "-o", "json"))[0]["status"]
        == "revoked"
    )

    unsure = cli("users", "delete", "boss", "-d", "research")  # no terminal to ask on
    assert unsure.exit_code == 2 and "pass --yes" in said(unsure)
    ok(cli("users", "delete", "boss", "-d", "research", "--yes"))
    in_use = cli("domains", "delete", "research", "-y")
    assert in_use.exit_code == 1 and "ResourceInUse" in said(in_use) and "user profile" in said(in_use)
    ok(cli("users", "delete", "alice", "-d", "research", "-y"))
    assert "deleted domain research" in ok(cli("domains", "delete", "research", "-y")).stdout


def _user(cli: Any, domain: str, user: str, *domain_options: str) -> str:
    """A domain and user, and a token for the user (made by the admin: it opens apps only where
    the domain allows impersonation)."""
    ok(cli("domains", "create", domain, *domain_options))
    ok(cli("users", "create", user, "-d", domain))
    return str(as_json(cli("tokens", "create", "-d", domain, "-u", user, "-o", "json"))["token"])


def test_a_user_starts_lists_and_stops_their_app_and_reads_their_jobs(cli: Any, hub: RunningHub) -> None:
    _user(cli, "lab", "carol")
    with httpx.Client(base_url=hub.url, timeout=30) as client:  # carol's own: opening her app is hers
        token = own_token(client, auth(ADMIN), "lab", "carol")
    started = as_json(cli("apps", "start", "-o", "json", token=token))
    assert (started["status"], started["app_name"], started["user"]) == ("Pending", "default", "carol")
    table = ok(cli("apps", "list", token=token)).stdout
    assert "Apps of lab/carol" in table and "Pending" in table
    assert as_json(cli("apps", "describe", "-o", "json", token=token))["app_id"] == started["app_id"]
    shown = ok(cli("apps", "describe", token=token)).stdout
    assert f"{hub.url}/apps/{started['app_id']}/" in " ".join(shown.split())
    everyone = as_json(cli("apps", "list", "--all", "--status", "Pending", "-o", "json"))
    assert started["app_id"] in [a["app_id"] for a in everyone]
    link = as_json(cli("apps", "open", "-o", "json", token=token))  # the owner may open it
    assert link["url"].startswith(f"{hub.url}/apps/{started['app_id']}/")
    pending = cli("apps", "stop", token=token)  # only InService or Failed apps can be deleted
    assert pending.exit_code == 1 and "ResourceInUse" in said(pending)
    not_owner = cli("apps", "open", "-d", "lab", "-u", "carol")  # not even the platform admin
    assert not_owner.exit_code == 1 and "AccessDenied" in said(not_owner)
    assert "ask an administrator" in said(not_owner)
    waited = cli("apps", "start", "second", "--wait", "1", token=token)  # no worker runs here
    assert waited.exit_code == 1 and "still Pending after 1 s" in said(waited)

    job = httpx.post(
        f"{hub.url}/api/v1/domains/lab/users/carol/jobs", json={"name": "run-1"}, headers=auth(token)
    ).json()
    jobs = as_json(cli("jobs", "list", "-o", "json", token=token))
    assert [j["job_id"] for j in jobs] == [job["job_id"]]
    assert as_json(cli("jobs", "list", "--status", "Ready", "-o", "json", token=token)) == []
    assert "run-1" in ok(cli("jobs", "list", "-d", "lab", "-u", "carol")).stdout
    described = ok(cli("jobs", "describe", job["job_id"], token=token)).stdout
    assert "InProgress" in described and "profilerhub apps start" in described  # no app InService
    assert as_json(cli("jobs", "describe", job["job_id"], "-o", "json", token=token))["name"] == "run-1"
    done = httpx.post(
        f"{hub.url}/api/v1/domains/lab/users/carol/jobs/{job['job_id']}/complete", headers=auth(token)
    )
    assert done.status_code == 202, done.text
    described = ok(cli("jobs", "describe", job["job_id"], token=token)).stdout  # no worker takes it
    assert "waiting" in described and "Queued: uploaded, waiting for an ingest worker" in described
    ok(cli("jobs", "delete", job["job_id"], "--yes", token=token))
    gone = cli("jobs", "describe", job["job_id"], token=token)
    assert gone.exit_code == 1 and "ResourceNotFound" in said(gone) and "check the names" in said(gone)


def test_lists_follow_next_token_and_limit_counts_items(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from profilerhub.cli import hubapi

    monkeypatch.setattr(hubapi, "PAGE_SIZE", 2)  # seven users: four pages
    ok(cli("domains", "create", "many"))
    for i in range(7):
        ok(cli("users", "create", f"u{i}", "-d", "many"))
    assert [u["name"] for u in as_json(cli("users", "list", "-d", "many", "-o", "json"))] == [
        f"u{i}" for i in range(7)
    ]
    assert len(as_json(cli("users", "list", "-d", "many", "-o", "json", "--limit", "3"))) == 3
    cut = ok(cli("users", "list", "-d", "many", "--limit", "5")).stdout
    assert "u4" in cut and "u5" not in cut and "first 5: pass a larger --limit" in " ".join(cut.split())


@pytest.mark.parametrize("columns", [80, 120])
def test_tables_fit_the_terminal_and_say_what_they_left_out(cli: Any, columns: int) -> None:
    token = _user(cli, f"wide{columns}", "dave")
    ok(cli("apps", "start", token=token))
    for args in (
        ("domains", "list"),
        ("tokens", "list"),
        ("apps", "list"),
        ("whoami",),
        ("apps", "describe"),
        ("users", "list", "-d", f"wide{columns}"),
        ("apps", "list", "--all"),
    ):
        out = ok(
            cli(*args, token=ADMIN if "users" in args or "--all" in args else token, COLUMNS=str(columns))
        ).stdout
        assert max(len(line) for line in out.splitlines()) <= columns, out
    narrow = ok(cli("tokens", "list", token=token, COLUMNS=str(columns))).stdout
    if columns == 80:
        assert "not shown at this width" in narrow and "--output json" in " ".join(narrow.split())
    else:
        assert "not shown" not in narrow


def test_errors_say_what_to_do_next(cli: Any, hub: RunningHub) -> None:
    nothing = cli("domains", "list", token=None, url="")
    assert nothing.exit_code == 2 and "no hub configured" in said(nothing)
    assert "PROFILERHUB_URL" in said(nothing) and "profilerhub login" in said(nothing)
    closed = cli("domains", "list", url=f"http://127.0.0.1:{testservices.free_port()}")
    assert (
        closed.exit_code == 1 and "cannot reach the hub" in said(closed) and "profilerhub up" in said(closed)
    )
    bad = cli("domains", "list", token="phk_not-a-token")
    assert bad.exit_code == 1 and "from PROFILERHUB_TOKEN" in said(bad)
    missing = cli("domains", "describe", "nope")
    assert missing.exit_code == 1 and "ResourceNotFound" in said(missing)
    invalid = cli("domains", "create", "not_valid!")
    assert invalid.exit_code == 1 and "ValidationError" in said(invalid) and "name" in said(invalid)
    schemeless = cli("domains", "list", url="127.0.0.1:1")
    assert schemeless.exit_code == 2 and "http://host:port" in said(schemeless)
    usage = cli("tokens", "revoke")  # neither an id nor --all
    assert usage.exit_code == 2 and "--all" in said(usage)
    wrong_choice = cli("domains", "list", "-o", "yaml")
    assert wrong_choice.exit_code == 2 and "table" in said(wrong_choice)


def run_cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PROFILERHUB_")} | env
    return subprocess.run([*cli_command(), *args], env=clean, capture_output=True, text=True, timeout=120)


def test_login_checks_the_token_and_saves_it_private_for_later_commands(
    cli: Any, hub: RunningHub, tmp_path: Path
) -> None:
    config = tmp_path / "cfg" / "profilerhub" / "config.toml"
    env = {"XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    refused = run_cli("login", hub.url, "--token", "phk_wrong", env=env)  # a real process, as a shell sees it
    assert refused.returncode == 1 and "Unauthorized" in refused.stderr and "Traceback" not in refused.stderr
    assert not config.exists()
    done = run_cli("login", hub.url, "--token", ADMIN, env=env | {"COLUMNS": "200"})
    assert done.returncode == 0, done.stderr
    assert f"as system/admin (admin); saved to {config}" in done.stdout
    assert (
        stat.S_IMODE(config.stat().st_mode) == 0o600 and stat.S_IMODE(config.parent.stat().st_mode) == 0o700
    )

    def from_file(*args: str, **more: str | None) -> Any:  # no PROFILERHUB_* but the file's place
        return cli(*args, token=None, url="", PROFILERHUB_CONFIG=None, **env, **more)

    assert ok(from_file("config", "path")).stdout.strip() == str(config)
    assert as_json(from_file("whoami", "-o", "json"))["user"] == "admin"
    shown = as_json(from_file("config", "show", "-o", "json"))
    assert ADMIN not in json.dumps(shown) and shown["url"] == hub.url and shown["token_from"] == str(config)
    overridden = as_json(from_file("config", "show", "-o", "json", PROFILERHUB_URL="http://elsewhere"))
    assert (overridden["url"], overridden["url_from"]) == ("http://elsewhere", "PROFILERHUB_URL")

    ok(from_file("config", "set", "url", "http://127.0.0.1:1/"))
    unreachable = from_file("domains", "list")
    assert unreachable.exit_code == 1 and f"(from {config})" in said(unreachable)
    config.chmod(0o644)
    exposed = from_file("domains", "list")
    assert exposed.exit_code == 2 and f"chmod 600 {config}" in said(exposed)


def test_help_reads_well_and_version_answers(cli: Any) -> None:
    from profilerhub import __version__

    assert ok(cli("--version")).stdout.strip() == f"profilerhub {__version__}"
    for command in (
        ["--help"],
        ["tokens", "create", "--help"],
        ["apps", "start", "--help"],
        ["analyze", "--help"],
        ["up", "--help"],
        ["hub", "--help"],
    ):
        text = ok(cli(*command, COLUMNS="100")).stdout
        assert "<bool>" not in text and "<str>" not in text and "<int>" not in text, text
    start = said(cli("apps", "start", "--help", COLUMNS="100"))
    assert "[default: DetailedProfiler]" in start and "DetailedProfiler|TensorBoard" in start
    hub_help = said(cli("hub", "--help", COLUMNS="100"))
    assert "default 127.0.0.1" in hub_help and "PROFILERHUB_PORT" in hub_help
