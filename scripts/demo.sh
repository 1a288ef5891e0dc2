#!/usr/bin/env bash
# The suite's main job on its embedded defaults: run by `make demo` after `make build`.
# $1: the release bin path.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: demo.sh BIN_PATH}
corpus=${SHOPFLOOR_CORPUS:-$(cd .. && pwd)/shared/corpus}
ran=0

if [[ -x "$bin/scan" ]]; then
  echo "==> scan: every image of the barcode corpus ($corpus/barcodes), both cores"
  out=$(mktemp); status=0
  start=$EPOCHREALTIME
  "$bin/scan" --recursive --quiet --format jsonl "$corpus/barcodes" >"$out" || status=$?
  end=$EPOCHREALTIME
  python3 - "$out" <<'PY'
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
for r in records[:12]:
    for s in r["symbols"][:1]:
        print(f'{r["file"].split("/barcodes/")[-1]:32} {s["format"]:11} {s["text"][:40]!r}')
hits = sum(1 for r in records if r["symbols"])
print(f"... {hits} of {len(records)} images held a code "
      f"({sum(len(r['symbols']) for r in records)} symbols)")
PY
  echo "    in $(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }') s;" \
    "exit $status (4: some images, like falsepositives-1/, hold no code)"
  rm -f "$out"
  if command -v convert >/dev/null; then
    label=$(mktemp --suffix=.png)
    convert -density 75 -units PixelsPerInch -pointsize 11 -background white -fill black \
      "label:IMEI 490154203237518\nSN C02XK1Q8JG5H" -bordercolor white -border 12 "$label"
    echo "==> scan --text: a 75 dpi label, IMEI validated (Luhn)"
    "$bin/scan" --text --validate imei --format jsonl --quiet "$label" || true
    rm -f "$label"
  fi
  ran=1
fi

if [[ -x "$bin/suite-defaults" ]]; then
  home=$(mktemp -d); trap 'rm -rf "$home"' EXIT
  echo "==> suite-defaults: shared settings in a throwaway container ($home)"
  export SHOPFLOOR_HOME=$home
  "$bin/suite-defaults" write storeID -string R042
  "$bin/suite-defaults" increment launches
  "$bin/suite-defaults" increment launches
  "$bin/suite-defaults" export - --json
  ran=1
fi

if [[ -x "$bin/reservations" && -x "$bin/store-server" ]]; then
  work=$(mktemp -d); server_pid=
  stop_server() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
      kill -TERM "$server_pid"; wait "$server_pid" || true
    fi
    server_pid=
  }
  trap 'stop_server; rm -rf "$work" ${home:+"$home"}' EXIT
  echo "==> store-server: demo data on a free port, database and SHOPFLOOR_HOME in $work"
  "$bin/store-server" serve --port 0 --demo-data --database "$work/store.sqlite" \
    >"$work/server.out" 2>"$work/server.log" &
  server_pid=$!
  url=
  for _ in $(seq 1 1200); do
    url=$(sed -n 's/^listening on //p' "$work/server.out")
    [[ -n "$url" ]] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/server.log" >&2; exit 1; }
    sleep 0.1
  done
  [[ -n "$url" ]] || { echo "demo: store-server did not start" >&2; exit 1; }
  echo "    listening on $url"
  export SHOPFLOOR_HOME=$work/home
  mkdir -m 700 "$SHOPFLOOR_HOME"
  berlin=5D0F1C2A-0004-4A00-8000-000000000004
  echo "==> reservations login (password on stdin; every suite app now uses this sign-in)"
  printf '%s' shopfloor-demo | "$bin/reservations" login --server "$url" --user demo --password-stdin
  "$bin/reservations" whoami
  echo "==> reservations config --store Perth (flags from the server: check-in off there)"
  "$bin/reservations" config --store 5D0F1C2A-0006-4A00-8000-000000000006 --json |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("   ", r["store"]["name"], r["flags"], "updateRequired:", r["updateRequired"])'
  echo "==> reservations list --date today --store $berlin (Berlin, times in store time)"
  today=$("$bin/reservations" list --date today --store "$berlin" --json)
  python3 - "$today" <<'PY'
import json, sys
from datetime import datetime
from zoneinfo import ZoneInfo
page = json.loads(sys.argv[1])
for r in page["items"][:8]:
    zone = ZoneInfo(r["store"]["timeZone"])
    local = datetime.fromisoformat(r["startsAt"].replace("Z", "+00:00")).astimezone(zone)
    name = f'{r["customer"]["givenName"]} {r["customer"]["familyName"]}'
    print(f'    {r["confirmationCode"]}  {local:%H:%M} {local.tzname():5} {r["status"]:10} '
          f'{name:20} {r["topic"]}')
print(f'    ... {len(page["items"])} reservations today (JSON keys: {", ".join(sorted(page))})')
PY
  code=$(python3 -c 'import json,sys; items=[r for r in json.loads(sys.argv[1])["items"] if r["status"]=="confirmed"]; print(items[0]["confirmationCode"] if items else "")' "$today")
  if [[ -z "$code" ]]; then
    code=$("$bin/reservations" search e --status confirmed --store "$berlin" --json |
      python3 -c 'import json,sys; print(json.load(sys.stdin)["items"][0]["confirmationCode"])')
  fi
  qrencode -o "$work/pass.png" -s 6 "shopfloor://reservations/$code"
  echo "==> reservations show --from-image pass.png (a QR pass for $code, read by scan)"
  "$bin/reservations" show --from-image "$work/pass.png" --json >"$work/shown.json"
  python3 - "$work/shown.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r["customer"]
print(f'{r["confirmationCode"]} {r["status"]}: {c["givenName"]} {c["familyName"]}, {r["topic"]},',
      f'{r["startsAt"]} at {r["store"]["name"]} (version {r["version"]})')
PY
  if [[ -x "$bin/catalog" ]]; then
    echo "==> catalog search kettle, then show one product (same sign-in; its image into the"
    echo "    suite's shared image cache; drawn in colour when stdout is a terminal)"
    "$bin/catalog" search kettle --limit 5 --json >"$work/products.json"
    gtin=$(python3 - "$work/products.json" <<'PY'
import json, sys
page = json.load(open(sys.argv[1]))
for p in page["items"]:
    print(f'    {p["gtin"]}  {p["title"]:28} {p["brand"] or "":14} {p["price"]["amount"]:>8} {p["price"]["currency"]}',
          file=sys.stderr)
print(page["items"][0]["gtin"] if page["items"] else "")
PY
)
    if [[ -n "$gtin" ]]; then
      "$bin/catalog" show "$gtin" --image-save "$work/product.png" --image-width 32
      echo "    saved $(stat -c %s "$work/product.png") bytes of PNG;" \
        "cache: $("$bin/catalog" cache stats --json)"
    fi
  fi
  echo "==> reservations check-in $code, twice (the second only says it was already done)"
  "$bin/reservations" check-in "$code" >/dev/null
  "$bin/reservations" check-in "$code" >/dev/null
  echo "==> server stopped: show $code answers from the data kept for offline use"
  stop_server
  "$bin/reservations" show "$code" --json >/dev/null
  "$bin/reservations" logout
  ran=1
elif [[ -x "$bin/store-server" ]]; then
  home=${SHOPFLOOR_HOME:-}
  if [[ -z "$home" || "$home" != /tmp/* ]]; then home=$(mktemp -d); trap 'rm -rf "$home"' EXIT; fi
  echo "==> store-server: demo data in SQLite ($home/server/store.sqlite)"
  out=$(mktemp)
  SHOPFLOOR_HOME=$home "$bin/store-server" serve --port 0 --demo-data --quiet >"$out" &
  server=$!
  for _ in $(seq 1 600); do [[ -s "$out" ]] && break; sleep 0.1; done
  head -1 "$out"
  url=$(head -1 "$out" | sed 's/^listening on //')
  echo "GET /health: $(curl -s "$url/health")"
  echo "GET /v1/config/client (Perth: check-in off, AU notice):"
  curl -s "$url/v1/config/client?app=reservations&version=0.1.0&store=5D0F1C2A-0006-4A00-8000-000000000006" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("   ", r["store"]["name"], r["flags"], "updateRequired:", r["updateRequired"])'
  echo "POST /v1/auth/token (demo / shopfloor-demo): $(curl -s -d 'grant_type=password&username=demo&password=shopfloor-demo' "$url/v1/auth/token" |
    python3 -c 'import json,sys; r=json.load(sys.stdin); print("token for", r["expires_in"], "s, signing key", r["signing_key_id"])')"
  echo "GET /v1/reservations unsigned: $(curl -s -o /dev/null -w '%{http_code}' "$url/v1/reservations") (every other route needs a signed request)"
  if [[ "${SHOPFLOOR_DEMO_SERVE:-0}" == 1 ]]; then
    echo "serving at $url until Ctrl-C"; wait "$server" || true
  else
    kill -TERM "$server"; wait "$server" || echo "    stopped (exit $?: 143 = SIGTERM after draining)"
  fi
  rm -f "$out"
  ran=1
fi

if ((ran == 0)); then
  echo "No apps are built yet. The suite will run: scan (barcodes and text from images),"
  echo "suite-defaults (shared settings), reservations and catalog (store-server clients)."
fi
