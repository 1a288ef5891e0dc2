#!/usr/bin/env bash
# scan --text against the tesseract CLI on one generated set of 50 labels (ImageMagick:
# 4 fonts, 5 resolutions from 300 down to 50 dpi, some rotated 1-2 degrees, some noisy), in
# one run: wall time per image and character error rate (CER, edit distance / reference
# length, whitespace collapsed) per dpi bucket, with ratios.
#   scan:      one process for the batch: `scan --text --format jsonl --quiet FILES...`
#              (engine pool, --jobs default = the cores available).
#   tesseract: as users run it, one process per image, `tesseract FILE -`, one after the
#              other; also shown with two processes at a time (xargs -P 2) for the 2 cores.
# Both with OMP_THREAD_LIMIT=1. $1: the release bin path (make bench passes it).
# scan runs twice: --level fast (the default) and --level accurate.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: ocr-vs-tesseract.sh BIN_PATH}
runs=${OCR_BENCH_RUNS:-3}
export OMP_THREAD_LIMIT=1

if [[ ! -x "$bin/scan" ]]; then echo "error: $bin/scan not built" >&2; exit 1; fi
for tool in tesseract convert python3; do
    if ! command -v "$tool" >/dev/null; then echo "error: $tool not installed" >&2; exit 1; fi
done
work=$(mktemp -d "${TMPDIR:-/tmp}/ocr-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

python3 - "$bin/scan" "$work" "$runs" <<'PY'
import json, os, statistics, subprocess, sys, time

scan, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
fonts = [f for f in [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "/usr/share/fonts/opentype/urw-base35/NimbusSans-Regular.otf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
] if os.path.exists(f)]
if not fonts:
    sys.exit("error: no fonts (install fonts-dejavu-core)")
texts = [
    "SERIAL NO 4006381333931\nIMEI 490154203237518",
    "Model RX-200 Blue\nLot 2024-117 Exp 11/2027",
    "Organic whole milk 1 L\nBest before 12.03.2026",
    "SN: C02XK1Q8JG5H\nMade in Germany",
    "Store 0457 Aisle 12 Bay 3\nPrice 4.99 EUR",
    "Part 7731-0042-B\nQty 24 pcs",
    "Batteries AA Alkaline\n8 pack 1.5 V",
    "IMEI 356938035643809\nRef A2221 128 GB",
    "Fragile handle with care\nThis side up",
    "Order 88412 Customer 10293\nShip to Hamburg",
]
dpis = [300, 150, 100, 75, 50]
images, expected, bucket = [], {}, {}
i = 0
for dpi in dpis:
    for k in range(10):
        font = fonts[i % len(fonts)]
        text = texts[k]
        path = os.path.join(work, f"label-{dpi}-{k}.png")
        cmd = ["convert", "-density", str(dpi), "-units", "PixelsPerInch", "-font", font,
               "-pointsize", "11", "-background", "white", "-fill", "black", "label:" + text]
        if k % 3 == 1:
            cmd += ["-rotate", "1.5" if k % 2 else "-2"]
        cmd += ["-bordercolor", "white", "-border", "12"]
        if k % 4 == 2:
            cmd += ["-attenuate", "0.4", "+noise", "Gaussian"]
        cmd += ["-colorspace", "Gray", path]
        subprocess.run(cmd, check=True)
        images.append(path)
        expected[path] = text
        bucket[path] = dpi
        i += 1

def norm(s):
    return " ".join(s.split())

def distance(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]

def cer(found):
    out = {}
    for dpi in dpis:
        errors = chars = 0
        for p in images:
            if bucket[p] != dpi:
                continue
            ref = norm(expected[p])
            errors += distance(ref, norm(found.get(p, "")))
            chars += len(ref)
        out[dpi] = errors / chars
    return out

def timed(fn):
    times, result = [], None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result

def run_scan(level):
    p = subprocess.run([scan, "--text", "--level", level, "--format", "jsonl", "--quiet"] + images,
                       capture_output=True, text=True)
    if p.returncode not in (0, 4):
        sys.exit(f"error: scan exited {p.returncode}: {p.stderr}")
    found = {}
    for line in p.stdout.splitlines():
        o = json.loads(line)
        found[o["file"]] = o.get("text") or ""
    return found

def cli(path):
    p = subprocess.run(["tesseract", path, "-"], capture_output=True, text=True)
    return p.stdout

def run_cli():
    return {p: cli(p) for p in images}

def run_cli_parallel():
    # Two tesseract processes at a time (xargs -P 2), one per image.
    t = subprocess.run(["xargs", "-P", "2", "-n", "1", "sh", "-c", 'tesseract "$0" - >/dev/null 2>&1'],
                       input="\n".join(images), text=True)
    return None

cpu = os.cpu_count()
scan_s, scan_found = timed(lambda: run_scan("fast"))
acc_s, acc_found = timed(lambda: run_scan("accurate"))
cli_s, cli_found = timed(run_cli)
clip_s, _ = timed(run_cli_parallel)
n = len(images)
scan_cer, acc_cer, cli_cer = cer(scan_found), cer(acc_found), cer(cli_found)
version = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"\nOCR: scan --text vs the tesseract CLI ({version}), {n} generated labels (5 dpi x 10), "
      f"{len(fonts)} fonts, OMP_THREAD_LIMIT=1, {cpu} cores, median of {runs} runs")
print("scan: one process for the whole batch (engine pool, --jobs = cores); "
      "tesseract: one process per image")
print(f"{'':38}{'scan fast':>10}{'scan acc.':>10}{'tesseract':>11}{'CLI/fast':>10}{'CLI/acc.':>10}")
print(f"{'ms per image (CLI sequential)':38}{scan_s / n * 1000:>10.1f}{acc_s / n * 1000:>10.1f}"
      f"{cli_s / n * 1000:>11.1f}{cli_s / scan_s:>9.2f}x{cli_s / acc_s:>9.2f}x")
print(f"{'ms per image (CLI 2 at a time)':38}{'':>10}{'':>10}"
      f"{clip_s / n * 1000:>11.1f}{clip_s / scan_s:>9.2f}x{clip_s / acc_s:>9.2f}x")
print(f"\n{'character error rate':38}{'scan fast':>10}{'scan acc.':>10}{'tesseract':>11}{'fast vs':>10}{'acc. vs':>10}")
def reduction(s, c):
    if c > 0:
        return f"{(1 - s / c) * 100:.0f}% less" if s <= c else f"{(s / c - 1) * 100:.0f}% more"
    return "=" if s == 0 else "more"
for dpi in dpis:
    s, a, c = scan_cer[dpi], acc_cer[dpi], cli_cer[dpi]
    print(f"{str(dpi) + ' dpi':38}{s:>10.3f}{a:>10.3f}{c:>11.3f}{reduction(s, c):>10}{reduction(a, c):>10}")
mean = lambda d: sum(d.values()) / len(d)
print(f"{'all':38}{mean(scan_cer):>10.3f}{mean(acc_cer):>10.3f}{mean(cli_cer):>11.3f}")
PY
