#!/usr/bin/env bash
# Launch time of `catalog`, process start to exit, against what a user would run instead
# (curl for one signed-less HTTP request), in one run with hyperfine (p50 = median):
#   catalog --help                               (target <= 20 ms)
#   reservations --help, suite-defaults --help   (the suite's other client and lightest app)
#   catalog show GTIN, server on loopback        (config check + signed GET of the product)
#   catalog show GTIN --image-save, image cached (+ the image from the shared disk cache)
#   curl the server's public config route        (one unsigned HTTP request from a new process)
#   catalog show GTIN --image-save, server down  (product and image from the caches)
# $1: the release bin path (make bench passes it). BENCH_RUNS (default 40) runs each.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: catalog-launch.sh BIN_PATH}
runs=${BENCH_RUNS:-40}
for tool in hyperfine curl python3; do
  command -v "$tool" >/dev/null || { echo "error: $tool not installed (make deps)" >&2; exit 1; }
done
for app in catalog reservations store-server suite-defaults; do
  [[ -x "$bin/$app" ]] || { echo "error: $bin/$app not built" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/catalog-bench.XXXXXX")
server_pid=
cleanup() {
  [[ -n "$server_pid" ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" || true
  rm -rf "$work"
}
trap cleanup EXIT
export SHOPFLOOR_HOME=$work/home NO_COLOR=1
unset SHOPFLOOR_SERVER
mkdir -m 700 "$SHOPFLOOR_HOME"

"$bin/store-server" serve --port 0 --demo-data --database "$work/store.sqlite" \
  --password-cost 1000 >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
url=
for _ in $(seq 1 1200); do
  url=$(sed -n 's/^listening on //p' "$work/server.out")
  [[ -n "$url" ]] && break
  sleep 0.1
done
[[ -n "$url" ]] || { echo "error: store-server did not start" >&2; exit 1; }
printf '%s' shopfloor-demo | "$bin/catalog" login --server "$url" --user demo \
  --password-stdin 2>/dev/null
gtin=$("$bin/catalog" search a --limit 1 --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["gtin"])')
"$bin/catalog" show "$gtin" --image-save "$work/image.png" >/dev/null

hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/online.json" \
  -n "catalog --help" "$bin/catalog --help" \
  -n "reservations --help" "$bin/reservations --help" \
  -n "suite-defaults --help" "$bin/suite-defaults --help" \
  -n "catalog show (loopback)" "$bin/catalog show $gtin --json" \
  -n "catalog show --image-save (image cached)" "$bin/catalog show $gtin --json --image-save $work/image.png --quiet" \
  -n "curl config (loopback)" "curl -s -o /dev/null $url/v1/config/client?app=catalog&version=0.1.0" \
  >/dev/null 2>&1
kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=
hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/offline.json" \
  -n "catalog show --image-save (cached, server down)" "$bin/catalog show $gtin --json --image-save $work/image.png --quiet" \
  >/dev/null 2>&1

python3 - "$work/online.json" "$work/offline.json" <<'PY'
import json, sys
results = []
for path in sys.argv[1:]:
    results += json.load(open(path))["results"]
by = {r["command"]: r for r in results}
curl = by["curl config (loopback)"]["median"]
print(f'{"command":48} {"p50 ms":>8} {"p95 ms":>8} {"vs curl":>8}')
for r in results:
    times = sorted(r["times"])
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    print(f'{r["command"]:48} {r["median"] * 1e3:8.1f} {p95 * 1e3:8.1f} '
          f'{r["median"] / curl:7.2f}x')
PY
