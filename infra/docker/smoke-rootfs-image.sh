#!/usr/bin/env bash
# Run the image built by rootfs_image.py the way the chart runs it, and check that it works:
#
#   sudo bash infra/docker/smoke-rootfs-image.sh /tmp/profilerhub-image [PORT]
#
# Every command runs as the image's user (10001) with only its environment, on a read-only root
# filesystem with /tmp and the home (/var/lib/profilerhub) writable, as the chart's emptyDirs
# are: `profilerhub version`; every command the chart and the spawner start, with --help; a write
# to the root refused; every .pyc still valid for its source (none recompiled at each start);
# `db upgrade` and `hub` on SQLite in the home, answering GET /healthz with 200.
set -euo pipefail

image="$1"
port="${2:-18461}"
tool="$(dirname "$0")/rootfs_image.py"
home="$(mktemp -d)"
chown 10001:10001 "$home"
hub_pid=""
trap '[ -n "$hub_pid" ] && kill -- "-$hub_pid" 2>/dev/null; rm -rf "$home"' EXIT

run() {
  echo "\$ rootfs_image.py run $image --read-only --tmpfs /tmp --volume $home:/var/lib/profilerhub $*" >&2
  python3 "$tool" run "$image" --read-only --tmpfs /tmp --volume "$home:/var/lib/profilerhub" "$@"
}

run -- version
for command in hub worker beat "db upgrade" app; do
  # shellcheck disable=SC2086  # "db upgrade" is two words
  run -- $command --help >"$home/help.txt"
  head -3 "$home/help.txt"
done
run --entrypoint python -- -c '
import os, pathlib
print("uid", os.getuid(), "gid", os.getgid(), "cwd", os.getcwd())
pathlib.Path("/tmp/probe").write_text("x"); pathlib.Path("/var/lib/profilerhub/probe").write_text("x")
try:
    pathlib.Path("/opt/profilerhub/probe").write_text("x")
    raise SystemExit("the root filesystem is writable")
except OSError as error:
    print("root filesystem:", error.strerror)'
run --entrypoint python -- -c '
import importlib.util, pathlib, struct, sys
stale = total = 0
for source in pathlib.Path(sys.prefix, "lib").rglob("*.py"):
    cached = pathlib.Path(importlib.util.cache_from_source(str(source)))
    if cached.exists():
        total += 1
        stale += struct.unpack("<I", cached.read_bytes()[8:12])[0] != int(source.stat().st_mtime)
print(f"{total} .pyc files in the venv, {stale} stale")
raise SystemExit(1 if stale or not total else 0)'
run -- db upgrade
setsid python3 "$tool" run "$image" --read-only --tmpfs /tmp --volume "$home:/var/lib/profilerhub" \
  -- hub --port "$port" >"$home/hub.log" 2>&1 &
hub_pid=$!
for _ in $(seq 120); do
  code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz" || true)"
  [ "$code" = 200 ] && break
  kill -0 "$hub_pid" 2>/dev/null || { cat "$home/hub.log"; exit 1; }
  sleep 0.5
done
echo "\$ curl http://127.0.0.1:$port/healthz"
curl -s -w ' -> %{http_code}\n' "http://127.0.0.1:$port/healthz"
[ "$code" = 200 ]
echo "smoke-rootfs-image: all checks passed"
