#!/usr/bin/env python3
"""A TCP relay that makes a link slow: a fixed latency each way, optionally a bandwidth.

A test tool (make bench-network, and the network tests of make test). This kernel has no
netem, so the latency of a shaped link comes from here: every chunk read on one side is
written to the other side `delay` later, in order (a fixed latency keeps order). With a
rate, chunks also queue behind each other on a link shared by every connection of that
direction, as on a real uplink or downlink (bench-network leaves the rate to tc and sets
only the latency here).

The TCP handshake between the client and the relay is not delayed (user space cannot hold
a SYN-ACK back), so by default the first bytes of every connection wait one extra round
trip (--no-handshake-delay turns that off): a new connection costs what it costs on the
real link, one round trip before the request leaves.

Fault injection for tests (never on by default): --lose-answers N drops the server's
answer to the first N requests whose request line starts with --lose-match (default
"POST ") and resets the client's connection, as when a link dies after the server has
applied a write. --hold PREFIX (repeatable) never passes on a request whose request line
starts with PREFIX: a server that never answers it, while other requests go through.

Bounded and self-stopping: each direction of a connection holds at most --buffer bytes in
flight (the reader waits), the relay exits after --lifetime seconds, when its parent
process dies, or on SIGTERM/SIGINT. On exit it prints one JSON line of counts to stderr.

Usage:
  delay_relay.py --listen 127.0.0.1:0 --to 127.0.0.1:8080 --delay-ms 100
  (prints "listening on HOST:PORT" on stdout once it accepts connections)
"""

import argparse
import asyncio
import ctypes
import json
import os
import signal
import socket
import sys
import time


def host_port(text):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"'{text}' is not HOST:PORT")
    return host.strip("[]"), int(port)


def parse():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=host_port, required=True, help="HOST:PORT (port 0: any)")
    parser.add_argument("--to", type=host_port, required=True, help="the server, HOST:PORT")
    parser.add_argument("--delay-ms", type=float, default=0, help="latency each way")
    parser.add_argument("--up-delay-ms", type=float, help="client to server latency")
    parser.add_argument("--down-delay-ms", type=float, help="server to client latency")
    parser.add_argument("--up-kbit", type=float, default=0, help="uplink rate (0: unlimited)")
    parser.add_argument("--down-kbit", type=float, default=0, help="downlink rate (0: unlimited)")
    parser.add_argument("--no-handshake-delay", action="store_true")
    parser.add_argument("--lose-answers", type=int, default=0)
    parser.add_argument("--lose-match", default="POST ", help="request line prefix")
    parser.add_argument("--hold", action="append", default=[], help="request line prefix")
    parser.add_argument("--buffer", type=int, default=1 << 20, help="bytes in flight per direction")
    parser.add_argument("--lifetime", type=float, default=900, help="seconds before exiting")
    parser.add_argument("--events", action="store_true",
                        help="print a line on stdout per connection, request and lost answer")
    args = parser.parse_args()
    up = args.delay_ms if args.up_delay_ms is None else args.up_delay_ms
    down = args.delay_ms if args.down_delay_ms is None else args.down_delay_ms
    if min(up, down, args.up_kbit, args.down_kbit) < 0 or args.lifetime <= 0:
        parser.error("delays, rates and the lifetime must not be negative")
    args.up, args.down = up / 1000, down / 1000
    return args


class Link:
    """One direction shared by every connection: latency, and a rate if set."""

    def __init__(self, delay, kbit):
        self.delay = delay
        self.seconds_per_byte = 8 / (kbit * 1000) if kbit > 0 else 0
        self.free_at = 0.0

    def arrival(self, size, extra=0.0):
        now = time.monotonic()
        start = max(now, self.free_at)
        self.free_at = start + size * self.seconds_per_byte
        return self.free_at + self.delay + extra


class Relay:
    def __init__(self, args):
        self.args = args
        self.up = Link(args.up, args.up_kbit)
        self.down = Link(args.down, args.down_kbit)
        self.handshake = 0.0 if args.no_handshake_delay else args.up + args.down
        self.chunk = 4096 if (args.up_kbit or args.down_kbit) else 65536
        self.lose_left = args.lose_answers
        self.lose_match = args.lose_match.encode()
        self.hold = [prefix.encode() for prefix in args.hold]
        self.counts = {"connections": 0, "bytesUp": 0, "bytesDown": 0, "requests": {},
                       "answersLost": 0, "targetFailures": 0}
        self.writers = set()
        self.tasks = set()

    def event(self, text):
        if self.args.events:
            print(text, flush=True)

    def request_line(self, data):
        """(method, path) when the chunk starts a request, else None."""
        head = data[:1024].split(b" ", 2)
        if len(head) >= 2 and head[0].isalpha() and head[0].isupper() and head[1][:1] == b"/":
            method, path = head[0].decode(), head[1].decode(errors="replace")
            self.counts["requests"][method] = self.counts["requests"].get(method, 0) + 1
            return method, path
        return None
    async def handle(self, client_reader, client_writer):
        task = asyncio.current_task()
        self.tasks.add(task)
        try:
            await self.relay(client_reader, client_writer)
        except asyncio.CancelledError:
            pass
        finally:
            self.tasks.discard(task)

    async def relay(self, client_reader, client_writer):
        self.counts["connections"] += 1
        self.event(f"connection {self.counts['connections']}")
        self.writers.add(client_writer)
        try:
            server_reader, server_writer = await asyncio.open_connection(*self.args.to)
        except OSError:
            self.counts["targetFailures"] += 1
            client_writer.transport.abort()
            self.writers.discard(client_writer)
            return
        self.writers.add(server_writer)
        state = {"lose": False, "closed": False}

        def abort_both():
            state["closed"] = True
            for writer in (client_writer, server_writer):
                writer.transport.abort()

        up = asyncio.create_task(self.pump(client_reader, server_writer, self.up, "bytesUp",
                                           state, abort_both, first_extra=self.handshake))
        down = asyncio.create_task(self.pump(server_reader, client_writer, self.down,
                                             "bytesDown", state, abort_both))
        try:
            await asyncio.gather(up, down)
        finally:
            up.cancel()
            down.cancel()
            for writer in (client_writer, server_writer):
                writer.transport.abort() if state["closed"] else writer.close()
                self.writers.discard(writer)

    async def pump(self, reader, writer, link, counter, state, abort_both, first_extra=0.0):
        """Reads one side and writes the other `link`'s delay later, in order."""
        queue = asyncio.Queue()
        budget = asyncio.Semaphore(max(1, self.args.buffer // self.chunk))
        upstream = counter == "bytesUp"

        async def read():
            extra = first_extra
            try:
                while True:
                    await budget.acquire()
                    data = await reader.read(self.chunk)
                    if not data:
                        break
                    line = self.request_line(data) if upstream else None
                    if line:
                        self.event(f"request {line[0]} {line[1]}")
                        if any(data.startswith(prefix) for prefix in self.hold):
                            self.event(f"held {line[0]} {line[1]}")
                            await asyncio.Event().wait()  # until the relay stops
                        if data.startswith(self.lose_match) and self.lose_left > 0:
                            self.lose_left -= 1
                            state["lose"] = True
                    await queue.put((link.arrival(len(data), extra), data))
                    extra = 0.0
            except (ConnectionError, OSError):
                pass
            await queue.put((link.arrival(0), None))

        reading = asyncio.create_task(read())
        try:
            while True:
                at, data = await queue.get()
                wait = at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                if state["closed"]:
                    break
                if data is None:
                    if writer.can_write_eof():
                        writer.write_eof()
                    break
                budget.release()
                if not upstream and state["lose"]:
                    # The server answered; the client never hears it.
                    self.counts["answersLost"] += 1
                    self.event("answer lost")
                    state["lose"] = False
                    abort_both()
                    break
                writer.write(data)
                self.counts[counter] += len(data)
                await writer.drain()
        except (ConnectionError, OSError):
            abort_both()
        finally:
            reading.cancel()


async def watch_parent(parent, stop):
    while not stop.is_set():
        if os.getppid() != parent:
            stop.set()
        await asyncio.sleep(0.5)


async def main():
    args = parse()
    parent = os.getppid()
    try:  # Linux: SIGTERM when the parent dies (the watcher below covers the rest).
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    relay = Relay(args)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for number in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(number, stop.set)
    host, port = args.listen
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    server = await asyncio.start_server(relay.handle, host, port, family=family,
                                        reuse_address=True)
    bound = server.sockets[0].getsockname()
    print(f"listening on {bound[0]}:{bound[1]}", flush=True)
    watcher = asyncio.create_task(watch_parent(parent, stop))
    try:
        await asyncio.wait_for(stop.wait(), timeout=args.lifetime)
    except asyncio.TimeoutError:
        pass
    watcher.cancel()
    server.close()
    for writer in list(relay.writers):
        writer.transport.abort()
    for task in list(relay.tasks):
        task.cancel()
    await asyncio.gather(*relay.tasks, return_exceptions=True)
    print(json.dumps(relay.counts), file=sys.stderr, flush=True)


if __name__ == "__main__":
    asyncio.run(main())
