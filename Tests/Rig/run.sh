#!/usr/bin/env bash
# The deployment tests (`make test` runs them after the Swift tests; issue 25):
#   install  make install's script into a temporary PREFIX and a DESTDIR: stripped binaries,
#            man pages, completions, the systemd unit (systemd-analyze verify), the sample
#            configuration, uninstall; the apps' libcurl; the installed server's OpenAPI
#            document with no build directory beside it
#   rig      scripts/rig.sh (root and network namespaces; skipped with the reason otherwise):
#            the client apps over https through HAProxy to two store-servers on PostgreSQL,
#            with the CA installed the Debian way; a terminal without it; one instance killed
#            mid-run; PostgreSQL restarted; then a second rig where store-server serves TLS
#            itself (--server-tls): https straight to it, its certificate renewed by SIGHUP
#
#   Tests/Rig/run.sh BIN_PATH [install|rig]...     (default: both)
#
# Prints one line per test and closes with "N passed, N failed, N skipped"; exits 1 when a
# test failed. RIG_KEEP=1 leaves a failed rig's directory (not its processes) for a look.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
bin=${1:?usage: Tests/Rig/run.sh BIN_PATH [install|rig]...}
bin=$(cd "$bin" && pwd)
shift
groups=("$@")
((${#groups[@]})) || groups=(install rig)
apps=(scan suite-defaults reservations catalog store-server)

passed=0
failed=0
skipped=0
work=$(mktemp -d "${TMPDIR:-/tmp}/shopfloor-rig-tests.XXXXXX")
chmod 0755 "$work"
rig_state=
tls_state=
cleanup() {
  local state
  for state in "$rig_state" "$tls_state"; do
    [[ -n $state ]] && bash "$repo/scripts/rig.sh" down "$state" >/dev/null 2>&1 || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# test "sentence" function: runs the function in a subshell, its output kept for a failure.
test_case() {
  local name=$1 fn=$2 log=$work/test.log start=$SECONDS status=0
  # Not in an `if`: there, bash ignores set -e inside the subshell too.
  (set -e; "$fn") >"$log" 2>&1
  status=$?
  if ((status == 0)); then
    passed=$((passed + 1))
    echo "✔ $name ($((SECONDS - start)) s)"
    # What a test measured, for the record.
    sed -n 's/^figure: /    /p' "$log"
  else
    failed=$((failed + 1))
    echo "✘ $name"
    sed 's/^/    /' "$log" | tail -40
  fi
}

skip_case() {
  skipped=$((skipped + 1))
  echo "- skipped: $1: $2"
}

now_ms() { echo $((${EPOCHREALTIME/./} / 1000)); }

fail() {
  echo "FAILED: $*" >&2
  return 1
}

need() {
  for app in "$@"; do
    [[ -x $bin/$app ]] || { echo "error: $bin/$app is not built" >&2; exit 1; }
  done
}

# MARK: install

t_install_layout() {
  local prefix=$work/prefix
  PREFIX=$prefix/usr SYSCONFDIR=$prefix/etc "$repo/scripts/install.sh" install "$bin"
  for app in "${apps[@]}"; do
    local installed=$prefix/usr/bin/$app
    [[ -x $installed ]] || fail "$installed missing"
    ! readelf -S "$installed" | grep -q '\.symtab' || fail "$installed is not stripped"
    [[ $(stat -c %s "$installed") -lt $(stat -c %s "$bin/$app") ]] || fail "$installed is no smaller than the build's"
    "$installed" --version >/dev/null || fail "$installed --version fails"
    [[ -s $prefix/usr/share/bash-completion/completions/$app ]] || fail "no bash completion for $app"
    [[ -s $prefix/usr/share/zsh/site-functions/_$app ]] || fail "no zsh completion for $app"
    [[ -s $prefix/usr/share/fish/vendor_completions.d/$app.fish ]] || fail "no fish completion for $app"
    [[ -s $prefix/usr/share/man/man1/$app.1 ]] || fail "no man page for $app"
    echo "figure: $app: $(stat -c %s "$installed") bytes installed ($(stat -c %s "$bin/$app") built)"
  done
  [[ $(stat -c %a "$prefix/etc/shopfloor/store-server.env") == 640 ]] || fail "the environment file is not 0640"
  cmp "$prefix/etc/shopfloor/store-server.env" "$repo/packaging/store-server.env"
}

t_man_pages() {
  local prefix=$work/prefix man
  for app in "${apps[@]}"; do
    man=$prefix/usr/share/man/man1/$app.1
    local warnings
    warnings=$(groff -man -Tutf8 -ww -z "$man" 2>&1)
    [[ -z $warnings ]] || fail "$man: groff warns: $warnings"
    # Every subcommand the parser knows is in the page, with its options.
    local sub
    for sub in $("$bin/$app" --experimental-dump-help | python3 -c '
import json, sys
c = json.load(sys.stdin)["command"]
print(" ".join(s["commandName"] for s in c.get("subcommands", []) if s["commandName"] != "help" and s.get("shouldDisplay", True)))'); do
      # roff spells a hyphen \-
      grep -qxF ".SS $(sed 's/-/\\-/g' <<<"$app $sub")" "$man" || fail "$man has no section for '$app $sub'"
    done
  done
  MANPATH=$prefix/usr/share/man man -P cat store-server 2>/dev/null | grep -q "store-server serve" ||
    fail "man store-server does not show 'store-server serve'"
}

t_completions() {
  local prefix=$work/prefix
  for app in "${apps[@]}"; do
    bash -c "source '$prefix/usr/share/bash-completion/completions/$app' && complete -p '$app'" >/dev/null ||
      fail "bash cannot load the completion of $app"
    if command -v zsh >/dev/null; then
      zsh -n "$prefix/usr/share/zsh/site-functions/_$app" || fail "zsh rejects _$app"
    fi
    if command -v fish >/dev/null; then
      fish -n "$prefix/usr/share/fish/vendor_completions.d/$app.fish" || fail "fish rejects $app.fish"
    fi
  done
  # The completion offers the subcommands.
  local words
  words=$(bash -c "
    source '$prefix/usr/share/bash-completion/completions/store-server'
    COMP_WORDS=(store-server se); COMP_CWORD=1; COMP_LINE='store-server se'; COMP_POINT=\${#COMP_LINE}
    _store-server 2>/dev/null || \"\$(complete -p store-server | sed -E 's/.* -F ([^ ]+) .*/\\1/')\"
    printf '%s\n' \"\${COMPREPLY[@]}\"")
  grep -qx serve <<<"$words" || grep -qx seed <<<"$words" || fail "bash completion of 'store-server se' offered: $words"
}

t_unit_verifies() {
  local prefix=$work/prefix unit output
  unit=$prefix/usr/lib/systemd/system/store-server.service
  grep -q "^ExecStart=$prefix/usr/bin/store-server serve" "$unit" || fail "ExecStart does not name the installed binary"
  grep -q "^EnvironmentFile=$prefix/etc/shopfloor/store-server.env" "$unit" || fail "EnvironmentFile is not under SYSCONFDIR"
  for setting in Type=notify WatchdogSec= LimitNOFILE= NoNewPrivileges=yes ProtectSystem=strict StateDirectoryMode=0700 UMask=0077; do
    grep -q "^$setting" "$unit" || fail "the unit has no $setting"
  done
  # Silent: any warning (an unknown setting, a missing binary or man page) fails.
  output=$(MANPATH=$prefix/usr/share/man systemd-analyze verify "$unit" 2>&1)
  [[ -z $output ]] || fail "systemd-analyze verify: $output"
  # And it does find mistakes (it is not silent about everything).
  sed 's/^Type=notify/Type=notifyy/' "$unit" >"$work/broken.service"
  output=$(MANPATH=$prefix/usr/share/man systemd-analyze verify "$work/broken.service" 2>&1)
  [[ -n $output ]] || fail "systemd-analyze verify accepted Type=notifyy"
  # The sample configuration names every variable the unit uses.
  local name
  for name in $(grep -o '\${\?[A-Z_]*}\?' "$unit" | tr -d '${}' | grep -v MAINPID | sort -u); do
    grep -q "^$name=" "$prefix/etc/shopfloor/store-server.env" || fail "the environment file does not set $name"
  done
  echo "figure: $(systemd-analyze security --offline=yes "$unit" 2>/dev/null | tail -1)"
}

t_installed_openapi() {
  # From a directory with no build products or resource bundle beside the binary.
  local prefix=$work/prefix home=$work/openapi-home out=$work/openapi.out
  mkdir -p -m 700 "$home"
  SHOPFLOOR_HOME=$home "$prefix/usr/bin/store-server" serve --port 0 --insecure-password-cost-for-tests --password-cost 1000 \
    --database "$home/store.sqlite" >"$out" 2>"$work/openapi.err" </dev/null &
  local pid=$! port=
  for _ in $(seq 1 300); do
    port=$(sed -n 's|^listening on http://.*:\([0-9]*\)$|\1|p' "$out")
    [[ -n $port ]] && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $port ]] || { kill $pid 2>/dev/null; fail "store-server did not start: $(cat "$work/openapi.err")"; }
  local status=0
  curl -fsS "http://127.0.0.1:$port/openapi.yaml" -o "$work/openapi.yaml" || status=$?
  kill -TERM $pid
  wait $pid || true
  ((status == 0)) || fail "GET /openapi.yaml failed ($status): $(tail -5 "$work/openapi.err")"
  cmp "$work/openapi.yaml" "$repo/Sources/StoreServer/openapi.yaml" ||
    fail "the installed server's document differs from Sources/StoreServer/openapi.yaml"
}

t_libcurl_openssl() {
  # The clients' libcurl is Debian's OpenSSL flavour (trusts /etc/ssl/certs), not NSS's.
  # The apps load libcurl on their first https request (Sources/CCurlLoader: dlopen of
  # libcurl.so.4 through the loader's cache), or at start when the link kept it as needed.
  for app in reservations catalog; do
    local libcurl
    libcurl=$(ldd "$bin/$app" | awk '/libcurl/ {print $1 " " $3}')
    if [[ -z $libcurl ]]; then
      grep -qa 'libcurl\.so\.4' "$bin/$app" || fail "$app neither links nor loads libcurl.so.4"
      libcurl=$(/sbin/ldconfig -p | awk '$1 == "libcurl.so.4" && /x86-64/ {print $1 " " $NF; exit}')
      [[ -n $libcurl ]] || fail "$app loads libcurl.so.4 on first use, and the loader finds none"
    fi
    ! grep -q nss <<<"$libcurl" || fail "$app loads the NSS libcurl: $libcurl"
    local path=${libcurl#* } package
    package=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null | cut -d: -f1)
    [[ $package == libcurl4 ]] || fail "$app's libcurl ($path) comes from '$package', not libcurl4 (OpenSSL)"
    echo "figure: $app: $libcurl ($package)"
  done
  [[ $(readlink -f /usr/lib/x86_64-linux-gnu/libcurl.so) != *nss* ]] ||
    fail "libcurl.so (what a build links) is the NSS flavour: make deps installs libcurl4-openssl-dev"
}

t_uninstall() {
  local prefix=$work/prefix
  echo "STORE_SERVER_PORT=9090" >>"$prefix/etc/shopfloor/store-server.env"
  PREFIX=$prefix/usr SYSCONFDIR=$prefix/etc "$repo/scripts/install.sh" uninstall
  [[ -z $(find "$prefix" -type f ! -path "$prefix/etc/shopfloor/store-server.env") ]] ||
    fail "uninstall left: $(find "$prefix" -type f)"
  [[ -f $prefix/etc/shopfloor/store-server.env ]] || fail "uninstall removed an edited configuration"
}

t_destdir() {
  local stage=$work/stage
  DESTDIR=$stage "$repo/scripts/install.sh" install "$bin" >/dev/null
  [[ -x $stage/usr/local/bin/store-server ]] || fail "nothing under DESTDIR/usr/local/bin"
  grep -q '^ExecStart=/usr/local/bin/store-server ' "$stage/usr/local/lib/systemd/system/store-server.service" ||
    fail "the staged unit does not name /usr/local/bin/store-server"
  [[ -f $stage/etc/shopfloor/store-server.env ]] || fail "no DESTDIR/etc/shopfloor/store-server.env"
  DESTDIR=$stage "$repo/scripts/install.sh" uninstall >/dev/null
  [[ -z $(find "$stage" -type f) ]] || fail "uninstall left: $(find "$stage" -type f)"
}

# systemd's notify protocol: READY=1 once listening, WATCHDOG=1 at half WATCHDOG_USEC,
# STOPPING=1 on SIGTERM; no pings when the watchdog is meant for another process.
t_notify() {
  local dir=$work/notify
  mkdir -p -m 700 "$dir"
  python3 "$repo/scripts/notify-listener.py" "$dir/notify" "$dir/notify.log" --lifetime 60 >"$dir/listener.out" &
  local listener=$!
  for _ in $(seq 1 100); do grep -q listening "$dir/listener.out" && break; sleep 0.05; done
  NOTIFY_SOCKET=$dir/notify WATCHDOG_USEC=1000000 SHOPFLOOR_HOME=$dir "$bin/store-server" serve \
    --port 0 --insecure-password-cost-for-tests --password-cost 1000 --database "$dir/store.sqlite" >"$dir/out" 2>"$dir/err" </dev/null &
  local server=$!
  # Counted from READY=1: a debug build on a busy machine takes its time to start.
  for _ in $(seq 1 600); do grep -q READY=1 "$dir/notify.log" && break; sleep 0.1; done
  sleep 2.6
  kill -TERM $server
  wait $server || true
  sleep 0.3
  kill -TERM $listener
  wait $listener || true
  cat "$dir/notify.log"
  head -1 "$dir/notify.log" | grep -q "READY=1" || fail "the first message is not READY=1"
  local pings
  pings=$(grep -c "WATCHDOG=1" "$dir/notify.log" || true)
  echo "figure: notify: READY=1, $pings watchdog pings in the 2.6 s after it at WATCHDOG_USEC=1000000, STOPPING=1"
  ((pings >= 3)) || fail "only $pings watchdog pings in 2.6 s (every 0.5 s expected)"
  tail -1 "$dir/notify.log" | grep -q "STOPPING=1" || fail "no STOPPING=1 at the end"
  # A watchdog for another process (WATCHDOG_PID) is not ours to ping.
  : >"$dir/notify.log"
  : >"$dir/listener.out"
  python3 "$repo/scripts/notify-listener.py" "$dir/notify" "$dir/notify.log" --lifetime 60 >"$dir/listener.out" &
  listener=$!
  for _ in $(seq 1 100); do grep -q listening "$dir/listener.out" && break; sleep 0.05; done
  NOTIFY_SOCKET=$dir/notify WATCHDOG_USEC=1000000 WATCHDOG_PID=1 SHOPFLOOR_HOME=$dir "$bin/store-server" serve \
    --port 0 --insecure-password-cost-for-tests --password-cost 1000 --database "$dir/store.sqlite" >"$dir/out" 2>"$dir/err" </dev/null &
  server=$!
  for _ in $(seq 1 600); do grep -q READY=1 "$dir/notify.log" && break; sleep 0.1; done
  sleep 1.6
  kill -TERM $server
  wait $server || true
  kill -TERM $listener
  wait $listener || true
  grep -q "READY=1" "$dir/notify.log" || fail "no READY=1 with another process's watchdog"
  ! grep -q "WATCHDOG=1" "$dir/notify.log" || fail "pinged a watchdog meant for another process"
}

# An unknown database URL scheme is a usage error (exit 64), never a SQLite file named after it.
t_unknown_scheme() {
  local dir=$work/scheme status=0 err
  mkdir -p -m 700 "$dir"
  cd "$dir"
  err=$(SHOPFLOOR_HOME=$dir "$bin/store-server" migrate --database mysql://x 2>&1) || status=$?
  echo "$err"
  ((status == 64)) || fail "--database mysql://x: exit $status, not 64"
  grep -q "mysql://" <<<"$err" || fail "the error does not name the scheme"
  [[ ! -e $dir/mysql: ]] || fail "a file named after the URL was created"
  status=0
  err=$(SHOPFLOOR_HOME=$dir SHOPFLOOR_DATABASE_URL=redis://cache "$bin/store-server" migrate 2>&1) || status=$?
  ((status == 64)) || fail "SHOPFLOOR_DATABASE_URL=redis://cache: exit $status, not 64"
  grep -q "SHOPFLOOR_DATABASE_URL" <<<"$err" || fail "the error does not name SHOPFLOOR_DATABASE_URL: $err"
}

# The SQLite database the server creates is private: its directory 0700, its files 0600,
# even under a umask of 022.
t_database_modes() {
  local dir=$work/modes
  mkdir -p -m 700 "$dir"
  (
    umask 022
    SHOPFLOOR_HOME=$dir/home "$bin/store-server" serve --port 0 --insecure-password-cost-for-tests --password-cost 1000 --demo-data \
      >"$dir/out" 2>"$dir/err" </dev/null &
    server=$!
    for _ in $(seq 1 600); do grep -q "listening on" "$dir/out" && break; sleep 0.1; done
    kill -TERM $server
    wait $server || true
  )
  local file mode
  mode=$(stat -c %a "$dir/home/server")
  echo "figure: database directory $mode, files: $(cd "$dir/home/server" && stat -c '%n %a' * | tr '\n' ' ')"
  [[ $mode == 700 ]] || fail "the database directory is $mode, not 700"
  for file in "$dir/home/server"/*; do
    mode=$(stat -c %a "$file")
    [[ $mode == 600 ]] || fail "$(basename "$file") is $mode, not 600"
  done
  [[ -f $dir/home/server/store.sqlite ]] || fail "no store.sqlite"
}

run_install_tests() {
  need "${apps[@]}"
  test_case "install: stripped binaries, completions, man pages and the sample configuration" t_install_layout
  test_case "install: man pages render without warnings and show every subcommand" t_man_pages
  test_case "install: bash completions load and complete subcommands (zsh, fish where installed)" t_completions
  test_case "install: the store-server unit passes systemd-analyze verify" t_unit_verifies
  test_case "install: an installed store-server serves its OpenAPI document" t_installed_openapi
  test_case "install: the client apps load Debian's OpenSSL libcurl" t_libcurl_openssl
  test_case "install: uninstall removes every file and keeps an edited configuration" t_uninstall
  test_case "install: DESTDIR stages the files for PREFIX" t_destdir
  test_case "server: READY=1, watchdog pings and STOPPING=1 reach NOTIFY_SOCKET" t_notify
  test_case "server: an unknown database URL scheme is refused with exit 64" t_unknown_scheme
  test_case "server: the SQLite database it creates is 0600 in a 0700 directory" t_database_modes
}

# MARK: rig

rig() { bash "$repo/scripts/rig.sh" "$@"; }
client() { rig client "$rig_state" "$@"; }

t_rig_up() {
  rig up "$rig_state" "$bin" --password-cost 1000
  client python3 "$repo/Benchmarks/network/flows.py" prepare --bin "$bin" \
    --server https://shopfloor.test --home "$rig_state/client" --checkins 12 \
    --out "$rig_state/client/pool.json"
}

pool() { client python3 -c "import json,sys; p=json.load(open('$rig_state/client/pool.json')); print(eval(sys.argv[1]))" "$1"; }

t_rig_flows() {
  local code gtin checkin
  code=$(pool 'p["show"][0]')
  checkin=$(pool 'p["checkin"][0]["code"]')
  gtin=$(pool 'p["gtins"][0]')
  client "$bin/reservations" list --date today --json >"$work/list.json"
  client "$bin/reservations" show "$code" --json | grep -q "\"confirmationCode\" *: *\"$code\""
  client "$bin/reservations" search "$(pool 'p["search"]')" --json | grep -q '"items"'
  client "$bin/reservations" check-in "$checkin" --json | grep -q '"checkedIn"'
  client "$bin/catalog" search "$(pool 'p["productSearch"]')" --json | grep -q '"items"'
  client "$bin/catalog" cache clear >/dev/null
  client "$bin/catalog" show "$gtin" --json --image-save "$rig_state/client/image.png" >/dev/null
  client python3 -c "import sys; d=open(sys.argv[1],'rb').read(8); sys.exit(d != b'\x89PNG\r\n\x1a\n')" "$rig_state/client/image.png" ||
    fail "the saved image is not a PNG"
  # The requests crossed HAProxy: both instances answered some.
  grep -q "GET /v1/" "$rig_state/app1.log" "$rig_state/app2.log" 2>/dev/null || true
}

t_rig_untrusted() {
  local status=0 err
  # A new terminal (its own home) signs in without the CA installed.
  err=$(printf 'shopfloor-demo\n' | rig client-untrusted "$rig_state" env SHOPFLOOR_HOME="$rig_state/client/untrusted" \
    "$bin/reservations" login --server https://shopfloor.test --user demo --password-stdin 2>&1 >/dev/null) || status=$?
  ((status != 0)) || fail "a terminal without the CA signed in"
  echo "figure: without the CA: exit $status: $err"
  grep -qiE "certificate|TLS|SSL|trust" <<<"$err" || fail "the error does not say it is the certificate: $err"
  # TLS below 1.2 is refused by the load balancer.
  ! client curl -sS --tls-max 1.1 -o /dev/null https://shopfloor.test/health 2>/dev/null ||
    fail "the load balancer accepted TLS 1.1"
}

# Reads in a loop while app1 is killed: not one command may fail.
t_rig_kill_instance() {
  local code
  code=$(pool 'p["show"][1]')
  client bash -c '
    bin=$1 code=$2 failures=0 runs=0
    end=$((SECONDS + 8))
    while ((SECONDS < end)); do
      runs=$((runs + 1))
      "$bin/reservations" show "$code" --json >/dev/null 2>>"$HOME/kill.err" || failures=$((failures + 1))
      "$bin/catalog" search a --json >/dev/null 2>>"$HOME/kill.err" || failures=$((failures + 1))
    done
    echo "figure: instance killed: $((runs * 2)) commands in 8 s, $failures failed"
    ((failures == 0))' rig "$bin" "$code" &
  local loop=$!
  sleep 2
  rig stop-app "$rig_state" 1 KILL
  local status=0
  wait $loop || status=$?
  ((status == 0)) || fail "commands failed while app1 was killed: $(client cat "$rig_state/client/kill.err" | tail -5)"
  rig start-app "$rig_state" 1
}

# Waits until app1 and app2 answer /health with 200 straight (from the load balancer's
# host); fails saying which does not serve, and WHEN, 15 s after SINCE (ms).
both_serve() {
  local since=$1 when=$2 address
  for address in 10.204.0.21 10.204.0.22; do
    until rig on "$rig_state" lb curl -fsS -o /dev/null --max-time 1 "http://$address:8080/health" 2>/dev/null; do
      (($(now_ms) - since < 15000)) || fail "$address does not serve $when"
      sleep 0.1
    done
  done
}

t_rig_postgres_restart() {
  grep -q "READY=1" "$rig_state/app1.notify.log" || fail "app1 never said READY=1"
  # Both instances serve before the database goes (app1 was started again just now).
  both_serve "$(now_ms)" "before the test"
  # Whatever fails below, the database comes back for the tests after this one (the test
  # runs in a subshell of its own: this trap ends with it).
  db_down=1
  trap '((db_down)) && rig start-db "$rig_state" >/dev/null 2>&1' EXIT
  rig stop-db "$rig_state"
  local stopped
  stopped=$(python3 -c 'import time; print("%.3f" % time.monotonic())')
  # While the database is away the instances say so (503), and nothing hangs: each answers
  # within its 1 s limit on the database, HAProxy's retries included.
  local status answer
  answer=$(client curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 https://shopfloor.test/health || true)
  status=${answer%% *}
  echo "figure: /health while PostgreSQL is down: $status in ${answer#* } s"
  if [[ $status != 503 ]]; then
    local host
    for host in app1 app2; do
      echo "$host, straight: $(rig on "$rig_state" lb curl -s -o /dev/null -w '%{http_code} %{time_total}' --max-time 5 "http://${host/app/10.204.0.2}:8080/health")"
      tail -5 "$rig_state/$host.log" | cut -c1-300 || true
    done
    tail -10 "$rig_state/haproxy.log" | cut -c1-300 || true
    fail "health answered $status with the database down"
  fi
  sleep 4
  # No watchdog ping while the database is away (after the ping in flight at the stop).
  local during
  during=$(awk -v from="$stopped" '$1 > from + 1.5 && /WATCHDOG=1/' "$rig_state/app1.notify.log" | wc -l)
  echo "figure: watchdog pings from app1 while PostgreSQL was down (after 1.5 s): $during"
  ((during == 0)) || fail "app1 pinged the watchdog $during times without its database"
  rig start-db "$rig_state"
  db_down=0
  local back ms
  back=$(now_ms)
  both_serve "$back" "15 s after PostgreSQL is back"
  ms=$(($(now_ms) - back))
  echo "figure: both instances serve again $ms ms after PostgreSQL is back"
  ((ms <= 5000)) || fail "recovery took $ms ms (target ≤ 5000 ms)"
  sleep 2.5
  local restarted
  restarted=$(python3 -c 'import time; print("%.3f" % (time.monotonic() - 2.5))')
  awk -v from="$restarted" '$1 > from && /WATCHDOG=1/' "$rig_state/app1.notify.log" | grep -q . ||
    fail "app1 does not ping the watchdog again once PostgreSQL is back"
  client "$bin/reservations" show "$(pool 'p["show"][2]')" --json >/dev/null
}

# A PostgreSQL URL to another host with no sslmode requires TLS: against a server that
# declines TLS, store-server stops before it sends its startup message (user name) or
# password. The stand-in answers the SSLRequest with 'N' and records what follows.
t_rig_postgres_requires_tls() {
  cat >"$rig_state/no-tls-postgres.py" <<'PY'
import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("10.204.0.30", 5433))
server.listen(4)
server.settimeout(20)
log = open(sys.argv[1], "w", buffering=1)
try:
    while True:
        connection, _ = server.accept()
        connection.settimeout(3)
        request = connection.recv(8)
        log.write("request %s\n" % request.hex())
        connection.sendall(b"N")
        try:
            rest = connection.recv(4096)
        except socket.timeout:
            rest = b""
        log.write("after %d bytes %s\n" % (len(rest), rest[:64]))
        connection.close()
except socket.timeout:
    pass
PY
  rig on "$rig_state" db /usr/bin/python3 "$rig_state/no-tls-postgres.py" "$rig_state/no-tls.log" &
  local fake=$! status=0 err
  sleep 0.5
  err=$(rig on "$rig_state" app2 env SHOPFLOOR_HOME="$rig_state" \
    SHOPFLOOR_DATABASE_URL="postgres://shopfloor:secret-password@10.204.0.30:5433/shopfloor" \
    timeout 30 "$bin/store-server" migrate 2>&1) || status=$?
  kill $fake 2>/dev/null || true
  wait $fake 2>/dev/null || true
  cat "$rig_state/no-tls.log"
  echo "figure: PostgreSQL without TLS: store-server exit $status: ${err:0:200}"
  ((status != 0)) || fail "store-server used a PostgreSQL server that declined TLS"
  grep -q "^request 0000000804d2162f" "$rig_state/no-tls.log" || fail "no SSLRequest was sent first"
  ! grep -q "^after [1-9]" "$rig_state/no-tls.log" || fail "store-server went on in plain text after the server declined TLS"
  ! grep -q "secret-password" <<<"$err" || fail "the error shows the password"
  grep -q "does not offer TLS" <<<"$err" || fail "the error does not say the server offers no TLS: $err"
}

# A PostgreSQL failure says what is wrong, without the password.
t_rig_postgres_errors() {
  local url=postgres://shopfloor:rig-db-password@db.shopfloor.test case
  for case in "wrong-password|postgres://shopfloor:not-the-password@db.shopfloor.test:5432/shopfloor|password for the URL's user is wrong" \
    "no-database|$url:5432/nothere|no such database" \
    "unreachable|$url:5439/shopfloor|cannot be reached"; do
    IFS='|' read -r name database expected <<<"$case"
    local status=0 err
    # On app2's host as its service user, with the CA and hosts file the instances have.
    err=$(rig on-as "$rig_state" app2 daemon env SHOPFLOOR_HOME="$rig_state/app2" \
      SHOPFLOOR_DATABASE_URL="$database" timeout 30 "$bin/store-server" migrate 2>&1) || status=$?
    echo "figure: $name: exit $status: ${err:0:220}"
    ((status == 1)) || fail "$name: exit $status, not 1"
    grep -q "$expected" <<<"$err" || fail "$name: the error does not say '$expected': $err"
    ! grep -qE "not-the-password|rig-db-password" <<<"$err" || fail "$name: the error shows the password"
  done
}

# store-server terminating TLS itself (--server-tls: 8443, no plain listener, HAProxy speaking
# TLS to it): the client straight to app1 over https, then a renewed certificate reloaded by
# SIGHUP without a restart.
t_rig_server_tls() {
  local pki=$tls_state/pki
  tls_client() { rig client "$tls_state" "$@"; }
  rig up "$tls_state" "$bin" --password-cost 1000 --server-tls
  grep -q "^listening on https://10.204.0.21:8443" "$tls_state/app1.out" ||
    fail "app1 did not announce https: $(head -1 "$tls_state/app1.out")"
  rig route "$tls_state" app1
  tls_client python3 "$repo/Benchmarks/network/flows.py" prepare --bin "$bin" \
    --server https://shopfloor.test:8443 --home "$tls_state/client" --checkins 2 \
    --out "$tls_state/client/pool.json"
  local checkin
  checkin=$(tls_client python3 -c "import json; print(json.load(open('$tls_state/client/pool.json'))['checkin'][0]['code'])")
  # A signed POST: the server counts its own TLS connections as https for the signature.
  tls_client env SHOPFLOOR_SERVER=https://shopfloor.test:8443 "$bin/reservations" check-in "$checkin" --json |
    grep -q '"checkedIn"' || fail "check-in straight to app1 over TLS failed"
  # Plain http to the TLS port gets no HTTP answer.
  if tls_client curl -sS -m 5 -o /dev/null -w '%{http_code}' http://shopfloor.test:8443/health 2>/dev/null | grep -q '^[1-5]'; then
    fail "plain http answered on the TLS port"
  fi
  # Renew app1's certificate (a new serial from the same CA) and reload it with SIGHUP.
  local before after
  serial() {
    tls_client bash -c 'openssl s_client -connect shopfloor.test:8443 -servername shopfloor.test -verify_return_error </dev/null 2>/dev/null | openssl x509 -noout -serial'
  }
  before=$(serial)
  [[ -n $before ]] || fail "no certificate verified from app1 before the reload"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=app1.shopfloor.test \
    -keyout "$pki/renewed.key" -out "$pki/renewed.csr" 2>/dev/null
  openssl x509 -req -in "$pki/renewed.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -out "$pki/renewed.crt" 2>/dev/null \
    -extfile <(printf 'subjectAltName=DNS:app1.shopfloor.test,DNS:shopfloor.test,IP:10.204.0.21\nextendedKeyUsage=serverAuth\n')
  # Written into the existing files: they keep their owner (the service user) and mode.
  cat "$pki/renewed.crt" >"$pki/app1.crt"
  cat "$pki/renewed.key" >"$pki/app1.key"
  kill -HUP "$(cat "$tls_state/app1.pid")"
  local deadline=$((SECONDS + 20))
  until grep -q "TLS certificate reloaded" "$tls_state/app1.log"; do
    ((SECONDS < deadline)) || fail "no reload logged: $(tail -3 "$tls_state/app1.log")"
    sleep 0.1
  done
  after=$(serial)
  [[ -n $after && $after != "$before" ]] || fail "app1 still serves $before after the reload ($after)"
  echo "figure: certificate reloaded on SIGHUP: $before -> $after, no restart"
  kill -0 "$(cat "$tls_state/app1.pid")" || fail "app1 exited on SIGHUP"
}

run_rig_tests() {
  need store-server reservations catalog
  local reason
  if ! reason=$(bash "$repo/scripts/rig.sh" check 2>&1); then
    skip_case "rig" "$reason"
    return
  fi
  rig_state=$work/rig
  test_case "rig: up: HAProxy with the private CA, two store-servers on PostgreSQL over TLS" t_rig_up
  if [[ ! -f $rig_state/client/pool.json ]]; then
    skip_case "rig flows" "the rig did not come up"
    return
  fi
  test_case "rig: reservations and catalog sign in, list, show, check in and fetch images over https" t_rig_flows
  test_case "rig: a terminal without the store's CA is refused, and TLS below 1.2 too" t_rig_untrusted
  test_case "rig: one instance killed mid-run, the flows continue through the other" t_rig_kill_instance
  test_case "rig: PostgreSQL restarted, both instances serve again within 5 s" t_rig_postgres_restart
  test_case "rig: PostgreSQL to another host requires TLS unless the URL says otherwise" t_rig_postgres_requires_tls
  test_case "rig: PostgreSQL errors say what is wrong (password, database, unreachable), no secret" t_rig_postgres_errors
  bash "$repo/scripts/rig.sh" down "$rig_state" >/dev/null 2>&1 || true
  tls_state=$work/rig-tls
  test_case "rig: store-server serves TLS itself: https straight to it, SIGHUP reload" t_rig_server_tls
  if ((failed)) && [[ ${RIG_KEEP:-0} == 1 ]]; then
    cp -a "$rig_state" "${TMPDIR:-/tmp}/shopfloor-rig-kept.$$" 2>/dev/null &&
      echo "rig directory kept in ${TMPDIR:-/tmp}/shopfloor-rig-kept.$$"
  fi
}

for group in "${groups[@]}"; do
  case $group in
    install) run_install_tests ;;
    rig) run_rig_tests ;;
    *) echo "error: unknown test group '$group' (install, rig)" >&2; exit 64 ;;
  esac
done
echo "deployment: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
