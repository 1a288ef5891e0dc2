#!/usr/bin/env bash
# The suite's main job on its embedded defaults: run by `make demo` after `make build`.
# $1: the release bin path.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:?usage: demo.sh BIN_PATH}
corpus=${SHOPFLOOR_CORPUS:-$(cd .. && pwd)/shared/corpus}
ran=0

if [[ -x "$bin/scan" ]]; then
  echo "==> scan: every barcode in the corpus ($corpus/barcodes)"
  "$bin/scan" --recursive --quiet "$corpus/barcodes/qrcode-2" "$corpus/barcodes/ean13-1" \
    "$corpus/barcodes/datamatrix-1" | head -n 20 || true
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

if ((ran == 0)); then
  echo "No apps are built yet. The suite will run: scan (barcodes and text from images),"
  echo "suite-defaults (shared settings), reservations and catalog (store-server clients)."
fi
