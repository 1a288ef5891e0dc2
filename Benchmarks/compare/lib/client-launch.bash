# Shared by the launch benchmarks (launch.sh, reservations-launch.sh, catalog-launch.sh):
# checks, a scratch suite container, a store-server with the demo data on loopback, sign-in,
# and the p50/p95 table against curl. Sourced, not run (make bench runs only compare/*.sh).

# client_launch_setup APP BIN TOOL...: checks hyperfine, curl, python3 and BIN/TOOL for each
# tool; makes $work (removed at exit, with the server stopped) and a fresh SHOPFLOOR_HOME.
client_launch_setup() {
  local app=$1 tool
  bin=$2
  shift 2
  for tool in hyperfine curl python3; do
    command -v "$tool" >/dev/null || { echo "error: $tool not installed (make deps)" >&2; exit 1; }
  done
  for tool in "$@"; do
    [[ -x "$bin/$tool" ]] || { echo "error: $bin/$tool not built" >&2; exit 1; }
  done
  work=$(mktemp -d "${TMPDIR:-/tmp}/$app-bench.XXXXXX")
  server_pid=
  trap client_launch_cleanup EXIT
  export SHOPFLOOR_HOME=$work/home NO_COLOR=1
  unset SHOPFLOOR_SERVER
  mkdir -m 700 "$SHOPFLOOR_HOME"
}

client_launch_cleanup() {
  [[ -n "$server_pid" ]] && kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" || true
  rm -rf "$work"
}

# client_launch_serve APP: starts store-server with the demo data on a free port (its URL in
# $url) and signs APP in as the demo user.
client_launch_serve() {
  "$bin/store-server" serve --port 0 --demo-data --database "$work/store.sqlite" \
    --insecure-password-cost-for-tests --password-cost 1000 >"$work/server.out" 2>"$work/server.log" &
  server_pid=$!
  url=
  for _ in $(seq 1 1200); do
    url=$(sed -n 's/^listening on //p' "$work/server.out")
    [[ -n "$url" ]] && break
    sleep 0.1
  done
  [[ -n "$url" ]] || { echo "error: store-server did not start" >&2; exit 1; }
  printf '%s' shopfloor-demo | "$bin/$1" login --server "$url" --user demo \
    --password-stdin 2>/dev/null
}

# client_launch_stop_server: stops the server (for the offline runs).
client_launch_stop_server() {
  kill -TERM "$server_pid"; wait "$server_pid" || true; server_pid=
}

# client_launch_report WIDTH JSON...: p50, p95 and the ratio to "curl config (loopback)" for
# every command in hyperfine's JSON exports, the command column WIDTH wide; for `reservations
# show` the launch target (issue 29): <= 15 ms p50 or <= 1.5x curl, whichever is larger.
client_launch_report() {
  python3 - "$@" <<'PY'
import json, sys
width = int(sys.argv[1])
results = []
for path in sys.argv[2:]:
    results += json.load(open(path))["results"]
by = {r["command"]: r for r in results}
curl = by["curl config (loopback)"]["median"]
bound = max(0.015, 1.5 * curl)
print(f'{"command":{width}} {"p50 ms":>8} {"p95 ms":>8} {"vs curl":>8}  target')
for r in results:
    times = sorted(r["times"])
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    target = ""
    if r["command"].startswith("reservations show"):
        target = f'<= {bound * 1e3:.1f} ms ' + ("ok" if r["median"] <= bound else "MISSED")
    print(f'{r["command"]:{width}} {r["median"] * 1e3:8.1f} {p95 * 1e3:8.1f} '
          f'{r["median"] / curl:7.2f}x  {target}')
PY
}
