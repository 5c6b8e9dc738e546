"""The embedded Redis that `profilerhub up` runs when no Redis URL is configured."""

from __future__ import annotations

from pathlib import Path

import psutil
import redis

from profilerhub_stack.embedded_redis import EmbeddedRedis


def test_embedded_redis_answers_and_is_gone_after_stop(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        client = redis.Redis.from_url(server.url)
        assert client.ping()
        client.set("k", "v")
        assert client.get("k") == b"v"
        client.close()
        assert server.process is not None
        pid = server.process.pid
    assert not psutil.pid_exists(pid)


def test_embedded_redis_needs_its_password_and_keeps_it_in_a_private_file(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        anonymous = redis.Redis(host="127.0.0.1", port=server.port)
        try:
            anonymous.ping()
            raise AssertionError("the embedded Redis answered without its password")
        except redis.AuthenticationError:
            pass
        finally:
            anonymous.close()
        assert (server.config_file.stat().st_mode & 0o777) == 0o600
        assert server.password not in " ".join(server.command())  # not on the command line (ps)


def test_a_restarted_embedded_redis_keeps_its_url(tmp_path: Path) -> None:
    with EmbeddedRedis(tmp_path) as server:
        url = server.url
        assert server.process is not None
        server.process.kill()
        server.process.wait()
        assert not server.running()
        assert server.restart() == url and server.running()
        client = redis.Redis.from_url(url)
        assert client.ping()
        client.close()
