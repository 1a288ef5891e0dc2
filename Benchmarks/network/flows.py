#!/usr/bin/env python3
"""The user flows of make bench-network, and its report.

  flows.py run --bin DIR --server URL --home DIR --profile NAME --runs N --pool FILE
               --checkin-offset K --out FILE
      Runs every flow N times as a user would (a new process each time, stdin closed), in
      the client's network namespace, and writes one JSON record per run.
  flows.py report --out-dir DIR [--database FILE --server-log FILE] RESULT.json...
      Prints the markdown table (success rate, p50/p95 per flow and profile) and the
      check-in audit, and saves both under DIR.

Flows: reservations login, list, search, show (by confirmation code), check-in (a different
reservation each run); catalog search and show with its image (the image cache emptied
before each run, so the image crosses the link), when the catalog app is built.

On the Down profile a flow succeeds when it ends within the connect timeout + 1 s (3 s)
saying the server cannot be reached: with the data kept from earlier runs (exit 0) where
there is some, else exit 6.
"""

import argparse
import datetime
import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import time

DOWN_LIMIT = 3.0  # connect timeout (2 s) + 1 s
TLS_NAMES = {"lb": "HAProxy", "server": "store-server", "": "—"}
PASSWORD = b"shopfloor-demo\n"


def percentile(values, fraction):
    """Nearest-rank percentile (p95 of 10 runs is the slowest)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def run_command(argv, env, stdin=None, timeout=45):
    start = time.monotonic()
    try:
        done = subprocess.run(argv, input=stdin, stdin=None if stdin else subprocess.DEVNULL,
                              capture_output=True, env=env, timeout=timeout)
        status, out, err = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        status, out, err = "timeout", expired.stdout or b"", expired.stderr or b""
    return status, time.monotonic() - start, out.decode(errors="replace"), \
        err.decode(errors="replace")


def flows(args, pool):
    reservations = os.path.join(args.bin, "reservations")
    catalog = os.path.join(args.bin, "catalog")
    shows = pool["show"]
    checkins = pool["checkin"]
    image_dir = os.path.join(args.home, "bench-images")
    os.makedirs(image_dir, exist_ok=True)
    for run in range(args.runs):
        code = shows[run % len(shows)]
        yield "login", [reservations, "login", "--server", args.server, "--user", "demo",
                        "--password-stdin"], PASSWORD, None
        yield "list", [reservations, "list", "--date", "today", "--json"], None, None
        yield "search", [reservations, "search", pool["search"], "--json"], None, None
        yield "show", [reservations, "show", code, "--json"], None, None
        index = args.checkin_offset + run
        if index < len(checkins):
            yield "check-in", [reservations, "check-in", checkins[index]["code"], "--json"], \
                None, checkins[index]
        if os.access(catalog, os.X_OK) and pool.get("gtins"):
            gtin = pool["gtins"][run % len(pool["gtins"])]
            yield "catalog search", [catalog, "search", pool["productSearch"], "--json"], \
                None, None
            prepare = [catalog, "cache", "clear"]
            yield "catalog show+image", [catalog, "show", gtin, "--json", "--image-save",
                                         os.path.join(image_dir, f"{gtin}.png")], None, prepare


def judge(profile, flow, status, seconds, out, err, extra):
    """Whether a run did what the user asked (on Down: ended in time, saying offline)."""
    if status == "timeout":
        return False, "no exit within 45 s"
    if profile == "Down":
        offline = "cannot be reached" in err or "offline" in err
        if seconds > DOWN_LIMIT:
            return False, f"took {seconds:.2f} s"
        if status == 0 and offline:
            return True, "kept data"
        if status == 6 and offline:
            return True, "exit 6"
        return False, f"exit {status}: {err.strip()[-160:]}"
    if status != 0:
        return False, f"exit {status}: {err.strip()[-160:]}"
    if flow == "check-in":
        try:
            detail = json.loads(out)
            if detail["status"] != "checkedIn":
                return False, "not checked in"
        except (ValueError, KeyError):
            return False, "unreadable answer"
        if "already" in err:
            return True, "said already checked in"
    return True, ""


def command_run(args):
    with open(args.pool) as handle:
        pool = json.load(handle)
    env = dict(os.environ, SHOPFLOOR_HOME=args.home, NO_COLOR="1")
    env.pop("SHOPFLOOR_SERVER", None)
    records = []
    for flow, argv, stdin, extra in flows(args, pool):
        if flow == "catalog show+image" and extra:
            run_command(extra, env)  # empty the image cache: the image crosses the link
            extra = None
        status, seconds, out, err = run_command(argv, env, stdin)
        ok, note = judge(args.profile, flow, status, seconds, out, err, extra)
        record = {"profile": args.profile, "flow": flow, "status": status, "seconds": seconds,
                  "ok": ok, "note": note, "tls": args.label}
        if flow == "check-in" and extra:
            record["reservation"] = extra
        records.append(record)
        mark = "ok" if ok else "FAILED"
        print(f"  {args.profile:6} {flow:20} {seconds * 1000:8.0f} ms  exit {status} {mark} "
              f"{note}", file=sys.stderr, flush=True)
    with open(args.out, "w") as handle:
        json.dump(records, handle)


# The demo stores whose flags turn check-in off.
NO_CHECKIN_STORES = {"5D0F1C2A-0005-4A00-8000-000000000005", "5D0F1C2A-0006-4A00-8000-000000000006"}


def command_prepare(args):
    """Signs in on the unshaped link and picks the reservations and products the runs use:
    codes to show (the same ones on every profile, so Down has kept data), a different
    confirmed reservation for every check-in, a search term, and GTINs with images."""
    env = dict(os.environ, SHOPFLOOR_HOME=args.home, NO_COLOR="1")
    env.pop("SHOPFLOOR_SERVER", None)
    reservations = os.path.join(args.bin, "reservations")
    status, _, _, err = run_command([reservations, "login", "--server", args.server, "--user",
                                     "demo", "--password-stdin"], env, PASSWORD)
    if status != 0:
        sys.exit(f"error: login on the unshaped link failed: {err.strip()}")
    confirmed = []
    for letter in "aeiou":
        status, _, out, err = run_command([reservations, "search", letter, "--status",
                                           "confirmed", "--limit", "200", "--json"], env)
        if status != 0:
            sys.exit(f"error: search failed: {err.strip()}")
        for item in json.loads(out)["items"]:
            if item["storeID"].upper() in NO_CHECKIN_STORES:
                continue
            if all(item["id"] != known["id"] for known in confirmed):
                confirmed.append(item)
    if len(confirmed) < args.checkins + 3:
        print(f"warning: only {len(confirmed)} confirmed reservations for {args.checkins} "
              "check-ins; later check-in runs are left out", file=sys.stderr)
    shows = [item["confirmationCode"] for item in confirmed[:3]]
    pool = {
        "show": shows,
        "search": confirmed[0]["customer"]["familyName"],
        "checkin": [{"id": item["id"], "code": item["confirmationCode"],
                     "version": item["version"]} for item in confirmed[3:3 + args.checkins]],
    }
    catalog = os.path.join(args.bin, "catalog")
    if os.access(catalog, os.X_OK):
        status, _, out, err = run_command([catalog, "search", "a", "--limit", "50", "--json"],
                                          env)
        if status == 0:
            items = json.loads(out).get("items", [])
            pool["gtins"] = [item["gtin"] for item in items if item.get("gtin")][:3]
            words = (items[0].get("title", "a").split() or ["a"]) if items else ["a"]
            pool["productSearch"] = words[0]
        else:
            print(f"warning: catalog search failed, catalog flows left out: {err.strip()}",
                  file=sys.stderr)
    with open(args.out, "w") as handle:
        json.dump(pool, handle, indent=1)
    print(f"pool: {len(shows)} codes to show, {len(pool['checkin'])} check-ins, search "
          f"'{pool['search']}', {len(pool.get('gtins', []))} products", file=sys.stderr)


def audit(records, database, server_log):
    """The server's own count of check-ins: every reservation the bench checked in changed
    once (its version went up by exactly one, one `reservation status changed` log line),
    however many attempts the client made."""
    tried = {}
    for record in records:
        if record["flow"] == "check-in" and "reservation" in record:
            reservation = record["reservation"]
            label = TLS_NAMES.get(record.get("tls", ""), "")
            tried[reservation["id"].upper()] = (f"{label} {record['profile']}".strip(),
                                                reservation["version"], record["ok"])
    if not tried or not database or not os.path.exists(database):
        return []
    if database.endswith(".csv"):
        # The rig's PostgreSQL: `id,version,status` rows exported with psql before it stops.
        with open(database) as handle:
            rows = {}
            for line in handle:
                parts = line.strip().split(",")
                if len(parts) == 3 and parts[1].isdigit():
                    rows[parts[0].upper()] = (int(parts[1]), parts[2])
    else:
        connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
        rows = {row[0].upper(): (row[1], row[2])
                for row in connection.execute("SELECT id, version, status FROM reservations")}
        connection.close()
    log = []
    for path in (server_log or "").split(","):
        if path and os.path.exists(path):
            log += open(path, errors="replace").read().splitlines()
    changes = {}
    # "note: reservation status changed (by: …, reservation: ID, status: checkedIn)", or
    # key=value: the reservation's id after its key.
    pattern = re.compile(r"reservation[=:]\s*\"?([0-9A-Fa-f-]{36})")
    for line in log:
        if "reservation status changed" in line and "checkedIn" in line:
            for found in pattern.findall(line):
                changes[found.upper()] = changes.get(found.upper(), 0) + 1
    summary = {}
    for identifier, (profile, version, ok) in tried.items():
        current = rows.get(identifier)
        entry = summary.setdefault(profile, {"tried": 0, "ok": 0, "checkedIn": 0,
                                             "versionPlusOne": 0, "logLines": 0, "duplicated": 0})
        entry["tried"] += 1
        entry["ok"] += ok
        if current:
            current_version, status = current
            entry["checkedIn"] += status == "checkedIn"
            entry["versionPlusOne"] += current_version == version + 1
            entry["duplicated"] += current_version > version + 1
        lines = changes.get(identifier, 0)
        entry["logLines"] += lines
        entry["duplicated"] += lines > 1
    return [dict(profile=profile, **entry) for profile, entry in summary.items()]


def command_report(args):
    records = []
    for path in args.results:
        with open(path) as handle:
            records += json.load(handle)
    order = []
    for record in records:
        key = (record.get("tls", ""), record["profile"], record["flow"])
        if key not in order:
            order.append(key)
    lines = [
        "| TLS by | profile | flow | runs | success | p50 ms | p95 ms | max ms | notes |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    targets = []
    for tls, profile, flow in order:
        group = [r for r in records if r.get("tls", "") == tls and r["profile"] == profile
                 and r["flow"] == flow]
        times = [r["seconds"] * 1000 for r in group]
        ok = sum(r["ok"] for r in group)
        notes = {}
        for r in group:
            if r["note"]:
                notes[r["note"]] = notes.get(r["note"], 0) + 1
        note = "; ".join(f"{text} ×{count}" for text, count in sorted(notes.items()))
        lines.append(
            f"| {TLS_NAMES.get(tls, tls)} | {profile} | {flow} | {len(group)} | "
            f"{100 * ok / len(group):.0f}% | "
            f"{percentile(times, 0.5):.0f} | {percentile(times, 0.95):.0f} | "
            f"{max(times):.0f} | {note[:200]} |")
        who = TLS_NAMES.get(tls, tls)
        if profile == "3G" and flow == "show":
            p95 = percentile(times, 0.95)
            targets.append((p95 <= 1000, f"{who}: lookup on 3G p95 {p95:.0f} ms (≤ 1000 ms)"))
        if profile == "Edge":
            targets.append((ok == len(group), f"{who}: Edge {flow}: {ok} of {len(group)} complete"))
        if profile == "Down":
            slowest = max(times)
            targets.append((slowest <= DOWN_LIMIT * 1000 and ok == len(group),
                            f"{who}: Down {flow}: slowest {slowest:.0f} ms (≤ 3000 ms), "
                            f"{ok} of {len(group)} as expected"))
    if targets:
        lines += ["", "Targets (issue 25):", ""]
        lines += [f"- {'met' if met else 'MISSED'}: {text}" for met, text in targets]
    checks = audit(records, args.database, args.server_log)
    if checks:
        lines += ["", "Check-ins as the server counts them (each reservation checked in once: "
                  "version +1, one status-change log line):", "",
                  "| profile | check-ins run | succeeded | checked in on the server | "
                  "version +1 | log lines | duplicated |", "|---|---:|---:|---:|---:|---:|---:|"]
        for c in checks:
            lines.append(f"| {c['profile']} | {c['tried']} | {c['ok']} | {c['checkedIn']} | "
                         f"{c['versionPlusOne']} | {c['logLines']} | {c['duplicated']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(args.out_dir, exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(args.out_dir, f"network-{stamp}")
    with open(base + ".md", "w") as handle:
        handle.write(f"# make bench-network, {stamp}\n\n{args.header or ''}\n\n{text}")
    with open(base + ".json", "w") as handle:
        json.dump({"records": records, "checkIns": checks}, handle, indent=1)
    print(f"saved {base}.md and {base}.json", file=sys.stderr)
    failed = any(c["duplicated"] for c in checks)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run")
    run.add_argument("--bin", required=True)
    run.add_argument("--server", required=True)
    run.add_argument("--home", required=True)
    run.add_argument("--profile", required=True)
    run.add_argument("--runs", type=int, default=10)
    run.add_argument("--pool", required=True)
    run.add_argument("--checkin-offset", type=int, default=0)
    run.add_argument("--label", default="", help="who terminates TLS: lb or server")
    run.add_argument("--out", required=True)
    prepare = sub.add_parser("prepare")
    prepare.add_argument("--bin", required=True)
    prepare.add_argument("--server", required=True)
    prepare.add_argument("--home", required=True)
    prepare.add_argument("--checkins", type=int, required=True)
    prepare.add_argument("--out", required=True)
    report = sub.add_parser("report")
    report.add_argument("--out-dir", required=True)
    report.add_argument("--database", help="the SQLite file, or a CSV of id,version,status")
    report.add_argument("--server-log", help="the server's log; several, comma-separated")
    report.add_argument("--header")
    report.add_argument("results", nargs="+")
    args = parser.parse_args()
    if args.command == "run":
        command_run(args)
        return 0
    if args.command == "prepare":
        command_prepare(args)
        return 0
    return command_report(args)


if __name__ == "__main__":
    sys.exit(main())
