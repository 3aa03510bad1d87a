# SPDX-License-Identifier: Apache-2.0
"""The transfer on real sockets: a raw IPv4 socket of protocol 253 (the kernel writes the IPv4
header; we write the shim, UDP and the transfer's message, `ffs.lab.endpoint.wire`), driven by the same
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
import struct
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from typing import IO

from ffs.core import constants
from ffs.lab.endpoint.rate import Controller, Echo, IndicatorCap, LeakyBucket, RateHistory, SendLog
from ffs.lab.endpoint.transport import Receiver, Sender
from ffs.lab.endpoint.wire import OVERHEAD, Ack, Data, Datagram, WireError, ack_datagram, data_datagram, parse_ip

MAX_IP_SIZE = 9000
DEFAULT_IP_SIZE = 1400  # fits hosts whose MTU leaves room for a shim inserted on the way
IP_MTU_DISCOVER = getattr(socket, "IP_MTU_DISCOVER", 10)
IP_PMTUDISC_DO = getattr(socket, "IP_PMTUDISC_DO", 2)


class TransferError(Exception):
    """A transfer could not run (bad argument, no raw socket, timed out); one line."""


def open_raw() -> socket.socket:
    try:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, constants.IP_PROTO_FFS)
    except PermissionError:
        raise TransferError(
            "the FFS shim needs a raw socket (IP protocol 253): run as root or with CAP_NET_RAW"
        ) from None
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


def send_transfer(
    dst: str,
    port: int,
    data: bytes,
    controller: Controller,
    *,
    ip_size: int = DEFAULT_IP_SIZE,
    sport: int = 0,
    timeout_s: float = 60.0,
    progress: Callable[[int, int], None] | None = None,
    log: IO[str] | None = None,
    log_interval_s: float = 0.1,
) -> TransferReport:
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
            now, n = _send_due(sock, snd, data, xfer, dst, port, sport, ip_size, now)
            sent_bytes += n
            if progress is not None:
                progress(snd.cum, snd.npkts)
            if log is not None and now - last_log >= log_interval_s:
                log.write(
                    json.dumps(
                        {
                            "t": round(now - t0, 4),
                            "rate_bps": controller.rate(now),
                            "send_bps": sent_bytes * 8 / (now - last_log),
                        }
                    )
                    + "\n"
                )
                last_log, sent_bytes = now, 0
            waits = [x - now for x in (snd.due(now), snd.timer_due()) if x is not None]
            wait = min([0.05, *waits])
            if wait > 0:
                select.select([sock], [], [], wait)
    finally:
        sock.close()
    return _transfer_report(controller, data, snd, t0)


def _send_due(
    sock: socket.socket, snd: Sender, data: bytes, xfer: int, dst: str, port: int, sport: int, ip_size: int, now: float
) -> tuple[float, int]:
    """Sends what is due now, up to 64 packets; (the time last looked at, IP bytes handed to the host)."""
    payload, sent_bytes = ip_size - OVERHEAD, 0
    for _ in range(64):  # what is due now, a few at a time
        now = time.monotonic()
        due = snd.due(now)
        if due is None or due > now:
            break
        seq = snd.send(now)
        chunk = data[seq * payload : (seq + 1) * payload]
        try:
            sock.send(data_datagram(Data(xfer, seq, len(data), payload, chunk), sport, port))
            sent_bytes += OVERHEAD + len(chunk)
        except BlockingIOError:
            pass  # the host's queue is full: lost as on a wire, the transport retransmits
        except OSError as e:
            if e.errno == errno.EMSGSIZE:
                raise TransferError(
                    f"--size {ip_size} exceeds the path MTU toward {dst}: use a smaller --size"
                ) from None
            raise
    return now, sent_bytes


def _transfer_report(controller: Controller, data: bytes, snd: Sender, t0: float) -> TransferReport:
    end = snd.stats.finish or time.monotonic()
    dur = max(end - (snd.stats.first_send or t0), 1e-9)
    st = snd.stats
    return TransferReport(
        controller.name,
        len(data),
        snd.npkts,
        dur,
        len(data) * 8 / dur,
        st.sent,
        st.retransmitted,
        st.lost,
        st.lost / st.sent if st.sent else 0.0,
        st.echoes,
        None if math.isinf(st.rtt_min) else float(st.rtt_min) * 1e3,
        controller.rate(end),
        controller.indicator(),
    )


def _datagrams(sock: socket.socket, limit: int) -> Iterator[tuple[str, Datagram]]:
    """(source address, parsed datagram) for each packet waiting on the non-blocking raw socket,
    at most `limit`; a packet that is not ours (another protocol-253 user, a torn frame) is skipped."""
    for _ in range(limit):
        try:
            pkt, (src, _) = sock.recvfrom(65535)
        except (BlockingIOError, InterruptedError):
            return
        try:
            yield src, parse_ip(pkt, src)
        except WireError:
            continue


def _drain_acks(sock: socket.socket, snd: Sender, dst: str, port: int, sport: int) -> None:
    """Every ACK waiting on the socket, for this transfer (the raw socket sees all protocol-253
    traffic of the host: our own data on loopback, other transfers)."""
    for src, d in _datagrams(sock, 1024):
        if not isinstance(d.msg, Ack) or d.dport != sport or d.sport != port or src != dst:
            continue
        echo = d.shim.rri_echo if d.shim.flags & constants.FLAG_ECHO else None
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


def receive_transfer(
    port: int,
    *,
    timeout_s: float = 60.0,
    linger_s: float = 1.0,
    keep: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> tuple[ReceiveReport, bytes]:
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
            for src, d in _datagrams(sock, 1024):
                if not isinstance(d.msg, Data) or d.dport != port:
                    continue
                if peer is None:
                    peer = (src, d.sport)
                elif (src, d.sport) != peer:
                    continue  # one transfer per receiver
                now = time.monotonic()
                last_data = now
                rri = d.shim.rri if d.shim.flags & constants.FLAG_RI else None
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
    return (
        ReceiveReport(
            peer[0] if peer else "", total, rcv.packets, rcv.duplicates, dur, total * 8 / dur, rcv.latest_rri
        ),
        rcv.data() if keep else b"",
    )


# --- partial deployment (App. C): the kernel's TCP in charge, the indicator only caps ---------------

SO_MAX_PACING_RATE = getattr(socket, "SO_MAX_PACING_RATE", 47)
TCP_INFO_BYTES_SENT = 200  # byte offset of tcpi_bytes_sent (u64) in struct tcp_info (linux/tcp.h)
TCP_INFO_TOTAL_RETRANS = 100  # tcpi_total_retrans (u32)
TCP_IP_OVERHEAD = 52 / 1448  # IPv4 + TCP (with timestamps) per payload byte of a full segment
PROBE_SIZE = 100  # IP bytes of a probe
PROBE_INTERVAL_S = 0.01


@dataclass
class PartialReport:
    scheme: str
    cca: str
    bytes: int
    transfer_s: float
    goodput_bps: float
    retransmitted: int | None
    probes: int
    echoes: int
    cap_bps: float | None  # the last pacing cap set from the indicator (None: never capped)
    cap_changes: int

    def to_json(self) -> dict:
        return asdict(self)


def _tcp_info(sock: socket.socket) -> tuple[int | None, int | None]:
    """(bytes sent, retransmissions) of a TCP socket, where the kernel reports them."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    sent = struct.unpack_from("Q", info, TCP_INFO_BYTES_SENT)[0] if len(info) >= TCP_INFO_BYTES_SENT + 8 else None
    retx = struct.unpack_from("I", info, TCP_INFO_TOTAL_RETRANS)[0] if len(info) >= TCP_INFO_TOTAL_RETRANS + 4 else None
    return sent, retx


def send_partial(
    dst: str,
    port: int,
    data: bytes,
    cca: str,
    *,
    settle_s: float = 0.25,
    measure_s: float = 0.1,
    timeout_s: float = 60.0,
    progress: Callable[[int, int], None] | None = None,
) -> PartialReport:
    """App. C: the data goes over a kernel TCP connection whose congestion control (`cca`) decides
    increases; beside it, a shim-carrying probe every 10 ms asks the nodes for the indicator
    (R flag), the receiver echoes it, and the sender caps the connection's pacing rate
    (SO_MAX_PACING_RATE) at the median indicator: the indicator can lower the rate, never raise it.
    A probe's RRI is relative to the pair's whole rate at the node (probe + TCP, both from this
    host), so it is applied to what this host sent over `measure_s` before the probe."""
    if not data:
        raise TransferError("nothing to send (0 bytes)")
    raw, tcp, t0 = _partial_connect(dst, port, cca)
    tcp.setblocking(False)
    sender = _PartialSender(raw, tcp, dst, port, data, t0, settle_s, measure_s)
    try:
        while True:
            now = time.monotonic()
            if now - t0 > timeout_s:
                raise TransferError(
                    f"timed out after {timeout_s:g} s with {sender.off}/{len(data)} bytes handed to TCP"
                )
            if sender.pump_tcp():
                break
            sender.account(now)
            sender.probe(now)
            sender.read_echoes(now)
            if progress is not None:
                progress(min(sender.off, len(data)), len(data))
            select.select(
                [raw, tcp],
                [tcp] if sender.off < len(data) else [],
                [],
                max(0.0, min(0.005, sender.next_probe - time.monotonic())),
            )
        dur = time.monotonic() - t0
        _, retx = _tcp_info(tcp)
    finally:
        tcp.close()
        raw.close()
    return PartialReport(
        "partial",
        cca,
        len(data),
        dur,
        len(data) * 8 / dur,
        retx,
        sender.probes,
        sender.echoes,
        sender.cap_set,
        sender.changes,
    )


def _partial_connect(dst: str, port: int, cca: str) -> tuple[socket.socket, socket.socket, float]:
    """The raw socket of the probes and the TCP connection under `cca`; (raw, tcp, the time connect began)."""
    raw = open_raw()
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        tcp.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cca.encode())
    except OSError:
        raw.close()
        tcp.close()
        raise TransferError(
            f"the kernel has no congestion control {cca!r} (see /proc/sys/net/ipv4/tcp_available_congestion_control)"
        ) from None
    t0 = time.monotonic()
    try:
        tcp.settimeout(5)
        tcp.connect((dst, port))
    except OSError as e:
        raw.close()
        tcp.close()
        raise TransferError(f"cannot connect to {dst}:{port}: {e.strerror or e}") from None
    return raw, tcp, t0


class _PartialSender:
    """send_partial's state between two turns of its loop: the bytes handed to TCP, what the host
    sent (TCP and probes), the probes in flight and the pacing cap set from their echoes."""

    def __init__(
        self,
        raw: socket.socket,
        tcp: socket.socket,
        dst: str,
        port: int,
        data: bytes,
        t0: float,
        settle_s: float,
        measure_s: float,
    ) -> None:
        self.raw, self.tcp, self.dst, self.port, self.data = raw, tcp, dst, port, data
        self.sport = 40000 + os.getpid() % 20000
        self.xfer = int.from_bytes(os.urandom(4), "big") or 1
        self.log = SendLog(measure_s)
        self.cap = IndicatorCap(RateHistory(t0, 0.0), settle_s=settle_s, sent=self.log)
        self.probe_sent: dict[int, float] = {}
        self.probes = self.echoes = self.changes = 0
        self.cap_set: float | None = None
        self.off = 0
        self.last_sent = 0
        self.next_probe = t0
        self.probe_body = bytes(PROBE_SIZE - OVERHEAD)

    def pump_tcp(self) -> bool:
        """Hands TCP what it takes (then shuts the write side); True once the receiver says all arrived."""
        data, tcp = self.data, self.tcp
        if self.off < len(data):
            try:
                self.off += tcp.send(data[self.off : self.off + (1 << 16)])
                if self.off >= len(data):
                    tcp.shutdown(socket.SHUT_WR)
            except BlockingIOError:
                pass
        else:
            try:
                if tcp.recv(1):  # the receiver's "all arrived"
                    return True
            except BlockingIOError:
                pass
        return False

    def account(self, now: float) -> None:
        """Logs the bytes TCP sent since the last turn, with their headers."""
        sent, _ = _tcp_info(self.tcp)
        if sent is not None and sent > self.last_sent:
            self.log.sent(now, int((sent - self.last_sent) * (1 + TCP_IP_OVERHEAD)))
            self.last_sent = sent

    def probe(self, now: float) -> None:
        if now < self.next_probe:
            return
        try:
            self.raw.sendto(
                data_datagram(Data(self.xfer, self.probes, 0, 0, self.probe_body), self.sport, self.port), (self.dst, 0)
            )
            self.probe_sent[self.probes] = now
            self.log.sent(now, PROBE_SIZE)
            self.probes += 1
        except BlockingIOError:
            pass
        self.next_probe = now + PROBE_INTERVAL_S

    def read_echoes(self, now: float) -> None:
        """Takes the echoes of this transfer's probes; a cap that moved by over 2 % is set on the connection."""
        cap = self.cap
        for src, d in _datagrams(self.raw, 64):
            if (
                not isinstance(d.msg, Ack)
                or d.msg.xfer != self.xfer
                or src != self.dst
                or not d.shim.flags & constants.FLAG_ECHO
            ):
                continue
            at = self.probe_sent.pop(d.msg.echo_seq, None)
            if at is None:
                continue
            self.echoes += 1
            cap.on_echo(Echo(d.shim.rri_echo, at))
            c = cap.cap()
            if c is not None and (self.cap_set is None or abs(c - self.cap_set) > 0.02 * self.cap_set):
                # bytes/s of TCP payload; the kernel paces every segment of the connection under it
                self.tcp.setsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, max(1, int(c / 8 / (1 + TCP_IP_OVERHEAD))))
                self.cap_set, self.changes = c, self.changes + 1
                cap.tracker.history.set(now, c)  # echoes judged before the change settles are stale


def receive_partial(port: int, *, timeout_s: float = 60.0, keep: bool = True) -> tuple[ReceiveReport, bytes]:
    """The receiving end of `send_partial`: one TCP connection on `port` read to its end (then one
    byte back: "all arrived"), and every probe to `port` answered with its rri echoed (flag E)."""
    raw = open_raw()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        srv.bind(("0.0.0.0", port))
    except OSError as e:
        raw.close()
        srv.close()
        raise TransferError(f"cannot listen on TCP port {port}: {e.strerror or e}") from None
    srv.listen(1)
    srv.setblocking(False)
    start = time.monotonic()
    conn: socket.socket | None = None
    peer = ""
    chunks: list[bytes] = []
    total = 0
    first: float | None = None
    last_rri: int | None = None
    probes = 0
    try:
        while True:
            if time.monotonic() - start > timeout_s:
                raise TransferError(f"timed out after {timeout_s:g} s ({total} bytes)")
            socks = [raw, conn if conn is not None else srv]
            ready, _, _ = select.select(socks, [], [], 0.05)
            if srv in ready and conn is None:
                conn, (peer, _) = srv.accept()
                conn.setblocking(False)
            if conn is not None and conn in ready:
                try:
                    b = conn.recv(1 << 16)
                except BlockingIOError:
                    b = None
                if b == b"":
                    conn.setblocking(True)
                    conn.send(b"!")
                    break
                if b:
                    first = first or time.monotonic()
                    total += len(b)
                    if keep:
                        chunks.append(b)
            if raw in ready:
                for src, d in _datagrams(raw, 64):
                    if not isinstance(d.msg, Data) or d.dport != port or d.msg.total != 0:
                        continue
                    probes += 1
                    rri = d.shim.rri if d.shim.flags & constants.FLAG_RI else None
                    last_rri = rri
                    try:
                        raw.sendto(ack_datagram(Ack(d.msg.xfer, 0, d.msg.seq), rri, port, d.sport), (src, 0))
                    except BlockingIOError:
                        pass
    finally:
        if conn is not None:
            conn.close()
        srv.close()
        raw.close()
    dur = max(time.monotonic() - (first or start), 1e-9)
    return ReceiveReport(peer, total, probes, 0, dur, total * 8 / dur, last_rri), b"".join(chunks)
