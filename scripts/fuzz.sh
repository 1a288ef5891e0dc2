#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer harnesses of Fuzz/ (SharedDefaults' store decoder and JSON
# parser; Scanner's image decoders) with the toolchain's clang and swiftc, seeds them with
# files made by the real tools, and runs each for FUZZ_SECONDS (default 60). Fails on the first
# crash, sanitizer report or broken invariant; the input that caused it is left in .build-fuzz/.
# The corpora grow in .build-fuzz/corpus across runs.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-60}
out=.build-fuzz
mkdir -p "$out"/seeds/{store,image} "$out"/corpus/{store,image}

sd=Packages/SharedDefaults/Sources/SharedDefaults
echo "==> building the store fuzzer"
# (gold's "Cannot export local symbol" notes about ASan's own helpers are noise.)
swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name StoreFuzz \
  Fuzz/StoreFuzz.swift "$sd"/DefaultsValue.swift "$sd"/DefaultsValue+JSON.swift \
  "$sd"/DefaultsValue+PropertyList.swift "$sd"/DefaultsLimits.swift "$sd"/StoreFormat.swift \
  -o "$out"/store-fuzz 2>&1 | { grep -v "Cannot export local symbol" || true; }

ci=Packages/Scanner/Sources/CImageIO
echo "==> building the image fuzzer"
clang -fsanitize=fuzzer,address -O1 -g -I"$ci"/include Fuzz/ImageFuzz.c "$ci"/*.c \
  -o "$out"/image-fuzz -llept -lpng16 -ljpeg -ltiff -lgif

echo "==> seeds"
# Store payloads (mode 0: checksums forged by the harness), whole files (mode 1), JSON (mode 2).
printf '\x00\x09\x01\x00\x00\x00\x01\x00\x00\x00a\x02\x2a\x00\x00\x00\x00\x00\x00\x00' > "$out"/seeds/store/int
printf '\x00\x09\x02\x00\x00\x00\x01\x00\x00\x00a\x08\x02\x00\x00\x00\x05\x01\x01\x00\x00\x00x\x01\x00\x00\x00b\x06\x00\x00\x00\x00\x00\x00\xf0\x3f' > "$out"/seeds/store/nested
printf '\x02{"a":[1,2.5,-3e2,true,"\\u00e9"],"b":{"c":[[{"d":"x"}]]}}' > "$out"/seeds/store/json
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
qrencode -o "$tmp"/a.png -s 1 "fuzz a"
qrencode -o "$tmp"/b.png -s 1 "fuzz b"
cp "$tmp"/a.png "$out"/seeds/image/a.png
convert "$tmp"/a.png "$out"/seeds/image/a.jpg
convert "$tmp"/a.png -colorspace CMYK "$out"/seeds/image/cmyk.jpg
convert "$tmp"/a.png "$tmp"/b.png "$out"/seeds/image/pages.tif
convert "$tmp"/a.png -define tiff:tile-geometry=16x16 "$out"/seeds/image/tiled.tif
convert -delay 10 "$tmp"/a.png "$tmp"/b.png "$out"/seeds/image/frames.gif
convert "$tmp"/a.png -type Palette -compress RLE bmp3:"$out"/seeds/image/rle.bmp
convert "$tmp"/a.png "$out"/seeds/image/a.webp
convert "$tmp"/a.png "$out"/seeds/image/a.pgm

echo "==> store decoder and JSON parser, ${seconds}s"
"$out"/store-fuzz -max_total_time="$seconds" -detect_leaks=0 -rss_limit_mb=2048 \
  -artifact_prefix="$out"/ "$out"/corpus/store "$out"/seeds/store 2>&1 | tail -n 3
echo "==> image decoders, ${seconds}s"
"$out"/image-fuzz -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
  -artifact_prefix="$out"/ "$out"/corpus/image "$out"/seeds/image 2>&1 | tail -n 3
echo "fuzzing found nothing in ${seconds}s per harness"
