#!/usr/bin/env bash
# scan against zbarimg, in one run, on five sets:
#   dev corpus   $SHOPFLOOR_CORPUS/barcodes: photos and scans with NAME.txt / NAME.bin
#                (an image counts as decoded when a symbol has its payload), and
#                falsepositives-1 (any symbol there is a false positive);
#   degraded set scripts/fixtures/degraded-barcodes.py (generated once per machine): 610
#                symbols in 570 images, 200 barcode-free images; symbols counted one by one,
#                "wrong" are readings of a barcode image that match none of its symbols;
#   rotated set  scripts/fixtures/rotated-barcodes.py (generated once per machine): every
#                dev corpus image turned by 90, 180, 270 degrees and one odd angle (8-82
#                degrees), expected payloads carried over, counted as the dev corpus is;
#   maxicode set scripts/fixtures/maxicode-photos.py (generated once per machine): 40
#                MaxiCode photos (perspective, any turn, 6-12 px hexagons) and 8 bullseye
#                decoys, counted as the dev corpus is. zbar has no MaxiCode reader, and
#                ZXing-C++ reads it only upright and alone (0 of these 40 with 3.1.1);
#   families set scripts/fixtures/families-barcodes.py (generated once per machine): 20
#                symbologies and variants drawn by zint, each at 8 angles and 2 sizes, plain
#                (PNG) and hard (perspective, JPEG): 640 images of one symbol each, so
#                "wrong" (readings that are not its payload) is counted. Payloads as scan
#                reports them: zbar's UPC-E (8 digits) never matches, and it has no reader
#                for Aztec, DataMatrix, Micro QR, MicroPDF417 or DataBar Limited.
# For each: every effort of scan (fast, balanced = the default, thorough; SCAN_BENCH_EFFORTS
# names fewer) and zbarimg, one process for the whole batch each (scan with its default
# --jobs, the cores available), wall and CPU time (median of SCAN_BENCH_RUNS runs, thorough
# once), and wall ratios; SCAN_BENCH_SETS names fewer sets (dev, degraded, rotated,
# maxicode, families).
# $1: the release bin path (make bench passes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: scan-vs-zbarimg.sh BIN_PATH}
corpus=${SHOPFLOOR_CORPUS:-$(cd .. && pwd)/shared/corpus}/barcodes
runs=${SCAN_BENCH_RUNS:-3}

if [[ ! -x "$bin/scan" ]]; then echo "error: $bin/scan not built" >&2; exit 1; fi
if ! command -v zbarimg >/dev/null; then echo "error: zbarimg not installed (zbar-tools)" >&2; exit 1; fi
if [[ ! -d "$corpus" ]]; then echo "error: no corpus at $corpus" >&2; exit 1; fi
sets=${SCAN_BENCH_SETS:-dev degraded rotated maxicode families}
degraded=$([[ $sets == *degraded* ]] && python3 scripts/fixtures/degraded-barcodes.py || echo -)
rotated=$([[ $sets == *rotated* ]] && python3 scripts/fixtures/rotated-barcodes.py || echo -)
maxicode=$([[ $sets == *maxicode* ]] && python3 scripts/fixtures/maxicode-photos.py || echo -)
families=$([[ $sets == *families* ]] && python3 scripts/fixtures/families-barcodes.py || echo -)

python3 - "$bin/scan" "$corpus" "$degraded" "$rotated" "$runs" "$sets" \
    "${SCAN_BENCH_EFFORTS:-fast balanced thorough}" "$maxicode" "$families" <<'PY'
import base64, json, os, resource, statistics, subprocess, sys, time
import xml.etree.ElementTree as ET

scan, corpus, degraded, rotated, runs = sys.argv[1:5] + [int(sys.argv[5])]
sets, efforts = sys.argv[6].split(), sys.argv[7].split()
maxicode, families = sys.argv[8], sys.argv[9]
exts = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".tif", ".tiff", ".bmp", ".pgm", ".ppm"}

# Each set: images, and per image the payloads wanted (bytes) and whether it has no code.
def dev_set(corpus=corpus):
    images, wanted, empty = [], {}, set()
    for family in sorted(os.listdir(corpus)):
        d = os.path.join(corpus, family)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            base, ext = os.path.splitext(name)
            if ext.lower() not in exts:
                continue
            path = os.path.join(d, name)
            images.append(path)
            for suffix in (".txt", ".bin"):
                f = os.path.join(d, base + suffix)
                if os.path.exists(f):
                    wanted[path] = [open(f, "rb").read()]
                    break
            if family.startswith("falsepositives"):
                empty.add(path)
    return images, wanted, empty

def degraded_set():
    manifest = json.load(open(os.path.join(degraded, "manifest.json")))
    images, wanted, empty = [], {}, set()
    for e in manifest:
        path = os.path.join(degraded, e["file"])
        images.append(path)
        if e["kind"] == "none":
            empty.add(path)
        else:
            wanted[path] = [s["text"].encode() for s in e["symbols"]]
    return images, wanted, empty

def norm(b):  # zbarimg's XML turns CR LF into LF: compare payloads that way
    return b.replace(b"\r\n", b"\n").replace(b"\r", b"\n")

def score(found, wanted, empty, per_image):
    """found: path -> one set of payload forms (bytes, text) per symbol reported."""
    hits = wrong = 0
    for path, want in wanted.items():
        got = [{norm(x) for x in forms} for forms in found.get(path, [])]
        w = [norm(x) for x in want]
        read = [x for x in w if any(x in forms for forms in got)]
        hits += bool(read) if per_image else len(read)
        wrong += sum(1 for forms in got if not any(x in forms for x in w))
    fps = sum(len(found.get(p, [])) for p in empty)
    return hits, fps, wrong

def run_scan(images, effort):
    out = subprocess.run([scan, "--format", "jsonl", "--quiet", "--effort", effort, *images],
                         capture_output=True).stdout.decode()
    found = {}
    for line in out.splitlines():
        rec = json.loads(line)
        found[rec["file"]] = [{base64.b64decode(s["bytesBase64"]), s["text"].encode()}
                              for s in rec["symbols"]]
    return found

def run_zbar(images):
    out = subprocess.run(["zbarimg", "--xml", "-q", *images], capture_output=True).stdout.decode()
    found = {}
    ns = "{http://zbar.sourceforge.net/2008/barcode}"
    for source in ET.fromstring(out).iter(ns + "source"):
        payloads = []
        for sym in source.iter(ns + "symbol"):
            data = sym.find(ns + "data")
            text = data.text or ""
            raw = base64.b64decode(text) if data.get("format") == "base64" else text.encode()
            payloads.append({raw})
        found[source.get("href")] = payloads
    return found

def timed(cmd, n):
    """Median wall time and CPU time (user + system) of the child over n runs."""
    walls, cpus = [], []
    for _ in range(n):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        walls.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), statistics.median(cpus)

print(f"scan vs zbarimg: one process per tool for each whole set, {os.cpu_count()} cores; "
      f"load average {os.getloadavg()[0]:.2f} before timing (wall times need idle cores)")
chosen = {"dev": ("dev corpus", dev_set, True), "degraded": ("degraded set", degraded_set, False),
          "rotated": ("rotated set", lambda: dev_set(rotated), True),
          "maxicode": ("maxicode set", lambda: dev_set(maxicode), True),
          "families": ("families set", lambda: dev_set(families), True)}
for label, make, per_image in [chosen[name] for name in
                               ("dev", "degraded", "rotated", "maxicode", "families")
                               if name in sets]:
    one_each = label == "families set"  # one symbol per image: every other reading is wrong
    images, wanted, empty = make()
    unit = "images" if per_image else "symbols"
    total = len(wanted) if per_image else sum(len(w) for w in wanted.values())
    print(f"\n{label}: {len(images)} images, {total} {'with an expected payload' if per_image else 'symbols'}, "
          f"{len(empty)} without codes" + (" (wrong: not counted, images may hold more symbols "
          "than their .txt names)" if per_image and not one_each else ""))
    print(f"{'tool':<24}{unit + ' read':>14}{'false pos':>11}{'wrong':>7}{'wall s':>9}"
          f"{'cpu s':>8}{'zbarimg/scan wall':>19}")
    subprocess.run(["zbarimg", "-q", *images], capture_output=True)  # warm the file cache
    zh, zf, zw = score(run_zbar(images), wanted, empty, per_image)
    zt, zc = timed(["zbarimg", "-q", *images], runs)
    shown = (lambda w: "-") if per_image and not one_each else (lambda w: w)
    print(f"{'zbarimg':<24}{f'{zh}/{total}':>14}{zf:>11}{shown(zw):>7}{zt:>9.2f}{zc:>8.2f}{'':>19}")
    for effort in efforts:
        found = run_scan(images, effort)
        h, f, w = score(found, wanted, empty, per_image)
        t, c = timed([scan, "--quiet", "--effort", effort, *images], 1 if effort == "thorough" else runs)
        name = f"scan --effort {effort}" + (" *" if effort == "balanced" else "")
        print(f"{name:<24}{f'{h}/{total}':>14}{f:>11}{shown(w):>7}{t:>9.2f}{c:>8.2f}{zt / t:>18.2f}x")
        if label == "rotated set":  # right angles and the odd angle apart
            parts = []
            for part, keep in (("90/180/270", lambda p: p[-7:-4] in ("090", "180", "270")),
                               ("odd angle", lambda p: p[-7:-4] not in ("090", "180", "270"))):
                sub = {p: v for p, v in wanted.items() if keep(p)}
                parts.append(f"{part} {score(found, sub, set(), True)[0]}/{len(sub)}")
            print(f"{'':<24}  ({', '.join(parts)})")
print("\n* the default. Ratios >= 1 mean scan took no longer than zbarimg.")
PY
