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
source Benchmarks/compare/lib/client-launch.bash
client_launch_setup catalog "$bin" catalog reservations store-server suite-defaults
client_launch_serve catalog
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
client_launch_stop_server
hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/offline.json" \
  -n "catalog show --image-save (cached, server down)" "$bin/catalog show $gtin --json --image-save $work/image.png --quiet" \
  >/dev/null 2>&1

client_launch_report 48 "$work/online.json" "$work/offline.json"
