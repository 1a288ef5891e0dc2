#!/usr/bin/env bash
# scan --text against the tesseract CLI on one generated, seeded set of 100 labels
# (ImageMagick: 20 texts, up to 8 fonts at 9-12 pt, 5 resolutions from 300 down to 50 dpi;
# a third rotated up to 4 degrees, some noisy, blurred or low in contrast), in
# one run: wall time per image and character error rate (CER, edit distance / reference
# length, whitespace collapsed) per dpi bucket, with ratios.
#   scan:      one process for the batch: `scan --text --format jsonl --quiet FILES...`
#              (engine pool, --jobs default = the cores available).
#   tesseract: as users run it, one process per image, `tesseract FILE -`, one after the
#              other; also shown with two processes at a time (xargs -P 2) for the 2 cores.
# Both with OMP_THREAD_LIMIT=1. $1: the release bin path (make bench passes it).
# scan runs at each level: auto (the default), fast and accurate.
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
import json, os, random, statistics, subprocess, sys, time

scan, work, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
fonts = [f for f in [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/opentype/urw-base35/NimbusSans-Regular.otf",
    "/usr/share/fonts/opentype/urw-base35/NimbusRoman-Regular.otf",
    "/usr/share/fonts/opentype/urw-base35/NimbusMonoPS-Regular.otf",
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
    "Net weight 500 g\nKeep refrigerated below 7 C",
    "Batch B7-2291 Line 4\nPacked 03/11/2025 14:32",
    "Cotton 100%\nWash at 40 degrees",
    "Return by 30.01.2026\nReceipt 0041-2291-77",
    "Aisle 7 Shelf C\nReorder point 12 units",
    "Voltage 230 V 50 Hz\nPower 1200 W",
    "GTIN 05901234123457\nLot L2291 Exp 2026-04",
    "Size M Colour Navy\nArt. no. 0719-552-01",
    "Do not stack more than 4 high\nGross 18.5 kg",
    "Warranty 24 months\nService hotline 0800 555 0199",
]
dpis = [300, 150, 100, 75, 50]
per_dpi = 20
rng = random.Random(15)
images, expected, bucket = [], {}, {}
for dpi in dpis:
    for k in range(per_dpi):
        font = rng.choice(fonts)
        text = texts[(k + dpi) % len(texts)]
        path = os.path.join(work, f"label-{dpi}-{k}.png")
        cmd = ["convert", "-density", str(dpi), "-units", "PixelsPerInch", "-font", font,
               "-pointsize", str(rng.choice([9, 10, 11, 12])), "-background", "white",
               "-fill", rng.choice(["black", "#202020", "#303848"]), "label:" + text]
        if k % 3 == 1:
            cmd += ["-background", "white", "-rotate", f"{rng.uniform(-4, 4):.1f}"]
        cmd += ["-bordercolor", "white", "-border", str(rng.randint(6, 20))]
        if k % 4 == 2:
            cmd += ["-seed", str(rng.randint(0, 99999)), "-attenuate", f"{rng.uniform(0.3, 0.8):.1f}",
                    "+noise", "Gaussian"]
        if k % 5 == 3:
            cmd += ["-blur", f"0x{rng.uniform(0.3, 0.8):.1f}"]
        if k % 6 == 4:
            cmd += ["+level", f"{rng.randint(10, 25)}%,{rng.randint(70, 90)}%"]
        cmd += ["-colorspace", "Gray", path]
        subprocess.run(cmd, check=True)
        images.append(path)
        expected[path] = text
        bucket[path] = dpi

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
levels = ["auto", "fast", "accurate"]
scan_t, scan_found = {}, {}
for level in levels:
    scan_t[level], scan_found[level] = timed(lambda: run_scan(level))
cli_s, cli_found = timed(run_cli)
clip_s, _ = timed(run_cli_parallel)
n = len(images)
scan_cer = {level: cer(scan_found[level]) for level in levels}
cli_cer = cer(cli_found)
version = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
print(f"\nOCR: scan --text vs the tesseract CLI ({version}), {n} generated labels (5 dpi x {per_dpi}), "
      f"{len(fonts)} fonts, OMP_THREAD_LIMIT=1, {cpu} cores, median of {runs} runs; "
      f"load average {os.getloadavg()[0]:.2f}")
print("scan: one process for the whole batch (engine pool, --jobs = cores); "
      "tesseract: one process per image")
head = "".join(f"{'scan ' + level:>15}" for level in levels)
print(f"{'':34}{head}{'tesseract':>11}")
row = "".join(f"{scan_t[level] / n * 1000:>15.1f}" for level in levels)
print(f"{'ms per image':34}{row}{cli_s / n * 1000:>11.1f}")
row = "".join(f"{cli_s / scan_t[level]:>14.2f}x" for level in levels)
print(f"{'CLI time / scan time (sequential)':34}{row}")
row = "".join(f"{clip_s / scan_t[level]:>14.2f}x" for level in levels)
print(f"{'CLI time / scan time (2 at a time)':34}{row}")
print(f"\n{'character error rate':34}{head}{'tesseract':>11}")
for dpi in dpis:
    row = "".join(f"{scan_cer[level][dpi]:>15.3f}" for level in levels)
    print(f"{str(dpi) + ' dpi':34}{row}{cli_cer[dpi]:>11.3f}")
mean = lambda d: sum(d.values()) / len(d)
row = "".join(f"{mean(scan_cer[level]):>15.3f}" for level in levels)
print(f"{'all':34}{row}{mean(cli_cer):>11.3f}")
worst = max(scan_cer["auto"][d] - scan_cer["accurate"][d] for d in dpis)
print(f"auto vs accurate: CER at most {worst:+.3f} at any dpi; "
      f"auto is {scan_t['accurate'] / scan_t['auto']:.2f}x the accurate level's speed")
PY
