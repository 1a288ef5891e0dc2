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

if [[ -x "$bin/store-server" ]]; then
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
