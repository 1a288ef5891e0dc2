#!/usr/bin/env python3
"""Stands in for systemd's end of the notify protocol (sd_notify(3)) in the rig and the tests:
binds a datagram socket at PATH (mode 0666, so an unprivileged service can send) and appends
every message it receives to LOG as one line, "<monotonic seconds> <message with \\n as |>".
Stops on SIGTERM or after --lifetime seconds.

usage: notify-listener.py PATH LOG [--lifetime SECONDS]
"""
import argparse
import os
import signal
import socket
import sys
import time


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("path")
    parser.add_argument("log")
    parser.add_argument("--lifetime", type=float, default=3600)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if os.path.exists(args.path):
        os.unlink(args.path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    server.bind(args.path)
    os.chmod(args.path, 0o666)
    print("listening on " + args.path, flush=True)
    end = time.monotonic() + args.lifetime
    with open(args.log, "a", buffering=1) as log:
        while time.monotonic() < end:
            server.settimeout(max(0.1, end - time.monotonic()))
            try:
                data = server.recv(4096)
            except socket.timeout:
                continue
            text = data.decode(errors="replace").replace("\n", "|")
            log.write("%.3f %s\n" % (time.monotonic(), text))
    return 0


if __name__ == "__main__":
    sys.exit(main())
