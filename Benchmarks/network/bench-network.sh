#!/usr/bin/env bash
# make bench-network: the suite's client apps over shaped networks, measured on the path a
# store takes: https through URLSession to a TLS-terminating load balancer (HAProxy) and two
# store-server instances on PostgreSQL, the deployment rig of scripts/rig.sh (network
# namespaces; the rig's private CA installed the Debian way on the client host). Also, when
# store-server serves TLS itself (`serve --tls-certificate`), the same flows straight to one
# instance terminating TLS.
#
# The client's link is shaped to each profile in turn:
#   LAN    no shaping (baseline: what the server and the processes cost)
#   3G     780 kbit/s down, 330 kbit/s up, 100 ms each way
#   Edge   240 kbit/s down, 200 kbit/s up, 400 ms each way
#   Lossy  3G plus 2% of packets dropped, each direction
#   Down   every packet dropped
# Bandwidth: tc tbf on each end of the client's link. Loss and Down: iptables in the client's
# namespace. Latency: delay_relay.py on the rig's wan host (this kernel has no netem), which
# the name shopfloor.test resolves to; it relays the TLS bytes unread and charges each new
# connection its handshake round trip. Every flow runs BENCH_NETWORK_RUNS times (default 10)
# per profile: success rate, p50/p95 per flow and profile, as a markdown table on stdout and
# under bench-results/.
#
# Needs root (or CAP_NET_ADMIN) for namespaces; without it this says so and exits 0.
# Everything the rig started is stopped on exit (by pid), including on Ctrl-C.
#
# $1: the release bin path (make bench-network passes it). BENCH_NETWORK_PROFILES picks
# profiles (default "LAN 3G Edge Lossy Down"); BENCH_NETWORK_TLS picks who terminates TLS
# ("lb", "server", default both where store-server can).
set -euo pipefail
cd "$(dirname "$0")/../.."
repo=$(pwd)
bin=${1:?usage: bench-network.sh BIN_PATH}
bin=$(cd "$bin" && pwd)
runs=${BENCH_NETWORK_RUNS:-10}
read -r -a profiles <<<"${BENCH_NETWORK_PROFILES:-LAN 3G Edge Lossy Down}"
out_dir=${BENCH_RESULTS:-$repo/bench-results}
here=$repo/Benchmarks/network

skip() {
  echo "bench-network: skipped: $*"
  exit 0
}

for app in reservations store-server; do
  [[ -x "$bin/$app" ]] || { echo "error: $bin/$app not built (make build)" >&2; exit 1; }
done
if ! reason=$(bash "$repo/scripts/rig.sh" check 2>&1); then
  skip "$reason"
fi
modes=${BENCH_NETWORK_TLS:-}
if [[ -z $modes ]]; then
  modes=lb
  "$bin/store-server" serve --help 2>/dev/null | grep -q -- '--tls-certificate' && modes="lb server"
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/bench-network.XXXXXX")
chmod 0755 "$work"
state=
relay_pid=
driver_pid=
rig() { bash "$repo/scripts/rig.sh" "$@"; }

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  for pid in $driver_pid $relay_pid; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in $driver_pid $relay_pid; do wait "$pid" 2>/dev/null || true; done
  [[ -n $state ]] && rig down "$state" >/dev/null 2>&1
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'echo "bench-network: interrupted, cleaning up" >&2; exit 130' INT
trap 'exit 143' TERM

start_relay() { # delay-ms target [relay flags]
  stop_relay
  rig relay "$state" "$@" >"$work/relay.out" 2>>"$work/relay.log" &
  relay_pid=$!
  for _ in $(seq 1 300); do
    grep -q '^listening on' "$work/relay.out" && return 0
    kill -0 "$relay_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "error: the delay relay did not start: $(tail -3 "$work/relay.log")" >&2
  exit 1
}

stop_relay() {
  if [[ -n $relay_pid ]]; then
    kill -TERM "$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
    relay_pid=
  fi
}

profile() { # name target
  case "$1" in
    LAN) rig shape "$state" LAN; start_relay 0 "$2" --no-handshake-delay ;;
    3G | Lossy) rig shape "$state" "$1"; start_relay 100 "$2" ;;
    Edge) rig shape "$state" Edge; start_relay 400 "$2" ;;
    Down) start_relay 100 "$2"; rig shape "$state" Down ;;
    *) echo "error: unknown profile '$1' (LAN 3G Edge Lossy Down)" >&2; exit 64 ;;
  esac
}

results=()
for mode in $modes; do
  state=$work/rig-$mode
  options=()
  target=lb
  if [[ $mode == server ]]; then
    options=(--server-tls)
    target=app1
  fi
  echo "==> rig: TLS terminated by $([[ $mode == lb ]] && echo HAProxy || echo store-server)" >&2
  rig up "$state" "$bin" "${options[@]}" >&2
  home=$state/client
  checkins=$((runs * ${#profiles[@]}))
  profile LAN "$target"
  rig client "$state" python3 "$here/flows.py" prepare --bin "$bin" --server https://shopfloor.test \
    --home "$home" --checkins "$checkins" --out "$home/pool.json"
  offset=0
  for name in "${profiles[@]}"; do
    echo "==> $mode: profile $name" >&2
    profile "$name" "$target"
    rig client "$state" python3 "$here/flows.py" run --bin "$bin" --server https://shopfloor.test \
      --home "$home" --profile "$name" --runs "$runs" --pool "$home/pool.json" \
      --checkin-offset "$offset" --label "$mode" --out "$home/$name.json" &
    driver_pid=$!
    wait "$driver_pid"
    driver_pid=
    cp "$home/$name.json" "$work/$mode-$name.json"
    results+=("$work/$mode-$name.json")
    offset=$((offset + runs))
  done
  stop_relay
  rig down "$state"
  state=
done

python3 "$here/flows.py" report --out-dir "$out_dir" \
  --header "$(uname -srm), $(nproc) cores; $runs runs per flow and profile; https through URLSession; TLS by: $modes; $(git rev-parse --short HEAD 2>/dev/null || true)" \
  "${results[@]}"
