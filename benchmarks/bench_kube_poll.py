#!/usr/bin/env python3
"""What polling N running Kubernetes apps costs: API calls and time per poll round, with the
worker's watch of the app Deployments (``spawners/kube_watch.py``) and without it (each app's
Deployment read, as every poll did before the watch: the anchor).

Runs the spawner against the FAKE Kubernetes API server of the tests (tests/support/fake_kube.py,
an in-process HTTP server, through the official client), so the times are those of this
machine's client and fake (which answers one read in about 50 ms here), not of a cluster; the
call counts are what a real API server would be asked.  "Without the watch" is the same code with
the watch's staleness bound set below zero, so every poll falls back to its read.

    .venv/bin/python benchmarks/bench_kube_poll.py [--apps 200] [--rounds 5]

Last reading (2026-12-01, the 2-core development machine, --apps 200 --rounds 5): watched, the
first round 1 list + 1 watch in 52 ms, then 0 API calls and 0.3 ms a round; read per app, 200
calls and 9.8 s a round.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # tests.support.fake_kube

from tests.support.fake_kube import FakeKubeAPI  # noqa: E402

from profilerhub_worker.spawners import AppSpec, SpawnerConfig, kube_watch, make_spawner  # noqa: E402

NAMESPACE = "bench-apps"


def poll_rounds(spawners: list, fake: FakeKubeAPI, rounds: int) -> tuple[float, float]:
    """Median milliseconds per round of polling every app, and API calls per round."""
    times = []
    before = sum(fake.calls.values())
    for _ in range(rounds):
        started = time.perf_counter()
        assert all(spawner.poll() is None for spawner in spawners)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), (sum(fake.calls.values()) - before) / rounds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--apps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    with FakeKubeAPI() as fake, tempfile.TemporaryDirectory() as home:
        fake.validate = False  # the manifests are validated by the tests; here only the polls count
        config = SpawnerConfig(
            home=Path(home),
            options={
                "k8s_app_image": "profilerhub:bench",
                "k8s_namespace": NAMESPACE,
                "k8s_api_url": fake.url,
            },
        )
        spec = AppSpec("", "d", "u", "user-u", "DetailedProfiler", "default")
        spawners = []
        for number in range(args.apps):
            spawner = make_spawner(
                "kubernetes",
                dataclasses.replace(spec, app_id=f"0f7e3f9a-aaaa-4bbb-8ccc-{number:012d}"),
                config,
            )
            spawner.start()
            spawners.append(spawner)

        first = time.perf_counter()
        assert all(spawner.poll() is None for spawner in spawners)  # starts the watch: one list
        first_ms = (time.perf_counter() - first) * 1000
        watched_ms, watched_calls = poll_rounds(spawners, fake, args.rounds)
        kube_watch.STALE_AFTER_S = -1.0  # the watch never current: every poll reads, as before it
        read_ms, read_calls = poll_rounds(spawners, fake, args.rounds)

    print(
        f"command: .venv/bin/python benchmarks/bench_kube_poll.py --apps {args.apps} --rounds {args.rounds}"
    )
    print(f"{args.apps} running apps, median of {args.rounds} poll rounds, against the fake API server")
    print(f"{'':28} {'API calls/round':>16} {'ms/round':>10}")
    print(f"{'watched (first round)':28} {'1 list + 1 watch':>16} {first_ms:10.1f}")
    print(f"{'watched':28} {watched_calls:16.0f} {watched_ms:10.1f}")
    print(f"{'read per app (the anchor)':28} {read_calls:16.0f} {read_ms:10.1f}")


if __name__ == "__main__":
    main()
