# SPDX-License-Identifier: Apache-2.0
"""Paced UDP traffic for live runs: a sender at a given line rate, optionally carrying the FFS
shim with a label, and a receiver that reports the line rate it gets from each source, one JSON
line per interval. Both run inside a host's namespace (`ip netns exec NS python -m ffs.lab.traffic ...`).

    python -m ffs.lab.traffic send --dst 10.0.3.1 --rate 8Mbps --size 1250 --duration 20 [--label 2.0 --ri]
    python -m ffs.lab.traffic send --dst 10.0.3.1 --rate 20Mbps --ip-len 20      (an attack: the IPv4
        total length says 20 whatever the size; the frames go out on a packet socket, docs/security.md)
    python -m ffs.lab.traffic recv --port 5001 --interval 1 --duration 25 [--ffs]

Sizes count IP bytes (the IP header and, when present, the shim); rates are line rates, as every
rate of FFS is (spec §4): a packet of `size` bytes costs an Ethernet wire `wire_bytes(size)` (its
frame with FCS, padded to the minimum, plus preamble and gap). The sender hands the
kernel up to 64 packets per system call (sendmmsg), so one Python process can offer several hundred
thousand packets per second on veth without stealing the switch's CPU; pacing is per batch, to the
packet owed by now.
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import ipaddress
import json
import select
import socket
import struct
import sys
import time
from dataclasses import dataclass
from typing import IO

from ffs.core import constants
from ffs.core.frames import ipv4_checksum, shim
from ffs.core.labels import encode
from ffs.core.tables import wire_len
from ffs.core.units import parse_rate

IP_HDR = 20
UDP_HDR = 8
IP_UDP = IP_HDR + UDP_HDR
BATCH = 64  # packets per sendmmsg
MAX_SIZE = 9000


class TrafficError(Exception):
    """Bad arguments or a socket that cannot be opened; the message is one line."""


def wire_bytes(ip_size: int) -> int:
    """What an IPv4 packet of `ip_size` bytes costs an Ethernet port (no 802.1Q tag)."""
    return wire_len(constants.ETH_HDR_LEN + ip_size + constants.FCS_LEN)


# --- sendmmsg through libc: one system call for a batch of identical datagrams ----------------


class _Iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


class _Msghdr(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("namelen", ctypes.c_uint32),
        ("iov", ctypes.POINTER(_Iovec)),
        ("iovlen", ctypes.c_size_t),
        ("control", ctypes.c_void_p),
        ("controllen", ctypes.c_size_t),
        ("flags", ctypes.c_int),
    ]


class _Mmsghdr(ctypes.Structure):
    _fields_ = [("hdr", _Msghdr), ("len", ctypes.c_uint)]


def _libc_sendmmsg():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        fn = libc.sendmmsg
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.POINTER(_Mmsghdr), ctypes.c_uint, ctypes.c_int]
    fn.restype = ctypes.c_int
    return fn


STAMP = b"FFSt"  # a send time follows: 8 bytes of CLOCK_MONOTONIC ns, the clock every namespace shares
STAMP_LEN = len(STAMP) + 8


class _Batcher:
    """Sends `n` copies of one datagram on a connected socket: sendmmsg, or send() in a loop. With
    `stamp_at`, each batch carries its send time at that offset (STAMP, then the ns)."""

    def __init__(self, sock: socket.socket, datagram: bytes, stamp_at: int | None = None) -> None:
        self.sock, self.datagram, self.stamp_at = sock, datagram, stamp_at
        self.stamped_ns: int | None = None  # the stamp of the last batch
        self._sendmmsg = _libc_sendmmsg()
        if self._sendmmsg is not None:
            self._buf = ctypes.create_string_buffer(datagram, len(datagram))
            self._iov = _Iovec(ctypes.cast(self._buf, ctypes.c_void_p), len(datagram))
            self._vec = (_Mmsghdr * BATCH)()
            for m in self._vec:
                m.hdr.iov = ctypes.pointer(self._iov)
                m.hdr.iovlen = 1

    def send(self, n: int) -> int:
        """Hand up to `n` (≤ BATCH) datagrams to the kernel; returns how many it took."""
        if self.stamp_at is not None:
            self.stamped_ns = time.monotonic_ns()
            stamp = STAMP + struct.pack("!Q", self.stamped_ns)
            at = self.stamp_at
            self.datagram = self.datagram[:at] + stamp + self.datagram[at + STAMP_LEN :]
            if self._sendmmsg is not None:
                ctypes.memmove(ctypes.addressof(self._buf) + at, stamp, STAMP_LEN)
        if self._sendmmsg is not None:
            r = self._sendmmsg(self.sock.fileno(), self._vec, n, socket.MSG_DONTWAIT)
            return max(r, 0)  # -1: the queue is full right now (EAGAIN/ENOBUFS): nothing went out
        done = 0
        for _ in range(n):
            try:
                self.sock.send(self.datagram, socket.MSG_DONTWAIT)
                done += 1
            except OSError:
                break
        return done


# --- sender ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SendReport:
    offered_packets: int  # packets due at the rate over the duration
    sent_packets: int  # packets the kernel accepted (the rest found its queue full: lost, as on a wire)
    duration_s: float
    # with --stamp: packets sent per millisecond of CLOCK_MONOTONIC (the stamps' clock), for a
    # receiver's --by-send-time lines: what was lost in a window, whatever the sender's own pace
    sent_by_ms: dict[int, int] | None = None
    started_ms: int = 0  # its first packet's time on CLOCK_MONOTONIC (an attack's onset, for a receiver's bins)

    def to_json(self, size: int) -> dict:
        out: dict = {
            "started_ms": self.started_ms,
            "offered_packets": self.offered_packets,
            "sent_packets": self.sent_packets,
            "sent_bps": round(self.sent_packets * wire_bytes(size) * 8 / self.duration_s, 1)
            if self.duration_s
            else 0.0,
        }
        if self.sent_by_ms is not None:
            out["sent_by_ms"] = {str(k): v for k, v in sorted(self.sent_by_ms.items())}
        return out


def ffs_datagram(size: int, rf_code: int, flags: int, sport: int, dport: int) -> bytes:
    """What follows the IPv4 header of a `size`-byte packet with the shim: shim, UDP header, zeros.
    The UDP checksum is 0 (none, legal over IPv4), so stripping the shim leaves a valid datagram."""
    data = size - IP_HDR - constants.SHIM_LEN - UDP_HDR
    if data < 0:
        raise TrafficError(
            f"--size {size} is smaller than IPv4 + shim + UDP headers ({IP_HDR + constants.SHIM_LEN + UDP_HDR})"
        )
    return shim(rf_code, flags, 17) + struct.pack("!HHHH", sport, dport, UDP_HDR + data, 0) + bytes(data)


def open_sender(
    dst: str, port: int, size: int, rf_code: int | None, flags: int, sport: int
) -> tuple[socket.socket, bytes]:
    if rf_code is None:  # plain UDP: the kernel adds IP and UDP headers
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if sport:
            s.bind(("0.0.0.0", sport))
        datagram = bytes(size - IP_UDP)
    else:  # raw IP protocol 253: the kernel adds the IPv4 header, we write shim + UDP
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_RAW, constants.IP_PROTO_FFS)
        except PermissionError:
            raise TrafficError(
                "sending with the FFS shim needs a raw socket: run as root (or with CAP_NET_RAW)"
            ) from None
        datagram = ffs_datagram(size, rf_code, flags, sport or 4000, port)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    s.connect((dst, port))
    return s, datagram


def _ip_json(*args: str) -> list[dict]:
    import subprocess

    try:
        out = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TrafficError(f"ip {' '.join(args)}: {e}") from None
    if out.returncode != 0:
        raise TrafficError(f"ip {' '.join(args)}: {out.stderr.strip() or 'failed'}")
    return json.loads(out.stdout or "[]")


def next_hop(dst: str) -> tuple[str, str, bytes, bytes]:
    """(interface, source address, source MAC, next hop's MAC) toward `dst`, from the routing and
    neighbour tables; an unresolved neighbour is resolved by one UDP datagram to the discard port."""
    routes = _ip_json("route", "get", dst)
    if not routes or "dev" not in routes[0]:
        raise TrafficError(f"no route to {dst}")
    dev, hop, src = routes[0]["dev"], routes[0].get("gateway", dst), routes[0].get("prefsrc", "0.0.0.0")
    with open(f"/sys/class/net/{dev}/address") as f:
        src_mac = bytes.fromhex(f.read().strip().replace(":", ""))
    end = time.monotonic() + 2
    while True:
        for n in _ip_json("neigh", "show", "to", hop, "dev", dev):
            if n.get("lladdr") and "FAILED" not in n.get("state", []):
                return dev, src, src_mac, bytes.fromhex(n["lladdr"].replace(":", ""))
        if time.monotonic() > end:
            raise TrafficError(f"no neighbour entry for {hop} on {dev}")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
            u.sendto(b"", (dst, 9))
        time.sleep(0.1)


def lying_frame(
    src: str,
    dst: str,
    src_mac: bytes,
    dst_mac: bytes,
    size: int,
    ip_len: int,
    rf_code: int | None,
    flags: int,
    sport: int,
    dport: int,
) -> bytes:
    """An Ethernet frame carrying a `size`-byte IPv4 packet whose total length field says `ip_len`
    (header checksum valid), UDP inside, with the shim first when `rf_code` is given."""
    if rf_code is None:
        body, proto = struct.pack("!HHHH", sport, dport, size - IP_UDP, 0) + bytes(size - IP_UDP), 17
    else:
        body, proto = ffs_datagram(size, rf_code, flags, sport, dport), constants.IP_PROTO_FFS
    hdr = bytearray(
        struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            0,
            ip_len,
            0,
            0x4000,
            64,
            proto,
            0,
            ipaddress.IPv4Address(src).packed,
            ipaddress.IPv4Address(dst).packed,
        )
    )
    hdr[10:12] = struct.pack("!H", ipv4_checksum(hdr))
    frame = dst_mac + src_mac + b"\x08\x00" + bytes(hdr) + body
    return frame + bytes(max(0, 60 - len(frame)))


def open_liar(
    dst: str, port: int, size: int, ip_len: int, rf_code: int | None, flags: int, sport: int
) -> tuple[socket.socket, bytes]:
    """A packet socket: the kernel's IP layer would rewrite the total length (raw(7): always filled
    in), so the whole frame is written here."""
    dev, src, src_mac, dst_mac = next_hop(dst)
    try:
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    except PermissionError:
        raise TrafficError("--ip-len needs a packet socket: run as root (or with CAP_NET_RAW)") from None
    s.bind((dev, 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 20)
    return s, lying_frame(src, dst, src_mac, dst_mac, size, ip_len, rf_code, flags, sport or 4000, port)


def send(
    dst: str,
    port: int,
    rate_bps: float,
    size: int,
    duration_s: float,
    *,
    rf_code: int | None = None,
    flags: int = 0,
    sport: int = 0,
    ip_len: int | None = None,
    pulse: tuple[float, float] | None = None,
    stamp: bool = False,
    catch_up: bool = True,
) -> SendReport:
    """Offer `size`-byte IP packets to `dst` at the line rate `rate_bps` for `duration_s`; with
    `ip_len`, their IPv4 total length field says ip_len instead of size; with `pulse` (on, every),
    only in the first `on` seconds of every `every` (an on-off flood, the rate while on); with
    `stamp`, every packet carries its send time for a receiver that bins by it. After a stall (the
    machine's, the socket's) the sender sends what it owes at once, unless `catch_up` is False: then
    it skips it (offered, not sent), so that it never sends above `rate_bps` on any time scale, as
    a sender that stays within its share must."""
    if rate_bps <= 0:
        raise TrafficError("--rate must be positive")
    if pulse is not None and not 0 < pulse[0] <= pulse[1]:
        raise TrafficError("--pulse ON,EVERY needs 0 < ON <= EVERY seconds")
    if ip_len is None:
        sock, datagram = open_sender(dst, port, size, rf_code, flags, sport)
    else:
        sock, datagram = open_liar(dst, port, size, ip_len, rf_code, flags, sport)
    at = None
    if stamp:  # the UDP payload's first bytes: after the shim and UDP header when the shim is ours
        if ip_len is not None or size - IP_UDP - (0 if rf_code is None else constants.SHIM_LEN) < STAMP_LEN:
            raise TrafficError(f"--stamp needs a plain UDP payload of at least {STAMP_LEN} bytes")
        at = 0 if rf_code is None else constants.SHIM_LEN + UDP_HDR
    batcher = _Batcher(sock, datagram, at)
    by_ms: dict[int, int] = {}
    gap = wire_bytes(size) * 8 / rate_bps
    start, started_ms = time.perf_counter(), time.monotonic_ns() // 1_000_000
    due_total = _owed(duration_s, gap, pulse)
    offered = sent = 0
    try:
        while offered < due_total:
            now = time.perf_counter()
            due = min(_owed(now - start, gap, pulse) + 1, due_total) - offered  # packets owed by now
            if due <= 0:
                time.sleep(0.0005 if pulse is not None else min(start + offered * gap - now, 0.01))
                continue
            if not catch_up and due > 1:
                offered += due - 1  # what the stall owed is skipped, not sent in a burst
                due = 1
            n = min(due, BATCH)
            took = batcher.send(n)
            sent += took
            offered += n
            if batcher.stamped_ns is not None and took:
                ms = batcher.stamped_ns // 1_000_000
                by_ms[ms] = by_ms.get(ms, 0) + took
    finally:
        sock.close()
    return SendReport(offered, sent, duration_s, by_ms if stamp else None, started_ms)


def _pulse(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        on, every = (float(x) for x in text.split(","))
    except ValueError:
        raise TrafficError(f"--pulse {text}: want ON,EVERY in seconds, e.g. 0.02,0.25") from None
    return on, every


def _owed(t: float, gap: float, pulse: tuple[float, float] | None) -> int:
    """Packets a sender at one per `gap` seconds owes `t` seconds after it started, sending only in
    the first `on` of every `every` seconds with `pulse` = (on, every)."""
    if pulse is None:
        return int(t / gap)
    on, every = pulse
    k, into = divmod(t, every)
    return int(k) * int(on / gap) + int(min(into, on) / gap)


# --- receiver -------------------------------------------------------------------------------


def recv(
    port: int,
    interval_s: float,
    duration_s: float,
    out: IO[str] = sys.stdout,
    ffs: bool = False,
    by_send_time: bool = False,
) -> None:
    """Every `interval_s`, one JSON line: per source address, the line rate (bit/s) and packets received
    (UDP to `port`; with `ffs`, also packets that still carry the shim, whatever follows it). With
    `by_send_time`, the packets a sender stamped (`send --stamp`) count in the interval they were
    sent in, not the one they arrived in (a queue's delay moves arrivals, not what got through):
    every line comes at the end, and unstamped packets are not counted."""
    if by_send_time:
        return _recv_by_send_time(port, interval_s, duration_s, out)
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    udp.bind(("0.0.0.0", port))
    socks = [udp]
    if ffs:
        try:
            raw = socket.socket(socket.AF_INET, socket.SOCK_RAW, constants.IP_PROTO_FFS)
        except PermissionError:
            raise TrafficError("--ffs needs a raw socket: run as root (or with CAP_NET_RAW)") from None
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        socks.append(raw)
    for s in socks:
        s.setblocking(False)
    start = time.monotonic()
    next_report = start + interval_s
    nbytes: dict[str, int] = {}
    npkts: dict[str, int] = {}
    shimmed: dict[str, int] = {}
    try:
        while True:
            ready, _, _ = select.select(socks, [], [], max(0.0, min(0.05, next_report - time.monotonic())))
            for s in ready:
                for _ in range(256):
                    try:
                        data, (src, _) = s.recvfrom(65535)
                    except BlockingIOError:
                        break
                    if s is udp:
                        size = len(data) + IP_UDP
                    else:  # a raw IPv4 socket hands over the IP header too
                        size = len(data)
                        shimmed[src] = shimmed.get(src, 0) + 1
                    nbytes[src] = nbytes.get(src, 0) + wire_bytes(size)
                    npkts[src] = npkts.get(src, 0) + 1
            now = time.monotonic()
            if now >= next_report:
                rec = {
                    "t": round(next_report - start, 3),
                    "rates_bps": {k: v * 8 / interval_s for k, v in sorted(nbytes.items())},
                    "packets": dict(sorted(npkts.items())),
                }
                if ffs:
                    rec["with_shim"] = dict(sorted(shimmed.items()))
                out.write(json.dumps(rec) + "\n")
                out.flush()
                nbytes, npkts, shimmed = {}, {}, {}
                next_report += interval_s
                if now - start >= duration_s:
                    return
    finally:
        for s in socks:
            s.close()


def _recv_by_send_time(port: int, interval_s: float, duration_s: float, out: IO[str]) -> None:
    """recv --by-send-time: bins of `interval_s` on the stamps' clock (CLOCK_MONOTONIC, whole
    multiples of the interval, so that a sender's per-millisecond counts add up into them)."""
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    udp.bind(("0.0.0.0", port))
    udp.settimeout(0.05)
    width = round(interval_s * 1e9)
    start = time.monotonic_ns()
    first = start // width + 1
    bins: dict[int, dict[str, list[int]]] = {}  # bin -> source -> [bytes, packets]
    try:
        while time.monotonic_ns() - start < duration_s * 1e9:
            try:
                data, (src, _) = udp.recvfrom(65535)
            except TimeoutError:
                continue
            if len(data) < STAMP_LEN or data[: len(STAMP)] != STAMP:
                continue
            (sent,) = struct.unpack("!Q", data[len(STAMP) : STAMP_LEN])
            cell = bins.setdefault(sent // width, {}).setdefault(src, [0, 0])
            cell[0] += wire_bytes(len(data) + IP_UDP)
            cell[1] += 1
    finally:
        udp.close()
    for k in range(first, first + int(duration_s / interval_s)):
        row = bins.get(k, {})
        rec = {
            "t": round((k - first + 1) * interval_s, 6),
            "from_ms": k * width // 1_000_000,  # the bin's start on the stamps' clock, as senders count
            "rates_bps": {src: v[0] * 8 / interval_s for src, v in sorted(row.items())},
            "packets": {src: v[1] for src, v in sorted(row.items())},
        }
        out.write(json.dumps(rec) + "\n")
    out.flush()


# --- command line ---------------------------------------------------------------------------


def _label_code(text: str | None) -> int | None:
    """--label: a relative label r/f as a number (2.0), or a raw code (0x8000)."""
    if text is None:
        return None
    try:
        if text.lower().startswith("0x"):
            code = int(text, 16)
            if not 0 <= code <= constants.CODE_MAX:
                raise ValueError
            return code
        x = float(text)
        if not x > 0:
            raise ValueError
        return encode(x)
    except ValueError:
        raise TrafficError(f"--label wants a positive number (r/f) or a code 0x0000..0xFFFF, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.lab.traffic", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("send", help="paced UDP to one destination")
    a.add_argument("--dst", required=True, help="destination IPv4 address")
    a.add_argument("--port", type=int, default=5001, help="destination UDP port")
    a.add_argument("--sport", type=int, default=0, help="source UDP port (default: any)")
    a.add_argument("--rate", required=True, help="line rate (frames with preamble and gap), e.g. 8Mbps")
    a.add_argument("--size", type=int, default=1250, help="IP packet size in bytes")
    a.add_argument("--duration", type=float, default=10.0, help="seconds")
    a.add_argument("--label", default=None, help="send the FFS shim with this label r/f (or code 0xNNNN)")
    a.add_argument("--ri", action="store_true", help="with --label: set the R flag (nodes update rri)")
    a.add_argument(
        "--ip-len",
        type=int,
        default=None,
        metavar="N",
        help="an attack: the IPv4 total length field says N (0..65535) whatever --size (packet socket)",
    )
    a.add_argument(
        "--pulse",
        default=None,
        metavar="ON,EVERY",
        help="an on-off flood: send only in the first ON seconds of every EVERY seconds (at --rate while on)",
    )
    a.add_argument("--stamp", action="store_true", help="carry each packet's send time (for recv --by-send-time)")
    a.add_argument(
        "--no-catch-up",
        action="store_true",
        help="after a stall skip what is owed instead of sending it in a burst (never above --rate)",
    )
    b = sub.add_parser("recv", help="per-source rates, one JSON line per interval")
    b.add_argument("--port", type=int, default=5001)
    b.add_argument("--interval", type=float, default=1.0)
    b.add_argument("--duration", type=float, default=10.0)
    b.add_argument("--ffs", action="store_true", help="also count packets that still carry the shim")
    b.add_argument(
        "--by-send-time",
        action="store_true",
        help="count stamped packets (send --stamp) in the interval they were sent in; all lines at the end",
    )
    args = ap.parse_args(argv)
    try:
        if args.cmd == "send":
            if not IP_UDP <= args.size <= MAX_SIZE:
                raise TrafficError(f"--size must be {IP_UDP}..{MAX_SIZE} bytes")
            if args.ri and args.label is None:
                raise TrafficError("--ri needs --label (the R flag lives in the shim)")
            if args.ip_len is not None and not 0 <= args.ip_len <= 0xFFFF:
                raise TrafficError(f"--ip-len must be 0..65535 (the IPv4 total length field), got {args.ip_len}")
            rep = send(
                args.dst,
                args.port,
                parse_rate(args.rate),
                args.size,
                args.duration,
                rf_code=_label_code(args.label),
                flags=constants.FLAG_RI if args.ri else 0,
                sport=args.sport,
                ip_len=args.ip_len,
                pulse=_pulse(args.pulse),
                stamp=args.stamp,
                catch_up=not args.no_catch_up,
            )
            print(json.dumps(rep.to_json(args.size)))
        else:
            if args.interval <= 0:
                raise TrafficError("--interval must be positive")
            recv(args.port, args.interval, args.duration, ffs=args.ffs, by_send_time=args.by_send_time)
    except (TrafficError, ValueError, OSError) as e:
        print(f"ffs.lab.traffic: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
