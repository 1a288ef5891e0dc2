#!/usr/bin/env bash
# Launch time of `reservations`, process start to exit, against what a user would run
# instead for one request (curl), in one run with hyperfine (p50 = median):
#   reservations --help                       (target <= 20 ms)
#   suite-defaults --help                     (the suite's lightest app, for reference)
#   reservations show CODE, server on loopback (config check + signed GET; target <= 20 ms)
#   curl the server's public config route     (one unsigned HTTP request from a new process)
#   reservations show CODE, server stopped    (answered from the offline cache; <= 20 ms)
# $1: the release bin path (make bench passes it). BENCH_RUNS (default 40) runs each.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: reservations-launch.sh BIN_PATH}
runs=${BENCH_RUNS:-40}
source Benchmarks/compare/lib/client-launch.bash
client_launch_setup reservations "$bin" reservations store-server suite-defaults
client_launch_serve reservations
code=$("$bin/reservations" search e --status confirmed --json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["confirmationCode"])')
"$bin/reservations" show "$code" >/dev/null

hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/online.json" \
  -n "reservations --help" "$bin/reservations --help" \
  -n "suite-defaults --help" "$bin/suite-defaults --help" \
  -n "reservations show (loopback)" "$bin/reservations show $code --json" \
  -n "curl config (loopback)" "curl -s -o /dev/null $url/v1/config/client?app=reservations&version=0.1.0" \
  >/dev/null 2>&1
client_launch_stop_server
hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/offline.json" \
  -n "reservations show (cached, server down)" "$bin/reservations show $code --json --quiet" \
  >/dev/null 2>&1

client_launch_report 42 "$work/online.json" "$work/offline.json"
