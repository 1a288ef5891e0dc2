#!/usr/bin/env python3
"""Issue 25's target: 10,000 idle connections from one address, straight to one store-server,
leave another client's signed requests answered (p99 <= 50 ms).

Starts `store-server serve` on a fresh SQLite demo database on 127.0.0.1, opens N idle TCP
connections to it from 127.0.0.2 (one client address; nothing is sent on them), then runs
StoreServerLoad (signed GETs of reservations by code, from 127.0.0.1) for SECONDS at RATE and
reports its p50/p99, with how many idle connections the server held (its own open sockets,
from /proc) and how many it answered 503 (the per-address cap). The load runs once the server
has taken every idle connection (held or answered).

Two runs by default:
  capped    the server's default caps (256 connections per address): the flood is answered
            `503 Service Unavailable` at once and closed, the rest stay idle
  uncapped  --max-connections-per-address lifted above N: every idle connection is held

Usage: idle_connections.py BIN STORE_SERVER_LOAD [--connections N] [--rate R] [--seconds S]
                           [--runs capped,uncapped] [--batch B]
Connections are opened B at a time (default 200), each batch once the server has taken the
last: a burst larger than the listen backlog loses handshakes the client believes complete.
BIN holds store-server; STORE_SERVER_LOAD is the built Benchmarks/Tools/StoreServerLoad.
The open-file limit of this process (and so of the server) is raised to N + 4,096 first.
"""
import argparse
import json
import os
import resource
import selectors
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time


def raise_file_limit(needed):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, needed)
    if hard != resource.RLIM_INFINITY and want > hard:
        sys.exit(f"error: {needed} descriptors needed, the hard limit is {hard}")
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    return want


def start_server(bin_dir, work, extra):
    home = os.path.join(work, "home")
    os.makedirs(home, mode=0o700, exist_ok=True)
    database = os.path.join(work, "store.sqlite")
    out = open(os.path.join(work, "server.out"), "w+")
    err = open(os.path.join(work, "server.log"), "w")
    env = dict(os.environ, SHOPFLOOR_HOME=home)
    server = subprocess.Popen(
        [os.path.join(bin_dir, "store-server"), "serve", "--port", "0", "--demo-data",
         "--database", database, "--insecure-password-cost-for-tests", "--password-cost", "1000",
         "--idle-timeout", "3600", "--quiet"] + extra,
        stdout=out, stderr=err, env=env)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        out.seek(0)
        line = out.readline()
        if line.startswith("listening on "):
            port = int(line.strip().rsplit(":", 1)[1])
            return server, port, database
        if server.poll() is not None:
            break
        time.sleep(0.1)
    server.kill()
    sys.exit("error: store-server did not start: " + open(err.name).read()[-1000:])


def open_idle(port, count, source="127.0.0.2"):
    """Opens `count` connections from `source`; returns the sockets (non-blocking)."""
    sockets = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind((source, 0))
        s.setblocking(False)
        try:
            s.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        sockets.append(s)
    # Wait until every connect finished (writable), at most 60 s.
    selector = selectors.DefaultSelector()
    for s in sockets:
        selector.register(s, selectors.EVENT_WRITE)
    pending = len(sockets)
    deadline = time.monotonic() + 60
    while pending and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1):
            selector.unregister(key.fileobj)
            pending -= 1
    selector.close()
    return sockets


def census(sockets, peek=False):
    """How many of the idle connections are still open, and how many the server answered 503
    (and closed). Reads only what the server sent."""
    held = answered_503 = closed = 0
    for s in sockets:
        try:
            data = s.recv(4096, socket.MSG_PEEK if peek else 0)
        except BlockingIOError:
            held += 1
            continue
        except OSError:
            closed += 1
            continue
        if data.startswith(b"HTTP/1.1 503"):
            answered_503 += 1
        else:
            closed += 1
    return held, answered_503, closed


def server_sockets(pid):
    """The server's open sockets (its listener, database and client connections)."""
    count = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                count += 1
        except OSError:
            pass
    return count


def settle(server, sockets, baseline, timeout=120):
    """Waits until the server has taken every idle connection: held (a socket of its own) or
    answered 503. Connections beyond the kernel's accept queue complete on the client's side
    first and reach the server only as SYN-ACKs are retried, so this can take a while."""
    deadline = time.monotonic() + timeout
    while True:
        held = server_sockets(server.pid) - baseline
        _, answered, closed = census(sockets, peek=True)
        if held + answered + closed >= len(sockets) or time.monotonic() > deadline:
            return held
        time.sleep(1)


def reservation_paths(database, count=50):
    # The load generator signs in as the demo associate, who sees the Berlin store only.
    rows = sqlite3.connect(database).execute(
        "SELECT r.code FROM reservations r JOIN stores s ON s.id = r.store_id"
        " WHERE s.short_name = 'berlin-kurfuerstendamm' ORDER BY r.id LIMIT ?", (count,))
    return "|".join("/v1/reservations/by-code/" + code for (code,) in rows)


def measure(load, port, paths, rate, seconds):
    result = subprocess.run(
        [load, f"http://127.0.0.1:{port}", paths, str(rate), str(seconds), "4"],
        capture_output=True, text=True, timeout=seconds + 120)
    if result.returncode != 0:
        sys.exit(f"error: StoreServerLoad: {result.stderr.strip()}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run(name, args, extra):
    work = tempfile.mkdtemp(prefix=f"idle-connections-{name}-")
    os.chmod(work, 0o700)
    server = None
    try:
        server, port, database = start_server(args.bin, work, extra)
        paths = reservation_paths(database)
        baseline = measure(args.load, port, paths, args.rate, args.seconds)
        time.sleep(1)
        before = server_sockets(server.pid)
        started = time.monotonic()
        sockets = []
        # In batches the server's accept queue (its listen backlog) can hold: a burst beyond
        # it loses handshakes the client believes complete (see the README of this folder).
        while len(sockets) < args.connections:
            sockets += open_idle(port, min(args.batch, args.connections - len(sockets)))
            server_held = settle(server, sockets, before, timeout=30)
        server_held = settle(server, sockets, before)
        opened = time.monotonic() - started
        loaded = measure(args.load, port, paths, args.rate, args.seconds)
        server_held_after = server_sockets(server.pid) - before
        held, answered, closed = census(sockets)
        alive = server.poll() is None
        for s in sockets:
            s.close()
        return {
            "run": name, "idleConnections": args.connections, "openSeconds": round(opened, 2),
            "serverHeld": server_held, "serverHeldAfterLoad": server_held_after,
            "openOnClient": held, "answered503": answered, "closedOtherwise": closed,
            "serverAlive": alive, "baseline": baseline, "withIdle": loaded,
        }
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bin")
    parser.add_argument("load")
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=100)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", default="capped,uncapped")
    parser.add_argument("--batch", type=int, default=200,
                        help="connections opened at once (a burst of 10,000 overflows the backlog)")
    args = parser.parse_args()
    raise_file_limit(args.connections + 4096)
    lifted = str(args.connections + 1024)
    options = {
        "capped": [],
        "uncapped": ["--max-connections", str(args.connections + 2048),
                     "--max-connections-per-address", lifted],
    }
    results = []
    for name in args.runs.split(","):
        if name not in options:
            sys.exit(f"error: unknown run '{name}' (capped, uncapped)")
        result = run(name, args, options[name])
        results.append(result)
        print(json.dumps(result), flush=True)
    print("\n| run | idle held by the server | answered 503 | p50 before | p99 before | p50 with idle | p99 with idle | errors |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        b, w = r["baseline"], r["withIdle"]
        print(f"| {r['run']} | {r['serverHeld']} | {r['answered503']} | {b['p50_ms']} ms | "
              f"{b['p99_ms']} ms | {w['p50_ms']} ms | {w['p99_ms']} ms | {w['errors']} |")


if __name__ == "__main__":
    main()
