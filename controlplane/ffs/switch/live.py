"""Live mode: the software switch on Linux interfaces (AF_PACKET), in real time.

Each device port is bound to an interface; every frame received on it (not the ones the kernel
sends out) runs through the Pipeline with the monotonic clock in ns, and leaves on the interface of
its egress port. The control service (gRPC) runs beside the packet loop; both take the same lock,
so a batch of table updates is never seen half-applied by a packet.
"""

from __future__ import annotations

import logging
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ffs.switch.control import SwitchControl
from ffs.switch.pipeline import Pipeline

log = logging.getLogger("ffs.switch.live")

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
AUX = struct.Struct("=IIIHHHH")  # struct tpacket_auxdata
BATCH = 64  # frames taken from one socket before looking at the others
SNAPLEN = 65535


@dataclass
class PortStats:
    rx: int = 0
    tx: int = 0
    dropped: int = 0
    tx_errors: int = 0


@dataclass
class LiveSwitch:
    control: SwitchControl
    ports: dict[int, str]  # device port -> interface name
    stats: dict[int, PortStats] = field(default_factory=dict)
    stop_event: threading.Event = field(default_factory=threading.Event)
    csfq_capacity: dict[int, float] = field(default_factory=dict)  # baseline: CSFQ before these ports

    def __post_init__(self) -> None:
        self.socks: dict[int, socket.socket] = {}
        self.by_fd: dict[int, tuple[int, socket.socket]] = {}

    def open(self) -> None:
        for port, ifname in sorted(self.ports.items()):
            try:
                s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
                s.bind((ifname, 0))
            except PermissionError:
                raise PermissionError("live mode needs root (or CAP_NET_RAW) to open raw sockets") from None
            except OSError as e:
                raise OSError(f"cannot bind port {port} to interface {ifname!r}: {e.strerror}") from None
            ifindex = socket.if_nametoindex(ifname)
            mreq = ifindex.to_bytes(4, "little") + PACKET_MR_PROMISC.to_bytes(2, "little") + bytes(10)
            s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)  # the kernel strips 802.1Q tags: get them back
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
            s.setblocking(False)
            disable_offloads(ifname)
            self.socks[port] = s
            self.by_fd[s.fileno()] = (port, s)
            self.stats[port] = PortStats()
        log.info("ports: %s", ", ".join(f"{p}={i}" for p, i in sorted(self.ports.items())))

    def close(self) -> None:
        for s in self.socks.values():
            s.close()
        self.socks.clear()
        self.by_fd.clear()

    def run(self, stats_interval_s: float = 10.0) -> None:
        poller = select.epoll()
        for fd in self.by_fd:
            poller.register(fd, select.EPOLLIN)
        pipeline = self.control.pipeline
        lock = self.control.lock
        csfq = None
        if self.csfq_capacity:  # the CSFQ baseline of the evaluation (not FFS): flows = IP address pairs
            from ffs.baselines import Csfq

            csfq = Csfq(k_s=0.1, k_alpha_s=0.1, k_c_s=0.1)
        next_stats = time.monotonic() + stats_interval_s
        try:
            while not self.stop_event.is_set():
                for fd, _ in poller.poll(0.2):
                    port, s = self.by_fd[fd]
                    st = self.stats[port]
                    with lock:
                        for _ in range(BATCH):
                            try:
                                frame, anc, _, addr = s.recvmsg(SNAPLEN, AUX_SPACE)
                            except BlockingIOError:
                                break
                            if addr[2] == PACKET_OUTGOING:
                                continue
                            frame = with_vlan_tag(frame, anc)
                            st.rx += 1
                            res = pipeline.process(frame, port, time.monotonic_ns())
                            if res.egress_port is None:
                                st.dropped += 1
                                continue
                            if csfq is not None and res.egress_port in self.csfq_capacity:
                                now = time.monotonic()
                                bits = len(res.frame) * 8
                                label = csfq.label(res.frame[26:34].hex(), now, bits)
                                core = csfq.core("live", res.egress_port, self.csfq_capacity[res.egress_port])
                                if core.decide(now, bits, label, csfq.rng) is None:
                                    st.dropped += 1
                                    continue
                            out = self.socks.get(res.egress_port)
                            if out is None:
                                st.dropped += 1  # a route to a port this switch has no interface for
                                continue
                            try:
                                out.send(res.frame)
                                self.stats[res.egress_port].tx += 1
                            except OSError:
                                self.stats[res.egress_port].tx_errors += 1
                if time.monotonic() >= next_stats:
                    next_stats += stats_interval_s
                    log.info("stats %s", " ".join(
                        f"port{p}:rx={x.rx},tx={x.tx},drop={x.dropped},txerr={x.tx_errors}" for p, x in sorted(self.stats.items())))
        finally:
            poller.close()


AUX_SPACE = socket.CMSG_SPACE(AUX.size)


def with_vlan_tag(frame: bytes, ancillary: list) -> bytes:
    """Put back the 802.1Q tag the kernel moved into PACKET_AUXDATA, so the parser sees the wire."""
    for level, kind, data in ancillary:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(data) >= AUX.size:
            status, _, _, _, _, tci, tpid = AUX.unpack_from(data)
            if status & TP_STATUS_VLAN_VALID:
                tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID and tpid else 0x8100
                return frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
    return frame


def disable_offloads(ifname: str) -> None:
    """Real frames only: no GRO/GSO/TSO aggregates and no deferred checksums on the switch's ports."""
    try:
        subprocess.run(["ethtool", "-K", ifname, "gro", "off", "gso", "off", "tso", "off", "tx", "off", "rx", "off"],
                       check=False, capture_output=True, timeout=5)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        log.warning("ethtool not available: offloads on %s stay as they are", ifname)


def run_live(ports: dict[int, str], control_address: str, seed: int = 1, ready_file: str | None = None,
             stats_interval_s: float = 10.0, allow_remote: bool = False,
             csfq_capacity: dict[int, float] | None = None) -> None:
    from ffs.switch.server import serve

    ctl = SwitchControl(Pipeline(seed))
    sw = LiveSwitch(ctl, ports, csfq_capacity=csfq_capacity or {})
    sw.open()
    server = serve(ctl, control_address, allow_remote)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: sw.stop_event.set())
    if ready_file:
        tmp = Path(ready_file).with_suffix(".tmp")
        tmp.write_text(f"{os.getpid()}\n")
        os.replace(tmp, ready_file)
    log.info("software switch running (control %s, program %s)", control_address, ctl.program_id)
    try:
        sw.run(stats_interval_s)
    finally:
        server.stop(1.0)
        sw.close()
        if ready_file:
            try:
                os.unlink(ready_file)
            except FileNotFoundError:
                pass
        log.info("stopped cleanly")
