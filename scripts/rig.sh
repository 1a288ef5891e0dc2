#!/usr/bin/env bash
# The deployment rig: the path a store takes, built from network namespaces on this machine.
# The tests (Tests/IntegrationTests/DeploymentRigTests.swift) and `make bench-network` share it.
#
#   cli  10.204.0.10   the staff terminal: reservations, catalog (https through URLSession)
#   wan  10.204.0.3    the store's uplink in the bench: delay_relay.py (latency), forwarding to
#                      the load balancer or, with --server-tls, straight to app1
#   lb   10.204.0.2    HAProxy (Debian), TLS 1.2+ terminated with the rig's private CA,
#                      round robin over app1 and app2, health-checked on GET /health
#   app1 10.204.0.21   store-server on PostgreSQL (port 8080; no sslmode in its URL: TLS is
#                      the default to a non-loopback host), with a notify socket
#                      (STATE/app1.notify, messages in STATE/app1.notify.log) and a 2 s watchdog
#   app2 10.204.0.22   store-server on PostgreSQL (port 8080)
#   db   10.204.0.30   PostgreSQL (Debian), TLS only, scram-sha-256 password
# joined by a bridge in a sixth namespace (the switch), so the host's own network is untouched.
# Names: shopfloor.test is the load balancer (or the relay), db.shopfloor.test the database.
#
# Trust as a store sets it up: the rig's CA is installed the Debian way
# (/usr/local/share/ca-certificates + update-ca-certificates) in a private mount namespace,
# and every client and server process runs under `unshare -m` with that /etc/ssl/certs and
# the rig's /etc/hosts bind-mounted over the system's: nothing on the host changes. Services
# run as unprivileged users through setpriv (haproxy, postgres, daemon; clients as nobody).
#
#   rig.sh check                      exit 0 when namespaces, veth and bridges can be made
#                                     here, else prints why and exits 2
#   rig.sh up STATE BIN [options]     build the rig; STATE is a new directory it owns, BIN
#                                     holds store-server, reservations, catalog
#       --password-cost N             store-server's PBKDF2 cost (default 600000)
#       --server-tls                  store-server serves TLS itself on 8443 (needs its TLS)
#   rig.sh client STATE CMD...        run CMD on the client host as a user runs it (nobody,
#                                     SHOPFLOOR_HOME=STATE/client, SHOPFLOOR_SERVER=https://shopfloor.test)
#   rig.sh client-untrusted STATE CMD...  the same on a terminal without the rig's CA
#   rig.sh on STATE HOST CMD...       run CMD as root in HOST's namespace
#   rig.sh stop-app STATE N [SIGNAL]  stop appN (default SIGKILL: a crash)
#   rig.sh start-app STATE N          start appN again
#   rig.sh stop-db STATE / start-db STATE
#   rig.sh route STATE lb|wan|app1    what shopfloor.test names for the client
#   rig.sh relay STATE MS lb|app1 [relay flags]  delay_relay.py on the wan host, MS each way,
#                                     in the foreground; shopfloor.test then names the relay
#   rig.sh shape STATE PROFILE        LAN | 3G | Edge | Lossy | Down on the client's link
#   rig.sh down STATE                 stop everything it started (by pid), remove namespaces
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

net=10.204.0
declare -A ip=([cli]=$net.10 [wan]=$net.3 [lb]=$net.2 [app1]=$net.21 [app2]=$net.22 [db]=$net.30)
hosts=(cli wan lb app1 app2 db)
app_user=daemon
client_user=nobody
db_password=rig-db-password

die() {
  echo "rig: error: $*" >&2
  exit 1
}

load() {
  state=${1:?rig.sh: STATE directory missing}
  [[ -f $state/rig.env ]] || die "$state is not a rig (no rig.env)"
  # shellcheck disable=SC1091
  source "$state/rig.env"
}

ns() { echo "sfrig-$rig_id-$1"; }

# A command in HOST's namespace, in a private mount namespace with the rig's CA store and
# hosts file, as USER (or root when USER is empty). With RIG_EXEC=1 the shell is replaced, so
# a service started this way keeps the pid it was started with; RIG_NO_CA=1 leaves the
# system's CA store in place (the rig's CA is then unknown).
in_host() {
  local host=$1 user=$2
  shift 2
  local become=() mounts=()
  if [[ -n $user ]]; then
    become=(setpriv --reuid="$user" --regid="$(id -g "$user")" --init-groups --inh-caps=-all --bounding-set=-all)
  fi
  [[ ${RIG_NO_CA:-0} == 1 ]] && mounts=(--no-ca)
  local command=(ip netns exec "$(ns "$host")" unshare -m --propagation private
    "$here/rig-mounts.sh" "$state" "${mounts[@]}" "${become[@]}" "$@")
  if [[ ${RIG_EXEC:-0} == 1 ]]; then
    exec "${command[@]}"
  fi
  "${command[@]}"
}

cmd_check() {
  [[ $(id -u) -eq 0 ]] || { echo "rig: not root: network namespaces need CAP_NET_ADMIN"; exit 2; }
  for tool in ip tc iptables unshare setpriv openssl haproxy update-ca-certificates python3; do
    command -v "$tool" >/dev/null || { echo "rig: $tool is not installed (make deps)"; exit 2; }
  done
  [[ -n $(pg_bin) ]] || { echo "rig: PostgreSQL is not installed (make deps)"; exit 2; }
  local probe=sfrig-probe-$$ err
  if ! err=$(ip netns add "$probe" 2>&1); then
    echo "rig: no permission to create network namespaces: $err"
    exit 2
  fi
  if ! err=$(ip -n "$probe" link add br0 type bridge 2>&1); then
    ip netns del "$probe"
    echo "rig: cannot create a bridge in a namespace: $err"
    exit 2
  fi
  if ! err=$(ip netns exec "$probe" unshare -m --propagation private true 2>&1); then
    ip netns del "$probe"
    echo "rig: cannot create a private mount namespace: $err"
    exit 2
  fi
  ip netns del "$probe"
  echo "rig: namespaces, bridges and mount namespaces are available"
}

pg_bin() {
  local v
  for v in $(ls /usr/lib/postgresql 2>/dev/null | sort -rn); do
    [[ -x /usr/lib/postgresql/$v/bin/initdb ]] && { echo "/usr/lib/postgresql/$v/bin"; return; }
  done
}

# The rig's private CA and the certificates it signs (4096-bit keys are slow; P-256 is not).
make_pki() {
  local pki=$state/pki
  mkdir -p "$pki"
  chmod 0755 "$pki"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 \
    -subj "/CN=Shopfloor Rig Test CA $rig_id" -keyout "$pki/ca.key" -out "$pki/ca.crt" \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
    2>/dev/null
  local name
  for name in shopfloor db app1 app2; do
    local cn=$name.shopfloor.test san
    [[ $name == shopfloor ]] && cn=shopfloor.test
    san="DNS:$cn"
    case $name in
      shopfloor) san+=",DNS:localhost,IP:${ip[lb]},IP:${ip[wan]}" ;;
      app1 | app2) san+=",DNS:shopfloor.test,IP:${ip[$name]}" ;;
      db) san+=",IP:${ip[db]}" ;;
    esac
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
      -keyout "$pki/$name.key" -out "$pki/$name.csr" 2>/dev/null
    openssl x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
      -CAcreateserial -days 2 -out "$pki/$name.crt" \
      -extfile <(printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n' "$san") \
      2>/dev/null
    rm -f "$pki/$name.csr"
  done
  chmod 0600 "$pki"/*.key
  # HAProxy takes certificate and key in one file.
  cat "$pki/shopfloor.crt" "$pki/shopfloor.key" >"$pki/lb.pem"
  chown haproxy "$pki/lb.pem"
  chmod 0600 "$pki/lb.pem"
  cp "$pki/db.key" "$pki/db-postgres.key"
  chown postgres "$pki/db-postgres.key"
  chmod 0600 "$pki/db-postgres.key"
  for name in app1 app2; do
    chown "$app_user" "$pki/$name.key"
  done
}

# The CA installed the Debian way, in a private mount namespace: a copy of /etc/ssl/certs
# and an empty /usr/local/share/ca-certificates are bind-mounted over the system's, the CA
# goes into the second, and update-ca-certificates rebuilds the first (its bundle and hash
# links), exactly as on a store's server or terminal. The result is STATE/ssl-certs.
install_ca() {
  mkdir -p "$state/ssl-certs" "$state/local-ca"
  cp -a /etc/ssl/certs/. "$state/ssl-certs/"
  cp "$state/pki/ca.crt" "$state/local-ca/shopfloor-rig-ca.crt"
  chmod 0755 "$state/ssl-certs" "$state/local-ca"
  unshare -m --propagation private bash -euo pipefail -c '
    mount --bind "$1/ssl-certs" /etc/ssl/certs
    mount --bind "$1/local-ca" /usr/local/share/ca-certificates
    update-ca-certificates >"$1/update-ca-certificates.log" 2>&1
  ' rig "$state" || die "update-ca-certificates failed: $(cat "$state/update-ca-certificates.log")"
  grep -q "1 added" "$state/update-ca-certificates.log" ||
    die "update-ca-certificates did not add the rig's CA: $(cat "$state/update-ca-certificates.log")"
}

write_hosts() {
  local target=${1:-lb}
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
    echo "${ip[$target]} shopfloor.test"
    echo "${ip[lb]} lb.shopfloor.test"
    echo "${ip[wan]} wan.shopfloor.test"
    echo "${ip[app1]} app1.shopfloor.test"
    echo "${ip[app2]} app2.shopfloor.test"
    echo "${ip[db]} db.shopfloor.test"
  } >"$state/hosts.new"
  chmod 0644 "$state/hosts.new"
  # Renamed into place: a bind mount of STATE/hosts sees the file it was given, so the
  # new one is what the next command's mount namespace gets.
  mv "$state/hosts.new" "$state/hosts"
}

make_network() {
  local sw
  sw=$(ns sw)
  ip netns add "$sw"
  ip -n "$sw" link add br0 type bridge
  ip -n "$sw" link set br0 up
  ip -n "$sw" link set lo up
  local h short=$((rig_id % 100000))
  for h in "${hosts[@]}"; do
    local n
    n=$(ns "$h")
    ip netns add "$n"
    ip link add "sr$short$h" type veth peer name "sp$short$h"
    ip link set "sr$short$h" netns "$n"
    ip link set "sp$short$h" netns "$sw"
    ip -n "$n" link set "sr$short$h" name eth0
    ip -n "$sw" link set "sp$short$h" name "$h"
    ip -n "$sw" link set "$h" master br0
    ip -n "$sw" link set "$h" up
    ip -n "$n" addr add "${ip[$h]}/24" dev eth0
    ip -n "$n" link set eth0 up
    ip -n "$n" link set lo up
    # Services bind their well-known ports as unprivileged users (HAProxy on 443).
    ip netns exec "$n" sysctl -qw net.ipv4.ip_unprivileged_port_start=0
  done
}

start_db() {
  local bin data
  bin=$(pg_bin)
  data=$state/pg/data
  if [[ ! -d $data ]]; then
    mkdir -p "$state/pg"
    chown postgres: "$state/pg"
    chmod 0700 "$state/pg"
    printf '%s\n' "$db_password" >"$state/pg/pwfile"
    chown postgres "$state/pg/pwfile"
    in_host db postgres "$bin/initdb" -D "$data" -U shopfloor --pwfile="$state/pg/pwfile" \
      --auth-local=trust --auth-host=scram-sha-256 --no-sync -E UTF8 --locale=C \
      >"$state/pg/initdb.log" 2>&1 || die "initdb failed: $(tail -5 "$state/pg/initdb.log")"
    {
      echo "local all all trust"
      echo "hostssl all all $net.0/24 scram-sha-256"
    } >"$data/pg_hba.conf"
    chown postgres "$data/pg_hba.conf"
  fi
  in_host db postgres "$bin/pg_ctl" -D "$data" -w -t 60 -l "$state/pg/log" -o \
    "-c listen_addresses=${ip[db]} -k $state/pg -c ssl=on -c ssl_cert_file=$state/pki/db.crt -c ssl_key_file=$state/pki/db-postgres.key -c ssl_min_protocol_version=TLSv1.2 -c fsync=off -c synchronous_commit=off -c max_connections=200" \
    start >"$state/pg/pg_ctl.log" 2>&1 || die "PostgreSQL did not start: $(tail -5 "$state/pg/log")"
  if [[ ! -f $state/pg/created ]]; then
    in_host db postgres "$bin/createdb" -h "$state/pg" -U shopfloor shopfloor ||
      die "createdb failed"
    touch "$state/pg/created"
  fi
}

stop_db() {
  in_host db postgres "$(pg_bin)/pg_ctl" -D "$state/pg/data" -m fast -w -t 30 stop \
    >>"$state/pg/pg_ctl.log" 2>&1 || true
}

start_app() {
  local n=$1 host=app$1
  local home=$state/$host
  mkdir -p "$home"
  chown "$app_user" "$home"
  chmod 0700 "$home"
  # HAProxy is the one proxy whose X-Forwarded-For and X-Forwarded-Proto are believed: the
  # client's address (sign-in limits) and scheme (request signatures cover https://).
  local args=(serve --host "${ip[$host]}" --port 8080 --demo-data --password-cost "$password_cost"
    --trusted-proxy "${ip[lb]}/32")
  # Below Auth's floor (a test rig's cheap hashes) store-server wants it said out loud.
  if ((password_cost < 100000)); then args+=(--insecure-password-cost-for-tests); fi
  if ((server_tls)); then
    # TLS only: no plain listener; the load balancer speaks TLS to it and checks its name.
    args=("${args[@]/#8080/8443}")
    args+=(--tls-certificate "$state/pki/$host.crt" --tls-key "$state/pki/$host.key")
  fi
  : >"$state/$host.out"
  # systemd's side of the notify protocol, as the unit (Type=notify, WatchdogSec=2s) has it.
  stop_pidfile "$state/$host-notify.pid" TERM
  : >"$state/$host.notify.log"
  setsid /usr/bin/python3 "$here/notify-listener.py" "$state/$host.notify" "$state/$host.notify.log" \
    </dev/null >"$state/$host-notify.out" 2>&1 &
  echo $! >"$state/$host-notify.pid"
  for _ in $(seq 1 100); do
    grep -q "listening on" "$state/$host-notify.out" && break
    sleep 0.05
  done
  # The database URL (with its password) in the environment, as the unit's
  # EnvironmentFile gives it: never on a command line that `ps` shows.
  setsid env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin SHOPFLOOR_HOME="$home" HOME="$home" RIG_EXEC=1 \
    SHOPFLOOR_DATABASE_URL="postgres://shopfloor:$db_password@db.shopfloor.test:5432/shopfloor" \
    NOTIFY_SOCKET="$state/$host.notify" WATCHDOG_USEC=2000000 \
    "$0" on-as "$state" "$host" "$app_user" "$bin/store-server" "${args[@]}" \
    </dev/null >"$state/$host.out" 2>"$state/$host.log" &
  echo $! >"$state/$host.pid"
  local deadline=$((SECONDS + 60))
  until grep -q "listening on" "$state/$host.out"; do
    kill -0 "$(cat "$state/$host.pid")" 2>/dev/null ||
      die "$host exited: $(tail -5 "$state/$host.log")"
    ((SECONDS < deadline)) || die "$host did not start listening in 60 s: $(tail -5 "$state/$host.log")"
    sleep 0.1
  done
}

stop_pidfile() {
  local file=$1 signal=${2:-TERM}
  [[ -f $file ]] || return 0
  local pid
  pid=$(cat "$file")
  kill "-$signal" "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$file"
}

start_lb() {
  local app_port=8080 backend_tls=
  if ((server_tls)); then
    app_port=8443
    backend_tls="ssl verify required ca-file $state/pki/ca.crt check-sni shopfloor.test sni str(shopfloor.test)"
  fi
  cat >"$state/haproxy.cfg" <<EOF
global
    # Two descriptors a connection, under the 20,000 this machine allows a process.
    maxconn 8000
    ssl-default-bind-options ssl-min-ver TLSv1.2
    log stderr format short local0 warning

defaults
    mode http
    log global
    timeout connect 1s
    timeout client 60s
    timeout server 30s
    timeout http-request 10s
    option forwardfor
    option redispatch
    retries 2

frontend https
    bind ${ip[lb]}:443 ssl crt $state/pki/lb.pem alpn http/1.1
    http-request set-header X-Forwarded-Proto https
    default_backend stores

backend stores
    balance roundrobin
    # A request is sent again to the other instance only when that cannot apply it twice:
    # a GET or HEAD, or a request carrying an Idempotency-Key (the server replays its
    # first answer). A connection that failed before the request was sent is always retried.
    retry-on conn-failure empty-response response-timeout 503
    http-request disable-l7-retry unless METH_GET || { req.hdr(idempotency-key) -m found }
    option httpchk GET /health
    http-check expect status 200
    default-server inter 300ms fall 2 rise 2 fastinter 200ms downinter 300ms
    server app1 ${ip[app1]}:$app_port check $backend_tls
    server app2 ${ip[app2]}:$app_port check $backend_tls
EOF
  chmod 0644 "$state/haproxy.cfg"
  haproxy -c -f "$state/haproxy.cfg" >"$state/haproxy.check" 2>&1 ||
    die "haproxy rejects its configuration: $(cat "$state/haproxy.check")"
  RIG_EXEC=1 setsid "$0" on-as "$state" lb haproxy haproxy -db -f "$state/haproxy.cfg" \
    </dev/null >"$state/haproxy.log" 2>&1 &
  echo $! >"$state/lb.pid"
}

cmd_up() {
  state=${1:?usage: rig.sh up STATE BIN}
  bin=${2:?usage: rig.sh up STATE BIN}
  shift 2
  password_cost=600000
  server_tls=0
  while (($#)); do
    case $1 in
      --password-cost) password_cost=$2; shift 2 ;;
      --server-tls) server_tls=1; shift ;;
      *) die "unknown option $1" ;;
    esac
  done
  bin=$(cd "$bin" && pwd)
  for app in store-server reservations; do
    [[ -x $bin/$app ]] || die "$bin/$app is not built"
  done
  mkdir -p "$state"
  state=$(cd "$state" && pwd)
  [[ ! -e $state/rig.env ]] || die "$state already holds a rig"
  chmod 0755 "$state"
  rig_id=$(( ($$ + RANDOM) % 100000 ))
  {
    echo "rig_id=$rig_id"
    echo "bin=$bin"
    echo "password_cost=$password_cost"
    echo "server_tls=$server_tls"
  } >"$state/rig.env"
  make_network
  make_pki
  install_ca
  write_hosts lb
  mkdir -p "$state/client"
  chown "$client_user" "$state/client"
  chmod 0700 "$state/client"
  start_db
  start_app 1
  start_app 2
  start_lb
  # Ready when the load balancer answers over TLS, checked with the client's trust store.
  local deadline=$((SECONDS + 30))
  until in_host cli "$client_user" curl -fsS --max-time 2 -o /dev/null https://shopfloor.test/health 2>/dev/null; do
    ((SECONDS < deadline)) || die "the load balancer does not answer https://shopfloor.test/health: $(tail -5 "$state/haproxy.log")"
    sleep 0.2
  done
  echo "rig: up in $state (id $rig_id): https://shopfloor.test through HAProxy to app1 and app2 on PostgreSQL"
}

cmd_down() {
  state=${1:?usage: rig.sh down STATE}
  [[ -f $state/rig.env ]] || return 0
  load "$state"
  for name in lb app1 app2 app1-notify app2-notify; do stop_pidfile "$state/$name.pid" TERM; done
  [[ -d $state/pg/data ]] && stop_db
  # Anything still running in the rig's namespaces was started by the rig: by pid.
  local h pids
  for h in "${hosts[@]}" sw; do
    if ip netns pids "$(ns "$h")" >/dev/null 2>&1; then
      pids=$(ip netns pids "$(ns "$h")" 2>/dev/null || true)
      for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
    fi
  done
  for h in "${hosts[@]}" sw; do ip netns del "$(ns "$h")" 2>/dev/null || true; done
  rm -rf "$state"
}

cmd_shape() {
  load "$1"
  local profile=$2 sw cli
  sw=$(ns sw)
  cli=$(ns cli)
  tc -n "$cli" qdisc del dev eth0 root 2>/dev/null || true
  tc -n "$sw" qdisc del dev cli root 2>/dev/null || true
  ip netns exec "$cli" iptables -F OUTPUT
  ip netns exec "$cli" iptables -F INPUT
  local down up loss=0
  case $profile in
    LAN) return 0 ;;
    3G) down=780kbit up=330kbit ;;
    Edge) down=240kbit up=200kbit ;;
    Lossy) down=780kbit up=330kbit loss=0.02 ;;
    Down)
      ip netns exec "$cli" iptables -A OUTPUT -o eth0 -j DROP
      ip netns exec "$cli" iptables -A INPUT -i eth0 -j DROP
      return 0
      ;;
    *) die "unknown profile $profile (LAN 3G Edge Lossy Down)" ;;
  esac
  # Egress of each end of the client's link: its uplink here, its downlink at the switch.
  tc -n "$cli" qdisc add dev eth0 root tbf rate "$up" burst 4kb latency 1s
  tc -n "$sw" qdisc add dev cli root tbf rate "$down" burst 4kb latency 1s
  if [[ $loss != 0 ]]; then
    ip netns exec "$cli" iptables -A OUTPUT -o eth0 -m statistic --mode random --probability "$loss" -j DROP
    ip netns exec "$cli" iptables -A INPUT -i eth0 -m statistic --mode random --probability "$loss" -j DROP
  fi
}

# delay_relay.py on the wan host, in the foreground (it stops when its parent does, so the
# caller runs this in the background and keeps running): shopfloor.test then names the wan
# host, and the relay forwards to the load balancer (lb) or straight to app1's TLS port.
cmd_relay() {
  load "$1"
  local delay=$2 target=${3:-lb} port=443
  shift 3
  [[ $target == app1 ]] && port=8443
  write_hosts wan
  RIG_EXEC=1 in_host wan nobody /usr/bin/python3 "$repo/Benchmarks/network/delay_relay.py" \
    --listen "${ip[wan]}:443" --to "${ip[$target]}:$port" --delay-ms "$delay" --lifetime 7200 "$@"
}

case ${1:-} in
  check) cmd_check ;;
  up) shift; cmd_up "$@" ;;
  down) shift; cmd_down "$@" ;;
  client)
    load "$2"
    shift 2
    in_host cli "$client_user" env -i PATH=/usr/bin:/bin HOME="$state/client" \
      SHOPFLOOR_HOME="$state/client" SHOPFLOOR_SERVER=https://shopfloor.test "$@"
    ;;
  client-untrusted)
    # As `client`, on a terminal where the rig's CA was never installed.
    load "$2"
    shift 2
    RIG_NO_CA=1 in_host cli "$client_user" env -i PATH=/usr/bin:/bin HOME="$state/client" \
      SHOPFLOOR_HOME="$state/client" SHOPFLOOR_SERVER=https://shopfloor.test "$@"
    ;;
  on)
    load "$2"
    host=$3
    shift 3
    ip netns exec "$(ns "$host")" "$@"
    ;;
  on-as)
    # Internal: exec CMD in HOST's namespace as USER with the rig's mounts (used for the
    # long-running services so that their pid is the service's).
    load "$2"
    host=$3 user=$4
    shift 4
    in_host "$host" "$user" "$@"
    ;;
  stop-app) load "$2"; stop_pidfile "$state/app$3.pid" "${4:-KILL}" ;;
  start-app) load "$2"; start_app "$3" ;;
  stop-db) load "$2"; stop_db ;;
  start-db) load "$2"; start_db ;;
  route) load "$2"; write_hosts "$3" ;;
  shape) shift; cmd_shape "$@" ;;
  relay) shift; cmd_relay "$@" ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    exit 64
    ;;
esac
