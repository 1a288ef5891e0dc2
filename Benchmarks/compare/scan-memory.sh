#!/usr/bin/env bash
# Peak memory of scan over six 10000 x 10000 RGB PNGs (a QR code scaled up), with --jobs 1
# and --jobs 6 under the default --memory-budget, and --jobs 6 with the budget lifted (what
# the jobs would cost without it), in one run. Fails when --jobs 6 takes more than 1.5 x the
# peak of --jobs 1 (issue 17's target).
# $1: the release bin path (make bench passes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: scan-memory.sh BIN_PATH}
[[ -x "$bin/scan" ]] || { echo "error: $bin/scan not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

qrencode -o "$work/code.png" -s 4 "shopfloor memory budget"
convert "$work/code.png" -depth 8 "gray:$work/code.gray"
size=$(identify -format "%w" "$work/code.png")
python3 - "$work" "$size" <<'PY'
import struct, sys, zlib
work, size = sys.argv[1], int(sys.argv[2])
src = open(f"{work}/code.gray", "rb").read()
n = 10000
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
cols = [min(size - 1, x * size // n) for x in range(n)]
comp, parts, last, row = zlib.compressobj(1), [], None, b""
for y in range(n):
    sy = min(size - 1, y * size // n)
    if sy != last:
        line = bytearray(1 + 3 * n)
        for x, sx in enumerate(cols):
            v = src[sy * size + sx]
            line[1 + 3 * x : 4 + 3 * x] = bytes((v, v, v))
        row, last = bytes(line), sy
    parts.append(comp.compress(row))
parts.append(comp.flush())
png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", n, n, 8, 2, 0, 0, 0))
png += chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b"")
for i in range(6):
    open(f"{work}/big{i}.png", "wb").write(png)
PY

peak() {  # prints "<max RSS KiB> <seconds>"
  /usr/bin/time -f "%M %e" "$bin/scan" -q "$@" "$work"/big{0..5}.png 2>&1 >/dev/null | tail -n 1
}
read -r one one_s < <(peak --jobs 1)
read -r six six_s < <(peak --jobs 6)
read -r unbounded unbounded_s < <(peak --jobs 6 --memory-budget 1048576)
ratio=$(python3 -c "print(f'{$six / $one:.2f}')")
printf 'scan, six 10000x10000 RGB PNGs: peak RSS --jobs 1 %d MiB (%ss), --jobs 6 %d MiB (%ss, %sx), --jobs 6 without a budget %d MiB (%ss)\n' \
  $((one / 1024)) "$one_s" $((six / 1024)) "$six_s" "$ratio" $((unbounded / 1024)) "$unbounded_s"
python3 -c "import sys; sys.exit(0 if $six <= 1.5 * $one else 1)" || {
  echo "error: --jobs 6 peaks at ${ratio}x --jobs 1, more than 1.5x" >&2
  exit 1
}
