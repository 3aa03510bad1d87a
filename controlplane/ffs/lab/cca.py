# SPDX-License-Identifier: Apache-2.0
"""Real TCP for the CCA experiment: a source with a chosen congestion control (reno, cubic, bbr — what
the kernel offers), a sink that reports bytes per source per second, and a UDP echo pair that
samples the round-trip time through the bottleneck.

    python -m ffs.lab.cca sink --port 5201 --duration 20
    python -m ffs.lab.cca source --dst 10.0.3.1 --port 5201 --cca bbr --duration 20
    python -m ffs.lab.cca echo --port 7
    python -m ffs.lab.cca probe --dst 10.0.3.1 --port 7 --interval 0.1 --duration 20
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time


def sink(port: int, duration_s: float, interval_s: float = 1.0) -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("0.0.0.0", port))
    srv.listen(8)
    srv.settimeout(0.5)
    counts: dict[str, int] = {}
    lock = threading.Lock()
    end = time.monotonic() + duration_s

    def reader(conn: socket.socket, peer: str) -> None:
        conn.settimeout(0.5)
        while time.monotonic() < end:
            try:
                data = conn.recv(1 << 16)
            except TimeoutError:
                continue
            except OSError:
                break
            if not data:
                break
            with lock:
                counts[peer] = counts.get(peer, 0) + len(data)
        conn.close()

    def acceptor() -> None:
        while time.monotonic() < end:
            try:
                conn, (peer, _) = srv.accept()
            except TimeoutError:
                continue
            threading.Thread(target=reader, args=(conn, peer), daemon=True).start()

    threading.Thread(target=acceptor, daemon=True).start()
    start = time.monotonic()
    nxt = start + interval_s
    while time.monotonic() < end:
        time.sleep(max(0.0, nxt - time.monotonic()))
        with lock:
            snap = {k: v * 8 / interval_s for k, v in counts.items()}
            counts.clear()
        print(json.dumps({"t": round(nxt - start, 3), "rates_bps": snap}), flush=True)
        nxt += interval_s


def source(dst: str, port: int, cca: str, duration_s: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca.encode())
    s.settimeout(min(5.0, duration_s))
    s.connect((dst, port))
    buf = bytes(1 << 16)
    end = time.monotonic() + duration_s
    s.settimeout(1.0)
    while time.monotonic() < end:
        try:
            s.send(buf)
        except TimeoutError:
            continue
        except OSError:
            break
    s.close()


def echo(port: int, duration_s: float) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("0.0.0.0", port))
    s.settimeout(0.5)
    end = time.monotonic() + duration_s
    while time.monotonic() < end:
        try:
            data, addr = s.recvfrom(2048)
            s.sendto(data, addr)
        except TimeoutError:
            pass


def probe(dst: str, port: int, interval_s: float, duration_s: float, wait_s: float = 2.0) -> None:
    """One probe every `interval_s`; each echo is matched to its probe by sequence number, so a round
    trip longer than the interval (a deep queue) is measured, not lost. Echoes are awaited `wait_s`
    after the last probe. One JSON line per echo, in the order they return."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent: dict[int, float] = {}
    start = time.monotonic()
    end = start + duration_s
    seq = 0
    next_send = start
    while True:
        now = time.monotonic()
        if now >= end + wait_s or (now >= end and not sent):
            break
        if now >= next_send and now < end:
            sent[seq] = now
            s.sendto(seq.to_bytes(8, "big") + bytes(56), (dst, port))
            seq += 1
            next_send += interval_s
        s.settimeout(max(1e-4, (next_send if now < end else end + wait_s) - time.monotonic()))
        try:
            data, _ = s.recvfrom(2048)
        except TimeoutError:
            continue
        t0 = sent.pop(int.from_bytes(data[:8], "big"), None)
        if t0 is not None:
            print(json.dumps({"t": round(t0, 4), "rtt_ms": round((time.monotonic() - t0) * 1e3, 3)}), flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.lab.cca")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("sink")
    a.add_argument("--port", type=int, default=5201)
    a.add_argument("--duration", type=float, default=10)
    b = sub.add_parser("source")
    b.add_argument("--dst", required=True)
    b.add_argument("--port", type=int, default=5201)
    b.add_argument("--cca", default="cubic")
    b.add_argument("--duration", type=float, default=10)
    c = sub.add_parser("echo")
    c.add_argument("--port", type=int, default=7)
    c.add_argument("--duration", type=float, default=10)
    d = sub.add_parser("probe")
    d.add_argument("--dst", required=True)
    d.add_argument("--port", type=int, default=7)
    d.add_argument("--interval", type=float, default=0.1)
    d.add_argument("--duration", type=float, default=10)
    x = ap.parse_args(argv)
    try:
        if x.cmd == "sink":
            sink(x.port, x.duration)
        elif x.cmd == "source":
            source(x.dst, x.port, x.cca, x.duration)
        elif x.cmd == "echo":
            echo(x.port, x.duration)
        else:
            probe(x.dst, x.port, x.interval, x.duration)
    except OSError as e:
        print(f"ffs.lab.cca: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
