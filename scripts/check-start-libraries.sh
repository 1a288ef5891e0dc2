#!/usr/bin/env bash
# What the shipped apps load at start (their ELF NEEDED entries), checked after every release
# build: libcurl is loaded on the first https request (Sources/CCurlLoader), and only `scan`
# links the barcode and OCR libraries (Tesseract itself is opened on first use; libzbar is
# linked from its static archive, so no app loads the shared one). A link line
# that lets a system -L reach libcurl before the loader's linker script (libpng16.pc did)
# would put libcurl back at every start, silently; this makes it an error.
# $1: the release bin path. Exit 1 naming the app and the library.
set -euo pipefail
bin=${1:?usage: check-start-libraries.sh BIN_PATH}
status=0
for app in scan suite-defaults reservations catalog store-server; do
  [[ -x $bin/$app ]] || continue
  needed=$(readelf -d "$bin/$app" | awk '/NEEDED/ {gsub(/[][]/, "", $5); print $5}')
  # libzbar is linked from its static archive: the shared one would bring X11 and v4l.
  forbidden=(libcurl libtesseract libzbar libX11 libv4l2)
  [[ $app == scan ]] || forbidden+=(libdbus-1 liblept libjpeg libtiff libgif)
  for library in "${forbidden[@]}"; do
    if grep -q "^$library\." <<<"$needed"; then
      echo "error: $bin/$app loads $library at start (NEEDED: $(tr '\n' ' ' <<<"$needed"))" >&2
      status=1
    fi
  done
done
exit $status
