# SPDX-License-Identifier: Apache-2.0
"""Live mode: the software switch on Linux interfaces (AF_PACKET), in real time.

Each device port is bound to an interface. Frames arrive through a PACKET_MMAP receive ring
(TPACKET_V2: the kernel writes frames into shared memory, no system call per frame); every frame the
interface received (never one it sent) runs through the Pipeline with the monotonic clock in ns and
leaves, with one send(), on the interface of its egress port -- at once, or, on a port with a
speed, when the pipeline's traffic manager says its last bit would leave a port of that speed
(`ffs.switch.tm`), so that the port is a bottleneck as on hardware whatever the interface's own
rate -- and, on a port with a propagation delay, that long after it left the queue
(`ffs.switch.delay`: the wire after the TM, which the queue never counts). The control service
(gRPC) runs beside the packet loop; both take the control lock, so a batch of table updates is
never seen half-applied by a packet. docs/live-mode.md has the details and the measured speed.
"""

from __future__ import annotations

import fcntl
import logging
import mmap
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ffs.driver.base import DriverError
from ffs.switch.delay import DelayLine
from ffs.switch.driver import ModelDriver
from ffs.switch.fast import new_pipeline
from ffs.switch.pipeline import Pipeline
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import serve, stop
from ffs.switch.tna import PktLength

log = logging.getLogger("ffs.switch.live")

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_RX_RING = 5
PACKET_STATISTICS = 6
PACKET_VERSION = 10
PACKET_IGNORE_OUTGOING = 23
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = 4
TPACKET_V2 = 1
TP_STATUS_USER = 0x1
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
SIOCGIFMTU = 0x8921
# struct tpacket2_hdr: status, len, snaplen, mac, net, sec, nsec, vlan_tci, vlan_tpid (+4 pad) = 32 bytes,
# followed by the struct sockaddr_ll of the frame (its sll_pkttype at byte 10)
TP2_HDR = struct.Struct("=IIIHHIIHH")
TP2_HDR_LEN = 32
SLL_PKTTYPE = TP2_HDR_LEN + 10
TP_STATS = struct.Struct("=II")  # struct tpacket_stats: packets, drops (reset by each read)
RING_BYTES = 4 << 20  # per port: ~2,000 full-size frames of headroom while the pipeline catches up
BATCH = 64  # frames taken from one port before looking at the others (and letting control in)
VLAN_TAG = 4


@dataclass
class PortStats:
    rx: int = 0  # frames received and run through the pipeline
    tx: int = 0  # frames sent out of this port
    dropped: int = 0  # frames received here that the pipeline (or the CSFQ baseline) dropped
    tx_errors: int = 0  # send() refused by the kernel
    kernel_drops: int = 0  # frames the kernel dropped because the receive ring was full
    truncated: int = 0  # frames longer than a ring slot (only with an MTU raised after start)
    tm_drops: int = 0  # frames toward this port its queue dropped (a port with a speed)
    oversize: int = 0  # frames above the port's frame limit (its interface MTU), received or sent

    def line(self, port: int) -> str:
        return (
            f"port{port}:rx={self.rx},tx={self.tx},drop={self.dropped},tmdrop={self.tm_drops},oversize={self.oversize},"
            f"txerr={self.tx_errors},kdrop={self.kernel_drops},trunc={self.truncated}"
        )


class RxRing:
    """The TPACKET_V2 receive ring of one AF_PACKET socket, read in place.

    Slots are fixed-size; the kernel marks a filled slot TP_STATUS_USER and we hand it back by
    writing TP_STATUS_KERNEL (0) once the frame is copied out. Frames the interface sent itself are
    skipped: PACKET_IGNORE_OUTGOING keeps most of them out, the slot's sll_pkttype the rest.
    """

    def __init__(self, sock: socket.socket, mtu: int) -> None:
        need = TP2_HDR_LEN + 20 + 16 + 14 + VLAN_TAG + mtu  # header, sockaddr_ll, alignment, L2, payload
        self.frame_size = max(2048, 1 << (need - 1).bit_length())
        block = max(self.frame_size, mmap.PAGESIZE, 1 << 16)
        blocks = max(1, RING_BYTES // block)
        self.frame_nr = blocks * (block // self.frame_size)
        sock.setsockopt(SOL_PACKET, PACKET_VERSION, TPACKET_V2)
        sock.setsockopt(SOL_PACKET, PACKET_RX_RING, struct.pack("=IIII", block, blocks, self.frame_size, self.frame_nr))
        self.mem = mmap.mmap(sock.fileno(), block * blocks, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        self.next = 0
        self.truncated = 0

    def take(self, limit: int) -> Iterator[bytes]:
        """Up to `limit` received frames (802.1Q tag restored), oldest first, each slot released."""
        mem, size, unpack = self.mem, self.frame_size, TP2_HDR.unpack_from
        for _ in range(limit):
            off = self.next * size
            status, length, snaplen, mac, _, _, _, tci, tpid = unpack(mem, off)
            if not status & TP_STATUS_USER:
                return
            frame = mem[off + mac : off + mac + snaplen]
            outgoing = mem[off + SLL_PKTTYPE] == PACKET_OUTGOING
            mem[off : off + 4] = b"\0\0\0\0"  # TP_STATUS_KERNEL: the slot is the kernel's again
            self.next = (self.next + 1) % self.frame_nr
            if outgoing:
                continue
            if snaplen < length:
                self.truncated += 1
                continue
            if status & TP_STATUS_VLAN_VALID:  # the kernel took the tag off the wire: put it back
                tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID and tpid else 0x8100
                frame = frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
            yield frame

    def close(self) -> None:
        self.mem.close()


class DrainSchedule(threading.Thread):
    """Each port's drain factor (`TrafficManager.set_drain`: a shaper, a PFC pause) at its time
    after `start`, on the live clock, under the control lock as a packet's pass is. A frame the TM
    released before a pause leaves on its time: the wire goes quiet once those have left (at most
    the queue's time), and the queue stops draining at once."""

    def __init__(self, ctl: SwitchControl, drains: dict[int, tuple[tuple[float, float], ...]], stop: threading.Event):
        super().__init__(name="drain-schedule", daemon=True)
        self.ctl, self.stop_event = ctl, stop
        self.steps = sorted((t, port, f) for port, steps in drains.items() for t, f in steps)
        for port in drains:
            if ctl.pipeline.tm.speed[port] <= 0:
                raise ValueError(f"drain for port {port}, which has no speed")

    def start(self) -> None:
        if self.steps:
            super().start()

    def run(self) -> None:
        clock = self.ctl.clock or time.monotonic_ns
        t0 = clock()
        for t, port, factor in self.steps:
            if self.stop_event.wait(max(0.0, (t0 + t * 1e9 - clock()) / 1e9)):
                return
            with self.ctl.lock:
                self.ctl.pipeline.tm.set_drain(port, factor, clock())
            log.info("port %d drains %.6g of its speed", port, factor)


def interface_mtu(sock: socket.socket, ifname: str) -> int:
    req = struct.pack("16si", ifname.encode()[:15], 0)
    return struct.unpack_from("16si", fcntl.ioctl(sock.fileno(), SIOCGIFMTU, req))[1]


@dataclass
class LiveSwitch:
    control: SwitchControl
    ports: dict[int, str]  # device port -> interface name
    stats: dict[int, PortStats] = field(default_factory=dict)
    stop_event: threading.Event = field(default_factory=threading.Event)
    csfq: Any = None  # the evaluation's CSFQ baseline (ffs.lab.baselines.Csfq), before the paced ports
    delays: dict[int, float] = field(default_factory=dict)  # device port -> propagation delay (s) after its TM

    def __post_init__(self) -> None:
        self.socks: dict[int, socket.socket] = {}
        self.rings: dict[int, RxRing] = {}

    def open(self) -> None:
        try:
            for port, ifname in sorted(self.ports.items()):
                self._open_port(port, ifname)
        except BaseException:
            self.close()
            raise
        log.info("ports: %s", ", ".join(f"{p}={i}" for p, i in sorted(self.ports.items())))

    def _open_port(self, port: int, ifname: str) -> None:
        try:
            # protocol 0: nothing arrives until bind() names the interface, so the ring only ever
            # holds this port's frames
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        except PermissionError:
            raise PermissionError("live mode needs root (or CAP_NET_RAW) to open raw sockets") from None
        self.socks[port] = s
        try:
            ifindex = socket.if_nametoindex(ifname)
        except OSError:
            raise OSError(f"cannot bind port {port}: no interface {ifname!r} here") from None
        disable_offloads(ifname)  # before the first frame: no GRO aggregates, no partial checksums
        try:
            s.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass  # older kernels: the ring's sll_pkttype filters them
        self.rings[port] = RxRing(s, interface_mtu(s, ifname))
        try:
            s.bind((ifname, ETH_P_ALL))
        except OSError as e:
            raise OSError(f"cannot bind port {port} to interface {ifname!r}: {e.strerror}") from None
        mreq = struct.pack("=iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
        s.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)  # frames for any MAC: we are a switch
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.setblocking(False)
        self.stats[port] = PortStats()

    def close(self) -> None:
        for r in self.rings.values():
            r.close()
        for s in self.socks.values():
            s.close()
        self.rings.clear()
        self.socks.clear()

    def _kernel_counts(self) -> None:
        tm = self.control.pipeline.tm
        for port, s in self.socks.items():
            _, drops = TP_STATS.unpack(s.getsockopt(SOL_PACKET, PACKET_STATISTICS, TP_STATS.size))
            st = self.stats[port]
            st.kernel_drops += drops
            st.truncated = self.rings[port].truncated
            st.tm_drops = tm.drops[port]
            st.oversize = tm.oversize[port]

    def stats_line(self) -> str:
        self._kernel_counts()
        return " ".join(x.line(p) for p, x in sorted(self.stats.items()))

    def run(self, stats_interval_s: float = 10.0) -> None:
        poller = select.epoll()
        for s in self.socks.values():
            poller.register(s.fileno(), select.EPOLLIN)
        pipeline = self.control.pipeline
        lock = self.control.lock
        clock = self.control.clock or time.monotonic_ns
        socks, stats = self.socks, self.stats
        rings = sorted(self.rings.items())
        # per egress port, the frames the TM has released and the wire still carries, due at their
        # departure plus the port's delay (a port without either sends at once)
        held: dict[int, DelayLine[bytes]] = {p: DelayLine(round(self.delays.get(p, 0.0) * 1e9)) for p in socks}
        next_stats = time.monotonic() + stats_interval_s

        def send(eg: int, frame: bytes) -> None:
            try:
                socks[eg].send(frame)
                stats[eg].tx += 1
            except OSError:
                stats[eg].tx_errors += 1

        try:
            while not self.stop_event.is_set():
                busy = False
                for port, ring in rings:
                    st = stats[port]
                    with lock:
                        for frame in ring.take(BATCH):
                            busy = True
                            st.rx += 1
                            now = clock()
                            res = pipeline.process(frame, port, now)
                            eg = res.egress_port
                            if eg is None:
                                st.dropped += 1
                                continue
                            if eg not in socks:
                                st.dropped += 1  # a route to a port this switch has no interface for
                                continue
                            line = held[eg]
                            if res.depart_ns <= now and not line.delay_ns and not line:
                                send(eg, res.frame)
                            else:
                                line.push(res.depart_ns, res.frame)
                # the frames whose last bit has left a port of that speed, and crossed its wire, by now
                now = clock()
                wake = None
                for eg, line in held.items():
                    for frame in line.pop_due(now):
                        send(eg, frame)
                    due = line.next_due()
                    if due is not None and (wake is None or due < wake):
                        wake = due
                if not busy:
                    # every ring empty: sleep until a frame arrives or one is due to leave
                    poller.poll(0.2 if wake is None else max(0.0, (wake - clock()) / 1e9))
                if time.monotonic() >= next_stats:
                    next_stats = time.monotonic() + stats_interval_s
                    log.info("stats %s", self.stats_line())
        finally:
            poller.close()
            log.info("stats %s", self.stats_line())


def disable_offloads(ifname: str) -> None:
    """Real frames only: no GRO/GSO/TSO aggregates and no deferred checksums on the switch's ports."""
    try:
        p = subprocess.run(
            ["ethtool", "-K", ifname, "gro", "off", "gso", "off", "tso", "off", "tx", "off", "rx", "off"],
            check=False,
            capture_output=True,
            text=True,
            timeout=5,
        )
        if p.returncode not in (0, 80):  # 80: some feature cannot change on this device (still applied the rest)
            log.warning("ethtool -K %s: %s", ifname, p.stderr.strip() or f"exit {p.returncode}")
    except (FileNotFoundError, subprocess.TimeoutExpired):
        log.warning("ethtool not available: offloads on %s stay as they are", ifname)


def _mtu_of(ifname: str) -> int:
    try:
        with open(f"/sys/class/net/{ifname}/mtu") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 1500


def _wait_control(address: str, program_id: str, timeout_s: float = 10.0) -> None:
    """The readiness signal means "answers": ask the service itself, as a client would."""
    drv = ModelDriver(address, rpc_timeout_s=5.0)
    try:
        drv.connect(timeout_s=timeout_s)
        if drv.program_id() != program_id:
            raise OSError(f"control address {address} is served by another switch")
    finally:
        drv.close()


def _remove_stale_ready(path: Path) -> None:
    """A ready file left by a killed switch would announce this one before it listens."""
    try:
        left = path.read_text(errors="replace").strip() or "unknown"
    except FileNotFoundError:
        return
    path.unlink(missing_ok=True)
    log.warning("removed the stale ready file %s (left by pid %s, which stopped without removing it)", path, left)


def run_live(
    ports: dict[int, str],
    control_address: str,
    seed: int = 1,
    ready_file: str | None = None,
    stats_interval_s: float = 10.0,
    allow_remote: bool = False,
    engine: str = "auto",
    csfq: Any = None,
    speeds: dict[int, float] | None = None,
    buffers: dict[int, int] | None = None,
    delays: dict[int, float] | None = None,
    drains: dict[int, tuple[tuple[float, float], ...]] | None = None,
    pkt_length: PktLength | None = None,
) -> None:
    """engine: "auto" (the compiled fast path when it is built), "c" or "python" (ffs.switch.fast).
    speeds: line rates (bit/s) of the ports the TM paces, with their `buffers` (bytes; default:
    ffs.core.tables.default_buffer); other ports send at once. delays: propagation delays (s) of
    ports, applied after their TM (ffs.switch.delay). drains: per paced port, the fraction of its
    speed it sends from each time on (seconds after the switch is ready, `DrainSchedule`). csfq:
    the evaluation's CSFQ baseline, run before every paced port (ffs-switch run --csfq). pkt_length:
    what the egress's pkt_length is, to model a chip unlike tofino-model (ffs-switch run --pkt-length)."""
    if ready_file:
        _remove_stale_ready(Path(ready_file))
    pipeline = new_pipeline(seed, engine)
    if pkt_length is not None and pkt_length != pipeline.pkt_length_model:
        pipeline.pkt_length_model = pkt_length
        log.info(
            "the egress's pkt_length is %s (not tofino-model's: the frame check's basis must match)", pkt_length.name
        )
    for port, ifname in sorted(ports.items()):  # the frame limit of the interface's MTU, as a Tofino port's
        pipeline.tm.set_mtu(port, _mtu_of(ifname))
    for port, speed in sorted((speeds or {}).items()):
        pipeline.tm.configure(port, speed, (buffers or {}).get(port), _mtu_of(ports[port]))
        log.info("port %d paced at %.6g bit/s, buffer %d bytes", port, speed, int(pipeline.tm.buffer[port]))
    if csfq is not None:
        csfq.attach({"live": pipeline}, live=True)
    ctl = SwitchControl(pipeline, clock=time.monotonic_ns)  # the clock run() stamps packets with
    for port, delay in sorted((delays or {}).items()):
        if port not in ports:
            raise ValueError(f"delay for port {port}, which has no interface")
        log.info("port %d delays its frames %.6g ms after its queue", port, delay * 1e3)
    sw = LiveSwitch(ctl, ports, csfq=csfq, delays=dict(delays or {}))
    schedule = DrainSchedule(ctl, drains or {}, sw.stop_event)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: sw.stop_event.set())
    sw.open()
    server = None
    try:
        server = serve(ctl, control_address, allow_remote)
        try:
            _wait_control(control_address, ctl.program_id)
        except DriverError as e:
            raise OSError(str(e)) from None
        if ready_file:
            tmp = Path(ready_file).with_name(Path(ready_file).name + ".tmp")
            tmp.write_text(f"{os.getpid()}\n")
            os.replace(tmp, ready_file)
        schedule.start()
        log.info(
            "software switch running (control %s, program %s, engine %s)",
            control_address,
            ctl.program_id,
            "python" if type(pipeline) is Pipeline else "c",
        )
        sw.run(stats_interval_s)
    finally:
        if server is not None:
            stop(server)  # its unix socket goes with it
        sw.close()
        if ready_file:
            Path(ready_file).unlink(missing_ok=True)
        log.info("stopped cleanly")
