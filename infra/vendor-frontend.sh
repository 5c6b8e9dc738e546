#!/usr/bin/env bash
# Refresh the vendored front-end libraries (the profiler app's and the hub console's) from npm.
#
#   bash infra/vendor-frontend.sh          # fetch the pinned versions below, check, copy
#
# Each library is pinned to one version and its tarball's sha512 (the registry's "integrity");
# the script refuses a tarball that does not match. It copies only the files the pages load, plus
# the licence, into <package>/static/vendor/<name>/ and writes VERSION there.
# Needs npm at refresh time only: the app serves the committed copies (no Node.js at run time).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
app_vendor="$root/services/profilerhub_app/static/vendor"
hub_vendor="$root/services/profilerhub_hub/console/static/vendor"
vendor="$app_vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# name  version  integrity  files (inside the package)...
fetch() {
  local name="$1" version="$2" integrity="$3"
  shift 3
  (cd "$work" && npm pack --silent "$name@$version" >/dev/null)
  local tgz="$work/$name-$version.tgz"
  local got="sha512-$(openssl dgst -sha512 -binary "$tgz" | base64 -w0)"
  if [ "$got" != "$integrity" ]; then
    echo "vendor-frontend: $name@$version: integrity $got, expected $integrity" >&2
    exit 1
  fi
  mkdir -p "$work/$name" && tar -xzf "$tgz" -C "$work/$name"
  rm -rf "${vendor:?}/$name" && mkdir -p "$vendor/$name"
  for file in "$@"; do
    cp "$work/$name/package/$file" "$vendor/$name/$(basename "$file")"
  done
  printf '%s@%s\n%s\n' "$name" "$version" "$integrity" >"$vendor/$name/VERSION"
  echo "vendor-frontend: $name@$version -> ${vendor#"$root/"}/$name"
}

# uPlot: small (~50 KB), fast canvas charts, MIT. Used for the dashboard's charts.
fetch uplot 1.6.32 \
  'sha512-KIMVnG68zvu5XXUbC4LQEPnhwOxBuLyW1AHtpm6IKTXImkbLgkMy+jabjLgSLMasNuGGzQm/ep3tOkyTxpiQIw==' \
  dist/uPlot.esm.js dist/uPlot.min.css LICENSE

# Swagger UI: the hub's /api/v1/docs page, served offline (Apache-2.0).
vendor="$hub_vendor"
fetch swagger-ui-dist 5.35.0 \
  'sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==' \
  swagger-ui-bundle.js swagger-ui.css LICENSE NOTICE

# No vendored file may pass 2 MiB (a repository rule).
if find "$app_vendor" "$hub_vendor" -type f -size +2048k | grep -q .; then
  echo "vendor-frontend: a vendored file is over 2 MiB" >&2
  exit 1
fi
