"""The transfer on real sockets: a raw IPv4 socket of protocol 253 (the kernel writes the IPv4
header; we write the shim, UDP and the transfer's message, `ffs.endpoint.wire`), driven by the same
state machines as the virtual-time runs. Needs root or CAP_NET_RAW (a raw socket).

    send_transfer("10.0.3.1", 5301, data, controller)     # returns a TransferReport
    receive_transfer(5301)                                # returns a ReceiveReport and the bytes
"""

from __future__ import annotations

import errno
import json
import math
import os
import select
import socket
import time
from dataclasses import asdict, dataclass
from typing import IO, Callable

from ffs import constants as C
from ffs.endpoint.rate import Controller, LeakyBucket
from ffs.endpoint.transport import Receiver, Sender
from ffs.endpoint.wire import OVERHEAD, Ack, Data, WireError, ack_datagram, data_datagram, parse_ip

MAX_IP_SIZE = 9000
DEFAULT_IP_SIZE = 1400  # fits hosts whose MTU leaves room for a shim inserted on the way
IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)


class TransferError(Exception):
    """A transfer could not run (bad argument, no raw socket, timed out); one line."""


def open_raw() -> socket.socket:
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, C.IP_PROTO_FFS)
    except PermissionError:
        raise TransferError("the FFS shim needs a raw socket (IP protocol 253): run as root or with CAP_NET_RAW") from None
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    # never fragment: a fragment without the shim would be a different packet to the node (and
    # count twice); a packet larger than the path MTU fails with EMSGSIZE instead
    s.setsockopt(socket.IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO)
    s.setblocking(False)
    return s


@dataclass
class TransferReport:
    scheme: str
    bytes: int
    packets: int
    transfer_s: float
    goodput_bps: float
    sent: int
    retransmitted: int
    lost: int
    loss: float  # packets declared lost / packets sent
    echoes: int
    rtt_min_ms: float | None
    final_rate_bps: float
    indicator_bps: float | None

    def to_json(self) -> dict:
        return asdict(self)


def send_transfer(dst: str, port: int, data: bytes, controller: Controller, *, ip_size: int = DEFAULT_IP_SIZE, sport: int = 0,
                  timeout_s: float = 60.0, progress: Callable[[int, int], None] | None = None,
                  log: IO[str] | None = None, log_interval_s: float = 0.1) -> TransferReport:
    """Send `data` to a receiver at dst:port; returns when every byte is acknowledged. `log` gets a
    JSON line every `log_interval_s`: time, controller rate, IP bit/s handed to the network."""
    if not OVERHEAD < ip_size <= MAX_IP_SIZE:
        raise TransferError(f"--size must be {OVERHEAD + 1}..{MAX_IP_SIZE} IP bytes")
    if not data:
        raise TransferError("nothing to send (0 bytes)")
    sock = open_raw()
    sport = sport or 40000 + os.getpid() % 20000
    xfer = int.from_bytes(os.urandom(4), "big") or 1
    payload = ip_size - OVERHEAD
    t0 = time.monotonic()
    snd = Sender(len(data), payload, controller, xfer=xfer, bucket=LeakyBucket(depth_bytes=2 * ip_size))
    last_log, sent_bytes = t0, 0
    try:
        sock.connect((dst, 0))
    except OSError as e:
        sock.close()
        raise TransferError(f"cannot reach {dst}: {e.strerror or e}") from None
    try:
        while not snd.done:
            now = time.monotonic()
            if now - t0 > timeout_s:
                raise TransferError(f"timed out after {timeout_s:g} s with {snd.cum}/{snd.npkts} packets acknowledged")
            _drain_acks(sock, snd, dst, port, sport)
            snd.on_timer(now)
            for _ in range(64):  # what is due now, a few at a time
                now = time.monotonic()
                due = snd.due(now)
                if due is None or due > now:
                    break
                seq = snd.send(now)
                chunk = data[seq * payload:(seq + 1) * payload]
                try:
                    sock.send(data_datagram(Data(xfer, seq, len(data), payload, chunk), sport, port))
                    sent_bytes += OVERHEAD + len(chunk)
                except BlockingIOError:
                    pass  # the host's queue is full: lost as on a wire, the transport retransmits
                except OSError as e:
                    if e.errno == errno.EMSGSIZE:
                        raise TransferError(f"--size {ip_size} exceeds the path MTU toward {dst}: use a smaller --size") from None
                    raise
            if progress is not None:
                progress(snd.cum, snd.npkts)
            if log is not None and now - last_log >= log_interval_s:
                log.write(json.dumps({"t": round(now - t0, 4), "rate_bps": controller.rate(now),
                                      "send_bps": sent_bytes * 8 / (now - last_log)}) + "\n")
                last_log, sent_bytes = now, 0
            waits = [x - now for x in (snd.due(now), snd.timer_due()) if x is not None]
            wait = min([0.05, *waits])
            if wait > 0:
                select.select([sock], [], [], wait)
    finally:
        sock.close()
    end = snd.stats.finish or time.monotonic()
    dur = max(end - (snd.stats.first_send or t0), 1e-9)
    st = snd.stats
    return TransferReport(controller.name, len(data), snd.npkts, dur, len(data) * 8 / dur, st.sent, st.retransmitted,
                          st.lost, st.lost / st.sent if st.sent else 0.0, st.echoes,
                          None if math.isinf(st.rtt_min) else float(st.rtt_min) * 1e3, controller.rate(end),
                          controller.indicator())


def _drain_acks(sock: socket.socket, snd: Sender, dst: str, port: int, sport: int) -> None:
    """Every ACK waiting on the socket, for this transfer (the raw socket sees all protocol-253
    traffic of the host: our own data on loopback, other transfers)."""
    for _ in range(1024):
        try:
            pkt, (src, _) = sock.recvfrom(65535)
        except (BlockingIOError, InterruptedError):
            return
        try:
            d = parse_ip(pkt, src)
        except WireError:
            continue
        if not isinstance(d.msg, Ack) or d.dport != sport or d.sport != port or src != dst:
            continue
        echo = d.shim.rri_echo if d.shim.flags & C.FLAG_ECHO else None
        snd.on_ack(time.monotonic(), d.msg, echo)


@dataclass
class ReceiveReport:
    source: str
    bytes: int
    packets: int
    duplicates: int
    transfer_s: float
    goodput_bps: float
    last_rri: int | None

    def to_json(self) -> dict:
        return asdict(self)


def receive_transfer(port: int, *, timeout_s: float = 60.0, linger_s: float = 1.0, keep: bool = True,
                     progress: Callable[[int, int], None] | None = None) -> tuple[ReceiveReport, bytes]:
    """Wait for one transfer to `port`, acknowledge every data packet (cumulative + selective, the
    latest rri echoed with flag E), return when it is complete and the sender has been quiet for
    `linger_s` (so a lost final ACK is answered again)."""
    sock = open_raw()
    rcv = Receiver(keep=keep)
    peer: tuple[str, int] | None = None
    start = time.monotonic()
    last_data = start
    try:
        while True:
            now = time.monotonic()
            if rcv.complete and now - last_data >= linger_s:
                break
            if not rcv.complete and now - (last_data if peer else start) > timeout_s:
                what = f"{rcv.cum}/{rcv.npkts} packets" if peer else "no data"
                raise TransferError(f"timed out after {timeout_s:g} s ({what})")
            select.select([sock], [], [], 0.05)
            for _ in range(1024):
                try:
                    pkt, (src, _) = sock.recvfrom(65535)
                except (BlockingIOError, InterruptedError):
                    break
                try:
                    d = parse_ip(pkt, src)
                except WireError:
                    continue
                if not isinstance(d.msg, Data) or d.dport != port:
                    continue
                if peer is None:
                    peer = (src, d.sport)
                elif (src, d.sport) != peer:
                    continue  # one transfer per receiver
                now = time.monotonic()
                last_data = now
                rri = d.shim.rri if d.shim.flags & C.FLAG_RI else None
                ack = rcv.on_data(now, d.msg.xfer, d.msg.seq, d.msg.total, d.msg.payload, d.msg.psize, rri)
                if ack is not None:
                    try:
                        sock.sendto(ack_datagram(ack, rcv.latest_rri, port, d.sport), (src, 0))
                    except BlockingIOError:
                        pass
                if progress is not None and rcv.npkts:
                    progress(rcv.cum, rcv.npkts)
    finally:
        sock.close()
    dur = max((rcv.complete_at or time.monotonic()) - (rcv.first or start), 1e-9)
    total = rcv.total
    return (ReceiveReport(peer[0] if peer else "", total, rcv.packets, rcv.duplicates, dur, total * 8 / dur, rcv.latest_rri),
            rcv.data() if keep else b"")
