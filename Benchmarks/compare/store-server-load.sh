#!/usr/bin/env bash
# store-server under a bounded load of signed requests on loopback (the load generator signs
# every request, so it shares the 2 cores with the server): p50/p99 latency and req/s for
# reservation search, show-by-code and product image, on SQLite and on PostgreSQL with one
# and two server processes; then the highest rate that keeps show-by-code p99 <= 20 ms.
# The baseline in the same run is GET /health through the same generator (no signature,
# no database work besides SELECT 1), so the ratio shows what signing and SQL cost.
# $1: the root package's release bin path (store-server). STORE_LOAD_SECONDS (default 8).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: store-server-load.sh RELEASE_BIN_PATH}
seconds=${STORE_LOAD_SECONDS:-8}
swift build -c release --product StoreServerLoad >&2
load="$(swift build -c release --show-bin-path)/StoreServerLoad"
work=$(mktemp -d)
chmod 755 "$work"
# start_server runs in a command substitution (a subshell), so the servers' pids go to a
# file the main shell reads when it stops them.
pidfile="$work/server.pids"
: >"$pidfile"
kill_servers() {
  local pid
  while read -r pid; do
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done <"$pidfile"
  : >"$pidfile"
}
cleanup() {
  kill_servers
  if [[ -n "${pgdata:-}" ]]; then as_pg "$pgbin/pg_ctl" -D "$pgdata" -m immediate stop >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
as_pg() { if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start_server() { # $1 database, prints the URL
  local out="$work/out.$RANDOM"
  "$bin/store-server" serve --port 0 --database "$1" --insecure-password-cost-for-tests --password-cost 1000 --quiet >"$out" 2>"$work/err" &
  echo $! >>"$pidfile"
  for _ in $(seq 1 600); do [[ -s "$out" ]] && break; sleep 0.1; done
  sed 's/^listening on //' "$out" | head -1
}

stop_servers() {
  kill_servers
}

scenarios() { # $1 label, $2 comma-separated URLs, $3 database
  local urls=$2 first=${2%%,*}
  local codes gtin
  codes=$(python3 - "$3" <<'PY'
import sys, sqlite3, subprocess
db = sys.argv[1]
if db.startswith("postgres"):
    out = subprocess.run(["psql", db, "-Atc", "SELECT code FROM reservations WHERE store_id = '5D0F1C2A-0004-4A00-8000-000000000004' ORDER BY id LIMIT 50"], capture_output=True, text=True).stdout.split()
else:
    out = [r[0] for r in sqlite3.connect(db).execute("SELECT code FROM reservations WHERE store_id = '5D0F1C2A-0004-4A00-8000-000000000004' ORDER BY id LIMIT 50")]
print("|".join("/v1/reservations/by-code/" + c for c in out))
PY
)
  gtin=$(curl -s "$first/openapi.yaml" >/dev/null; python3 - "$3" <<'PY'
import sys, sqlite3, subprocess
db = sys.argv[1]
if db.startswith("postgres"):
    out = subprocess.run(["psql", db, "-Atc", "SELECT gtin FROM products ORDER BY gtin LIMIT 20"], capture_output=True, text=True).stdout.split()
else:
    out = [r[0] for r in sqlite3.connect(db).execute("SELECT gtin FROM products ORDER BY gtin LIMIT 20")]
print("|".join("/v1/products/" + g + "/image" for g in out))
PY
)
  local search="/v1/reservations?query=weber&limit=20|/v1/reservations?date=$(date -u +%F)&limit=20|/v1/reservations?status=confirmed&limit=20"
  printf '%-34s %-16s %s\n' "$1" "health (baseline)" "$("$load" "$urls" "/health" 1000 "$seconds")"
  if [[ $3 == postgres* ]]; then psql "$3" -qAtc "SELECT pg_stat_statements_reset(), pg_stat_reset_shared('wal')" >/dev/null; fi
  printf '%-34s %-16s %s\n' "$1" "show-by-code" "$("$load" "$urls" "$codes" 1000 "$seconds")"
  if [[ $3 == postgres* ]]; then
    # Where the database's time went in that run: the statements by total time, and how
    # often the WAL was flushed to disk (each a synchronous commit's wait).
    psql "$3" -qAt -F ' | ' -c "SELECT 'wal: ' || wal_records || ' records, ' || wal_sync || ' flushes, ' || round(wal_sync_time::numeric) || ' ms flushing (track_wal_io_timing)' FROM pg_stat_wal" | sed 's/^/    /'
    psql "$3" -qAt -F ' | ' -c "SELECT calls, round(mean_exec_time::numeric, 3) || ' ms mean', round(total_exec_time::numeric) || ' ms total', left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_statements WHERE calls > 100 ORDER BY total_exec_time DESC LIMIT 8" | sed 's/^/    /'
  fi
  printf '%-34s %-16s %s\n' "$1" "search" "$("$load" "$urls" "$search" 300 "$seconds")"
  printf '%-34s %-16s %s\n' "$1" "product image" "$("$load" "$urls" "$gtin" 1000 "$seconds")"
  local best=0
  for rate in 500 1000 1500 2000 2500 3000 4000; do
    local line p99
    line=$("$load" "$urls" "$codes" "$rate" 4)
    p99=$(python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print(r["p99_ms"] if r["errors"] == 0 else 1e9)' "$line")
    if python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= 20 else 1)' "$p99"; then best=$rate; else break; fi
  done
  printf '%-34s %-16s highest tried rate with p99 <= 20 ms and no errors: %s req/s\n' "$1" "show-by-code" "$best"
}

echo "==> store-server load: ${seconds}s per run, signed requests, loopback, $(nproc) cores shared with the generator; $(uptime | sed 's/.*load/load/')"
echo "    generator_cpu: the generator's own CPU (user + system) as a share of one core over its run"
# store-server refuses a database directory others may enter; the work directory stays 755
# for the PostgreSQL cluster, which runs as its own user.
mkdir -m 700 "$work/sqlite"
sqlite="$work/sqlite/store.sqlite"
"$bin/store-server" seed --demo --database "$sqlite" --insecure-password-cost-for-tests --password-cost 1000 >/dev/null
url=$(start_server "$sqlite")
scenarios "SQLite, 1 process" "$url" "$sqlite"
stop_servers

pgbin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
if [[ -x "$pgbin/initdb" ]]; then
  pgdata="$work/pg"
  mkdir -p "$pgdata"
  [[ $(id -u) -eq 0 ]] && chown postgres "$work" "$pgdata"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  as_pg "$pgbin/initdb" -D "$pgdata" -U shopfloor --auth=trust -E UTF8 --locale=C >/dev/null
  as_pg "$pgbin/pg_ctl" -D "$pgdata" -w -l "$pgdata/log" -o "-p $port -k $pgdata -c listen_addresses=127.0.0.1 -c max_connections=200 -c shared_preload_libraries=pg_stat_statements -c track_wal_io_timing=on" start >/dev/null
  "$pgbin/createdb" -h 127.0.0.1 -p "$port" -U shopfloor shopfloor
  pg="postgres://shopfloor@127.0.0.1:$port/shopfloor"
  "$pgbin/psql" "$pg" -qc "CREATE EXTENSION pg_stat_statements"
  export PATH="$pgbin:$PATH"
  "$bin/store-server" seed --demo --database "$pg" --insecure-password-cost-for-tests --password-cost 1000 >/dev/null
  url=$(start_server "$pg")
  scenarios "PostgreSQL, 1 process" "$url" "$pg"
  stop_servers
  url1=$(start_server "$pg"); url2=$(start_server "$pg")
  scenarios "PostgreSQL, 2 processes" "$url1,$url2" "$pg"
  stop_servers
else
  echo "PostgreSQL not installed (apt-get install postgresql): skipped"
fi
