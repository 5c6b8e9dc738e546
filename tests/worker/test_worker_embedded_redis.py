"""The embedded Redis that `profilerhub up` runs when no Redis URL is configured."""

from __future__ import annotations

from pathlib import Path

import psutil
import redis

from profilerhub_worker.embedded_redis import EmbeddedRedis


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
