#!/usr/bin/env bash
# scan against zbarimg on the dev barcode corpus, in one run: images decoded (against each
# NAME.txt / NAME.bin), symbols reported on falsepositives-1, and wall time for the whole
# corpus in one process (median of several runs), scan with --jobs 1 and --jobs 2.
# $1: the release bin path (make bench passes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: scan-vs-zbarimg.sh BIN_PATH}
corpus=${SHOPFLOOR_CORPUS:-$(cd .. && pwd)/shared/corpus}/barcodes
runs=${SCAN_BENCH_RUNS:-5}

if [[ ! -x "$bin/scan" ]]; then echo "error: $bin/scan not built" >&2; exit 1; fi
if ! command -v zbarimg >/dev/null; then echo "error: zbarimg not installed (zbar-tools)" >&2; exit 1; fi
if [[ ! -d "$corpus" ]]; then echo "error: no corpus at $corpus" >&2; exit 1; fi

python3 - "$bin/scan" "$corpus" "$runs" <<'PY'
import base64, json, os, resource, statistics, subprocess, sys, time
import xml.etree.ElementTree as ET

scan, corpus, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
exts = {".png", ".jpg", ".jpeg", ".webp", ".gif", ".tif", ".tiff", ".bmp", ".pgm", ".ppm"}
images, expected = [], {}
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
        txt, binf = os.path.join(d, base + ".txt"), os.path.join(d, base + ".bin")
        if os.path.exists(txt):
            expected[path] = open(txt, "rb").read()
        elif os.path.exists(binf):
            expected[path] = open(binf, "rb").read()
falsepos = [p for p in images if os.path.basename(os.path.dirname(p)).startswith("falsepositives")]

def score(found, loose=False):  # found: path -> list of payload bytes
    def norm(b):  # XML parsing turns CR LF into LF: compare zbarimg's payloads that way
        return b.replace(b"\r\n", b"\n").replace(b"\r", b"\n") if loose else b
    hits = sum(1 for p, want in expected.items() if norm(want) in [norm(x) for x in found.get(p, [])])
    fps = sum(len(found.get(p, [])) for p in falsepos)
    return hits, fps

# scan: one JSONL line per input, in input order.
out = subprocess.run([scan, "--format", "jsonl", "--quiet", "--jobs", "2", *images],
                     capture_output=True).stdout.decode()
scan_found = {}
for line in out.splitlines():
    rec = json.loads(line)
    scan_found[rec["file"]] = [base64.b64decode(s["bytesBase64"]) for s in rec["symbols"]] + \
                              [s["text"].encode() for s in rec["symbols"]]

# zbarimg: XML names each source; it exits 4 when some image has no symbol.
out = subprocess.run(["zbarimg", "--xml", "-q", *images], capture_output=True).stdout.decode()
zbar_found = {}
ns = "{http://zbar.sourceforge.net/2008/barcode}"
root = ET.fromstring(out)
for source in root.iter(ns + "source"):
    payloads = []
    for sym in source.iter(ns + "symbol"):
        data = sym.find(ns + "data")
        text = data.text or ""
        if data.get("format") == "base64":
            raw = base64.b64decode(text)
        else:
            raw = text.encode()
        payloads.append(raw)
        if sym.get("type") == "EAN-13" and raw.startswith(b"0"):
            payloads.append(raw)  # zbar names UPC-A "EAN-13"; the payload is the same
    zbar_found[source.get("href")] = payloads

def wall(cmd):
    """Median wall time and median CPU time (user + system) of the child, over `runs` runs."""
    times, cpus = [], []
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm-up
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(times), statistics.median(cpus)

load = os.getloadavg()[0]
(t_scan1, c_scan1) = wall([scan, "--quiet", "--jobs", "1", *images])
(t_scan2, c_scan2) = wall([scan, "--quiet", "--jobs", "2", *images])
(t_zbar, c_zbar) = wall(["zbarimg", "-q", *images])

sh, sf = score(scan_found)
zh, zf = score(zbar_found, loose=True)
n, m = len(expected), len(images)
print(f"dev corpus: {m} images, {n} with expected payloads, {len(falsepos)} without codes; median of {runs} runs")
print(f"load average before timing: {load:.2f} on {os.cpu_count()} cores (wall times need idle cores)")
print(f"{'tool':<18}{'decoded':>10}{'false pos':>11}{'wall s':>9}{'cpu s':>8}{'images/s':>10}")
print(f"{'zbarimg':<18}{f'{zh}/{n}':>10}{zf:>11}{t_zbar:>9.3f}{c_zbar:>8.3f}{m / t_zbar:>10.1f}")
print(f"{'scan --jobs 1':<18}{f'{sh}/{n}':>10}{sf:>11}{t_scan1:>9.3f}{c_scan1:>8.3f}{m / t_scan1:>10.1f}")
print(f"{'scan --jobs 2':<18}{f'{sh}/{n}':>10}{sf:>11}{t_scan2:>9.3f}{c_scan2:>8.3f}{m / t_scan2:>10.1f}")
print(f"ratios: scan decodes {sh - zh:+d} images vs zbarimg; "
      f"wall zbarimg/scan(jobs 2) = {t_zbar / t_scan2:.2f}x (>= 1 means scan is faster); "
      f"scan jobs1/jobs2 = {t_scan1 / t_scan2:.2f}x")
PY
