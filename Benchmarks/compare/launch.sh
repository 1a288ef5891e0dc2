#!/usr/bin/env bash
# Launch time of every app of the suite, process start to exit, with hyperfine (p50 =
# median), against the same work done by a tool a user would pick instead:
#   APP --help                 for scan, suite-defaults, reservations, catalog (when built),
#                              store-server (target: every one within 2x `zbarimg --version`,
#                              a C tool of the same kind, started in the same run)
#   reservations show CODE     answered from the offline cache (server stopped), and on
#                              loopback with the server up (target: <= 15 ms p50 or <= 1.5x
#                              a bare `curl` request in the same run, whichever is larger)
#   /bin/true, python3 -c ''   the floor of starting any process, and a scripting runtime
# It also prints, per app, how it is linked (Swift runtime static or shared), how many
# shared objects the loader maps, and the loader's own time for one start
# (LD_DEBUG=statistics: relocation time, from ld.so), which is where a slow --help goes.
# $1: the release bin path (make bench passes it). LAUNCH_RUNS (default 40) runs each.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: launch.sh BIN_PATH}
runs=${LAUNCH_RUNS:-40}
source Benchmarks/compare/lib/client-launch.bash
for tool in hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "error: $tool not installed (make deps)" >&2; exit 1; }
done
apps=()
for app in scan suite-defaults reservations catalog store-server; do
  if [[ -x "$bin/$app" ]]; then apps+=("$app"); else echo "note: $app not built, left out" >&2; fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/launch-bench.XXXXXX")
server_pid=
trap client_launch_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
export SHOPFLOOR_HOME=$work/home NO_COLOR=1
unset SHOPFLOOR_SERVER
mkdir -m 700 "$SHOPFLOOR_HOME"

echo "load average before the runs: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" \
  "(wall times wait for a core when it is busy; CPU ms do not)"
echo "linkage and loader cost of one start (--help):"
printf '  %-16s %-22s %8s %14s\n' app "Swift runtime" "objects" "ld.so reloc ms"
for app in "${apps[@]}"; do
  if ldd "$bin/$app" 2>/dev/null | grep -q libswiftCore; then linkage=shared; else linkage=static; fi
  objects=$(ldd "$bin/$app" 2>/dev/null | grep -c '=>' || true)
  # ld.so prints "total startup time in dynamic loader: N cycles"; relocation time in ms
  # is not printed, so report cycles as milliseconds at the CPU's nominal clock.
  cycles=$(LD_DEBUG=statistics "$bin/$app" --help 2>&1 >/dev/null |
    sed -n 's/.*total startup time in dynamic loader: *\([0-9]*\) cycles.*/\1/p' | head -1)
  mhz=$(awk -F: '/^cpu MHz/ { print $2; exit }' /proc/cpuinfo 2>/dev/null || echo 0)
  ms=$(python3 -c "import sys; c, m = float(sys.argv[1] or 0), float(sys.argv[2] or 0); print(f'{c / (m * 1000):.1f}' if m else '?')" "${cycles:-0}" "${mhz:-0}")
  printf '  %-16s %-22s %8s %14s\n' "$app" "$linkage" "$objects" "$ms"
done
echo

commands=()
for app in "${apps[@]}"; do commands+=(-n "$app --help" "$bin/$app --help"); done
# What a user would start instead: the OCR and barcode tools scan stands in for, curl for
# one request to the server, and the floor of starting any process.
commands+=(-n "true (process floor)" "/bin/true")
command -v zbarimg >/dev/null || { echo "error: zbarimg not installed (make deps)" >&2; exit 1; }
commands+=(-n "zbarimg --version" "zbarimg --version" -n "zbarimg --help" "zbarimg --help")
command -v tesseract >/dev/null && commands+=(-n "tesseract --help" "tesseract --help")

online=()
if [[ -x "$bin/reservations" && -x "$bin/store-server" ]]; then
  client_launch_serve reservations >/dev/null
  code=$("$bin/reservations" search e --status confirmed --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["confirmationCode"])')
  "$bin/reservations" show "$code" --json >/dev/null
  online=(-n "reservations show (loopback)" "$bin/reservations show $code --json"
    -n "curl config (loopback)" "curl -s -o /dev/null $url/v1/config/client?app=reservations&version=0.1.0")
fi

# -i: `zbarimg --help` and `tesseract --help` exit non-zero.
hyperfine -N -i --warmup 5 --runs "$runs" --export-json "$work/help.json" "${commands[@]}" \
  "${online[@]}" >/dev/null 2>&1
results=("$work/help.json")
if [[ -n "$server_pid" ]]; then
  client_launch_stop_server
  hyperfine -N --warmup 5 --runs "$runs" --export-json "$work/cached.json" \
    -n "reservations show (cached, server down)" "$bin/reservations show $code --json --quiet" \
    >/dev/null 2>&1
  results+=("$work/cached.json")
fi

python3 - "${results[@]}" <<'PY'
import json, sys
results = []
for path in sys.argv[1:]:
    results += json.load(open(path))["results"]
by = {r["command"]: r for r in results}
# The peer each command is compared with: `zbarimg --version` for every --help (a C tool's
# start that prints and exits), a bare curl request for `show`.
peer_help = "zbarimg --version"
curl = "curl config (loopback)"
instead = {"reservations show (loopback)": curl, "reservations show (cached, server down)": curl}
print("| command | p50 ms | p95 ms | CPU ms | vs | ratio | target |")
print("|---|---:|---:|---:|---|---:|---|")
missed = []
for r in results:
    times = sorted(r["times"])
    p95 = times[min(len(times) - 1, int(len(times) * 0.95))]
    cpu = (r["user"] + r["system"]) * 1e3
    name = r["command"]
    target = ""
    is_app_help = name.endswith("--help") and not name.startswith(("zbarimg", "tesseract"))
    other = peer_help if is_app_help else instead.get(name, "true (process floor)")
    ratio = r["median"] / by[other]["median"] if other in by and other != name else None
    if is_app_help and ratio is not None:
        ok = ratio <= 2.0
        target = "<= 2x " + ("ok" if ok else "MISSED")
    elif name in instead and ratio is not None:
        bound = max(0.015, 1.5 * by[curl]["median"])
        ok = r["median"] <= bound
        target = f"<= {bound * 1e3:.1f} ms " + ("ok" if ok else "MISSED")
    if target.endswith("MISSED"):
        missed.append(name)
    print(f'| {name} | {r["median"] * 1e3:.1f} | {p95 * 1e3:.1f} | {cpu:.1f} | '
          f'{other if ratio else ""} | {f"{ratio:.2f}x" if ratio else ""} | {target} |')
print(f"\nCPU ms: user + system time of one run (mean); wall times include waiting for a core.")
print("targets: every --help within 2x `zbarimg --version`; `show` <= 15 ms p50 or <= 1.5x "
      "the curl request, whichever is larger")
if missed:
    print("missed: " + ", ".join(missed))
PY
