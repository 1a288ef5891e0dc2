#!/usr/bin/env bash
# make bench-network: the suite's client apps over shaped networks, measured.
#
# Two test hosts in network namespaces joined by a veth pair: the store server's (the real
# release store-server on the demo data, SQLite) and the client's (the real reservations and,
# when built, catalog). The link is shaped to each profile in turn:
#   LAN    no shaping (baseline: what the server and the processes cost)
#   3G     780 kbit/s down, 330 kbit/s up, 100 ms each way
#   Edge   240 kbit/s down, 200 kbit/s up, 400 ms each way
#   Lossy  3G plus 2% of packets dropped, each direction
#   Down   every packet dropped
# Bandwidth: tc tbf on each end's egress. Loss: iptables -m statistic in the client's
# namespace. Latency: Benchmarks/network/delay_relay.py (this kernel has no netem), which
# also charges a new connection its handshake round trip. The relay runs in the client's
# namespace on 127.0.0.1 and forwards across the shaped veth to the server: the apps talk
# to http://127.0.0.1:PORT (loopback, where Auth lets credentials travel over plain http,
# so the shipped apps need no opt-out) while every byte crosses the shaped link. On Down
# the relay's port drops SYNs too, so a client's connect times out as on a dead link.
# Every flow runs BENCH_NETWORK_RUNS times (default 10) per profile: success rate, p50/p95
# per flow and profile, as a markdown table on stdout and under bench-results/, followed by
# the server's own count of check-ins (a retried write is applied once).
#
# Needs root (or CAP_NET_ADMIN) for namespaces; without it this says so and exits 0.
# Cleans up namespaces (and with them the veth pair, qdiscs and iptables rules) and every
# process it started on exit, including Ctrl-C.
#
# $1: the release bin path (make bench-network passes it). BENCH_NETWORK_PROFILES picks
# profiles (default "LAN 3G Edge Lossy Down").
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
for tool in ip tc iptables python3; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (make deps installs iproute2 and iptables)"
done

id=$$
ns_cli=sfnet-cli-$id
ns_srv=sfnet-srv-$id
veth_cli=sfc$((id % 100000))
veth_srv=sfs$((id % 100000))
cli_ip=10.203.0.1
srv_ip=10.203.0.2
relay_port=8080
url=http://127.0.0.1:$relay_port
work=$(mktemp -d "${TMPDIR:-/tmp}/bench-network.XXXXXX")
server_pid=
relay_pid=
driver_pid=

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  # Every process in our namespaces was started by this script (the server, the relay,
  # the driver and a client mid-flow): stopped by id, politely first.
  local pids=()
  for ns in "$ns_cli" "$ns_srv"; do
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      pids+=($(ip netns pids "$ns" 2>/dev/null))
    fi
  done
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 40); do
    local alive=0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.05
  done
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  for pid in $driver_pid $relay_pid $server_pid; do wait "$pid" 2>/dev/null || true; done
  for ns in "$ns_cli" "$ns_srv"; do ip netns del "$ns" 2>/dev/null || true; done
  ip link del "$veth_cli" 2>/dev/null || true
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'echo "bench-network: interrupted, cleaning up" >&2; exit 130' INT
trap 'exit 143' TERM

if ! err=$(ip netns add "$ns_cli" 2>&1); then
  skip "no permission to create network namespaces (run as root or with CAP_NET_ADMIN): $err"
fi
ip netns add "$ns_srv"
ip link add "$veth_cli" type veth peer name "$veth_srv"
ip link set "$veth_cli" netns "$ns_cli"
ip link set "$veth_srv" netns "$ns_srv"
ip -n "$ns_cli" addr add "$cli_ip/30" dev "$veth_cli"
ip -n "$ns_srv" addr add "$srv_ip/30" dev "$veth_srv"
for ns in "$ns_cli" "$ns_srv"; do ip -n "$ns" link set lo up; done
ip -n "$ns_cli" link set "$veth_cli" up
ip -n "$ns_srv" link set "$veth_srv" up
in_cli() { ip netns exec "$ns_cli" "$@"; }
in_srv() { ip netns exec "$ns_srv" "$@"; }

# Shaping must work before anything is measured.
in_srv tc qdisc add dev "$veth_srv" root tbf rate 1mbit burst 4kb latency 1s 2>"$work/tc.err" ||
  skip "tc tbf is not available: $(cat "$work/tc.err")"
in_srv tc qdisc del dev "$veth_srv" root
in_cli iptables -A OUTPUT -o "$veth_cli" -m statistic --mode random --probability 0.5 -j DROP \
  2>"$work/ipt.err" || skip "iptables -m statistic is not available: $(cat "$work/ipt.err")"
in_cli iptables -F OUTPUT

# The server on the demo data, on its host's veth address; the relay on the client's
# loopback is the only way to it. (`ip netns exec` execs the command: $! is the process
# itself, never a subshell.)
ip netns exec "$ns_srv" "$bin/store-server" serve --host "$srv_ip" --port 0 --demo-data \
  --database "$work/store.sqlite" >"$work/server.out" 2>"$work/server.log" &
server_pid=$!
port=
for _ in $(seq 1 1800); do
  port=$(sed -n 's|^listening on http://.*:\([0-9]*\)$|\1|p' "$work/server.out")
  [[ -n "$port" ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
[[ -n "$port" ]] || { echo "error: store-server did not start: $(tail -5 "$work/server.log")" >&2; exit 1; }

start_relay() { # delay-ms [extra relay flags]
  if [[ -n "$relay_pid" ]]; then
    kill -TERM "$relay_pid" 2>/dev/null || true
    wait "$relay_pid" 2>/dev/null || true
  fi
  : >"$work/relay.out"
  ip netns exec "$ns_cli" python3 "$here/delay_relay.py" --listen "127.0.0.1:$relay_port" --to "$srv_ip:$port" \
    --delay-ms "$1" --lifetime 3600 "${@:2}" >"$work/relay.out" 2>>"$work/relay.log" &
  relay_pid=$!
  for _ in $(seq 1 300); do
    grep -q '^listening on' "$work/relay.out" && return 0
    kill -0 "$relay_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "error: the delay relay did not start: $(tail -3 "$work/relay.log")" >&2
  exit 1
}

unshape() {
  in_srv tc qdisc del dev "$veth_srv" root 2>/dev/null || true
  in_cli tc qdisc del dev "$veth_cli" root 2>/dev/null || true
  in_cli iptables -F INPUT
  in_cli iptables -F OUTPUT
}

shape() { # down-kbit up-kbit
  # The queue holds up to a second of the link's traffic (a mobile network's deep buffers).
  in_srv tc qdisc add dev "$veth_srv" root tbf rate "${1}kbit" burst 3028 latency 1s
  in_cli tc qdisc add dev "$veth_cli" root tbf rate "${2}kbit" burst 3028 latency 1s
}

lose() { # probability
  in_cli iptables -A INPUT -i "$veth_cli" -m statistic --mode random --probability "$1" -j DROP
  in_cli iptables -A OUTPUT -o "$veth_cli" -m statistic --mode random --probability "$1" -j DROP
}

profile() {
  unshape
  case "$1" in
    LAN) start_relay 0 --no-handshake-delay ;;
    3G) shape 780 330; start_relay 100 ;;
    Edge) shape 240 200; start_relay 400 ;;
    Lossy) shape 780 330; start_relay 100; lose 0.02 ;;
    Down) shape 780 330; start_relay 100
      in_cli iptables -A INPUT -i "$veth_cli" -j DROP
      in_cli iptables -A OUTPUT -o "$veth_cli" -j DROP
      # The relay stands for the link: its port drops SYNs as the dead link would.
      in_cli iptables -A INPUT -i lo -p tcp --dport "$relay_port" -j DROP ;;
    *) echo "error: unknown profile '$1' (LAN 3G Edge Lossy Down)" >&2; exit 64 ;;
  esac
}

home=$work/home
mkdir -m 700 "$home"
checkins=$((runs * ${#profiles[@]}))
echo "bench-network: server $srv_ip in $ns_srv, clients in $ns_cli through $url, $runs runs per flow and profile" >&2
profile LAN
in_cli python3 "$here/flows.py" prepare --bin "$bin" --server "$url" --home "$home" \
  --checkins "$checkins" --out "$work/pool.json"

results=()
offset=0
for name in "${profiles[@]}"; do
  echo "==> profile $name" >&2
  profile "$name"
  ip netns exec "$ns_cli" python3 "$here/flows.py" run --bin "$bin" --server "$url" --home "$home" \
    --profile "$name" --runs "$runs" --pool "$work/pool.json" --checkin-offset "$offset" \
    --out "$work/$name.json" &
  driver_pid=$!
  wait "$driver_pid"
  driver_pid=
  results+=("$work/$name.json")
  offset=$((offset + runs))
done
unshape

# The server's log is flushed by a clean stop before its records are counted.
kill -TERM "$server_pid"
wait "$server_pid" || true
server_pid=
python3 "$here/flows.py" report --out-dir "$out_dir" --database "$work/store.sqlite" \
  --server-log "$work/server.log" \
  --header "$(uname -srm), $(nproc) cores; $runs runs per flow and profile; $(git rev-parse --short HEAD 2>/dev/null || true)" \
  "${results[@]}"
