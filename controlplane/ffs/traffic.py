"""Paced UDP traffic for live runs: a sender at a given IP-layer rate and a receiver that reports the
rate it gets from each source, one JSON line per interval.

    python -m ffs.traffic send --dst 10.0.3.1 --rate 8Mbps --size 1250 --duration 20
    python -m ffs.traffic recv --port 5001 --interval 1 --duration 25
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time

from ffs.units import parse_rate

IP_UDP = 28  # IPv4 + UDP header bytes


def send(dst: str, port: int, rate_bps: float, size: int, duration_s: float) -> int:
    """Send `size`-byte IP packets at `rate_bps` for `duration_s`; returns packets sent."""
    payload = bytes(max(0, size - IP_UDP))
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    gap = size * 8 / rate_bps
    start = time.perf_counter()
    sent = 0
    end = start + duration_s
    while True:
        now = time.perf_counter()
        if now >= end:
            break
        due = int((now - start) / gap) + 1 - sent  # packets owed by now: catch up in a burst
        for _ in range(min(due, 256)):
            try:
                s.sendto(payload, (dst, port))
            except OSError:
                pass  # a full queue: the packet is lost, as on a wire
            sent += 1
        sleep = start + sent * gap - time.perf_counter()
        if sleep > 0:
            time.sleep(min(sleep, 0.01))
    return sent


def recv(port: int, interval_s: float, duration_s: float, out=sys.stdout) -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", port))
    s.settimeout(0.05)
    start = time.monotonic()
    next_report = start + interval_s
    counts: dict[str, int] = {}
    while True:
        try:
            data, (src, _) = s.recvfrom(65535)
            counts[src] = counts.get(src, 0) + len(data) + IP_UDP
        except socket.timeout:
            pass
        now = time.monotonic()
        if now >= next_report:
            rates = {k: v * 8 / interval_s for k, v in sorted(counts.items())}
            out.write(json.dumps({"t": round(next_report - start, 3), "rates_bps": rates}) + "\n")
            out.flush()
            counts = {}
            next_report += interval_s
            if now - start >= duration_s:
                return


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.traffic")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("send")
    a.add_argument("--dst", required=True)
    a.add_argument("--port", type=int, default=5001)
    a.add_argument("--rate", required=True)
    a.add_argument("--size", type=int, default=1250)
    a.add_argument("--duration", type=float, default=10.0)
    b = sub.add_parser("recv")
    b.add_argument("--port", type=int, default=5001)
    b.add_argument("--interval", type=float, default=1.0)
    b.add_argument("--duration", type=float, default=10.0)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "send":
            if not 28 <= args.size <= 9000:
                raise ValueError("--size must be 28..9000 bytes")
            n = send(args.dst, args.port, parse_rate(args.rate), args.size, args.duration)
            print(json.dumps({"sent_packets": n}))
        else:
            recv(args.port, args.interval, args.duration)
    except (ValueError, OSError) as e:
        print(f"ffs.traffic: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
