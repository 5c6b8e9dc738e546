#!/usr/bin/env bash
# System packages the test suite needs that pip cannot provide. Says what it installs.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-test-deps: installing ${need[*]} with apt-get"
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "ensure-test-deps: missing ${need[*]}; browser tests will report why they cannot run" >&2
  fi
fi
