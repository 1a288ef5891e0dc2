#!/usr/bin/env bash
# How long scan takes to stop on SIGINT and SIGTERM while an 81-megapixel image (no symbol;
# decoding and searching it take about 0.6 s) is being scanned, against zbarimg on the same
# image in the same run (zbarimg dies by the signal's default action, printing nothing more).
# Sends each signal once the first record of an earlier image is out; 10 runs each, p50 and
# max. Fails when scan's max exceeds 100 ms (issue 17's target), or when a run ended some
# other way than by the signal (exit 130 or 143): then nothing was measured.
# Both tools start with SIGINT at its default action: a shell starts a background job (`make
# bench &`, nohup) with SIGINT ignored, and a program keeps an ignored SIGINT ignored, as
# scan does (it finished the image and exited 4 in 613 ms, 2026-11-29).
# $1: the release bin path (make bench passes it).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:?usage: stop-latency.sh BIN_PATH}
[[ -x "$bin/scan" ]] || { echo "error: $bin/scan not built" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pgmmake 1 9000 9000 | pnmtopng > "$work/slow.png"
qrencode -o "$work/code.png" -s 4 "stop here"

python3 - "$bin/scan" "$work" <<'PY'
import signal, statistics, subprocess, sys, time
scan, work = sys.argv[1], sys.argv[2]
def measure(command, sig, wait_for_line):
    p = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    if wait_for_line:
        p.stdout.readline()
    else:
        time.sleep(1.0)  # zbarimg prints at its end; give it time to reach the slow image
    start = time.monotonic()
    p.send_signal(sig)
    p.wait()
    return (time.monotonic() - start) * 1000, p.returncode
worst = 0.0
failed = False
for sig in (signal.SIGINT, signal.SIGTERM):
    ours = [measure([scan, "-q", "--jobs", "1", f"{work}/code.png", f"{work}/slow.png"], sig, True) for _ in range(10)]
    theirs = [measure(["zbarimg", "-q", f"{work}/code.png", f"{work}/slow.png"], sig, False) for _ in range(3)]
    ms = sorted(t for t, _ in ours)
    codes = sorted({c for _, c in ours})
    # Popen's returncode is -N for a process the signal N ended.
    stopped = [t for t, c in theirs if c == -sig.value]
    peer = (f"zbarimg {statistics.median(stopped):.1f} ms" if stopped else
            f"zbarimg had ended before the signal (exit {sorted({c for _, c in theirs})})")
    print(f"{sig.name}: scan stops in p50 {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms "
          f"(exit {codes}); {peer}")
    worst = max(worst, ms[-1])
    if codes != [128 + sig.value]:
        print(f"error: scan did not stop by {sig.name} in every run (exit {codes}, expected "
              f"{128 + sig.value}): nothing was measured", file=sys.stderr)
        failed = True
if worst > 100:
    print(f"error: scan took {worst:.1f} ms to stop, more than 100 ms", file=sys.stderr)
    failed = True
sys.exit(1 if failed else 0)
PY
