# SPDX-License-Identifier: Apache-2.0
"""The traffic manager between FfsIngress and FfsEgress: one FIFO per egress port.

On Tofino the ingress decides (γ's drop happens before the queue), the traffic manager queues
what it admitted per egress port and drains it at the port's line rate, and the egress pipeline
runs on each frame as it leaves. tofino-model cannot show this: its queues are unbounded and empty
as fast as its packet loop runs. The software switch therefore models the TM as the hardware
behaves (docs/software-switch.md, "The traffic manager"):

- a port with a speed drains `speed · drain` bits per second of line rate, `drain` (1.0 unless
  `set_drain` changed it) the fraction of its speed the port actually sends (a PFC pause: 0 for its
  length; a shaper, a link that negotiated a lower rate: below 1): every frame costs its bytes
  (padded to the Ethernet minimum, FCS included) plus preamble and inter-frame gap
  (`ffs.core.tables.wire_len`), so a port carries fewer bytes of small frames than of large ones;
- a frame that would take the queue beyond `buffer` bytes is dropped at its tail (a TM drop,
  counted per port; FfsEgress never sees it);
- a frame admitted leaves when its last bit has been sent: `enqueue` returns that time;
- a port without a speed is not paced: its frames leave at once (the software switch's
  behaviour before it modelled the TM, kept for ports the caller did not configure);
- a port with an MTU (`set_mtu`) has the frame limit of its MAC, `ffs.core.tables.max_frame_len`: a
  longer frame arriving on it is dropped before the parser, and one the egress emits toward it is
  sent truncated, flagged as an error (what the next hop drops): both counted as `oversize`
  per port, as the MAC counts them (spec §4).

The state is kept in arrays per device port, which the compiled fast path shares, so both engines
queue into the same TM.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass

from ffs.core import constants
from ffs.core.tables import default_buffer, max_frame_len
from ffs.core.topology import Node


@dataclass(frozen=True)
class PortQueueStats:
    backlog_bytes: float
    drops: int  # frames dropped at the tail
    drop_bytes: int  # their line-rate bytes
    enqueued: int  # frames admitted
    mean_delay_s: float  # mean time from arrival to the last bit sent, over the admitted frames
    oversize: int = 0  # frames above the port's frame limit, received or sent (its MAC drops them)


class TrafficManager:
    """FIFOs per device port, each drained at its line rate with tail drop (module docstring)."""

    def __init__(self, ports: int = constants.NUM_PORTS) -> None:
        self.size = ports
        self.speed = array("d", bytes(8 * ports))  # bit/s; 0: not paced
        self.drain = array("d", [1.0] * ports)  # the fraction of `speed` the port sends
        self.buffer = array("d", bytes(8 * ports))  # bytes
        self.backlog = array("d", bytes(8 * ports))  # bytes not yet sent at `last`
        self.last = array("q", bytes(8 * ports))  # ns
        self.drops = array("Q", bytes(8 * ports))
        self.drop_bytes = array("Q", bytes(8 * ports))
        self.enqueued = array("Q", bytes(8 * ports))
        self.enqueued_bytes = array("Q", bytes(8 * ports))  # their line-rate bytes
        self.delay_sum = array("d", bytes(8 * ports))  # seconds
        self.frame_max = array("q", bytes(8 * ports))  # bytes with FCS; 0: no limit
        self.oversize = array("Q", bytes(8 * ports))
        self.oversize_bytes = array("Q", bytes(8 * ports))

    def configure(self, port: int, speed_bps: float | None, buffer_bytes: int | None = None, mtu: int = 1500) -> None:
        """Pace `port` at `speed_bps` with a queue of `buffer_bytes` (None: `default_buffer` for
        its speed and `mtu`); a speed of None or 0 leaves it unpaced. The queue starts empty."""
        if not 0 <= port < self.size:
            raise ValueError(f"port {port} out of range 0..{self.size - 1}")
        speed = float(speed_bps or 0.0)
        if speed < 0 or speed != speed or speed == float("inf"):
            raise ValueError(f"port {port}: speed must be a finite positive bit/s, got {speed_bps!r}")
        if buffer_bytes is not None and buffer_bytes <= 0:
            raise ValueError(f"port {port}: buffer must be positive, got {buffer_bytes!r}")
        self.speed[port] = speed
        self.buffer[port] = float(buffer_bytes if buffer_bytes is not None else default_buffer(speed, mtu))
        self.backlog[port] = 0.0

    def set_mtu(self, port: int, mtu: int) -> None:
        """Give `port` the frame limit of IP MTU `mtu` (`max_frame_len`), received and sent."""
        if not 0 <= port < self.size:
            raise ValueError(f"port {port} out of range 0..{self.size - 1}")
        if not 68 <= mtu <= 65535:
            raise ValueError(f"port {port}: MTU must be 68..65535 bytes, got {mtu!r}")
        self.frame_max[port] = max_frame_len(mtu)

    def set_drain(self, port: int, factor: float, t_ns: int) -> None:
        """From `t_ns` on, `port` sends `factor` of its speed (0: paused); the queue drains at the
        old rate until then."""
        if not 0 <= port < self.size:
            raise ValueError(f"port {port} out of range 0..{self.size - 1}")
        if not 0.0 <= factor <= 1.0:
            raise ValueError(f"port {port}: drain must be a fraction of its speed in [0, 1], got {factor!r}")
        if t_ns > self.last[port]:
            rate = self.speed[port] * self.drain[port]
            self.backlog[port] = max(0.0, self.backlog[port] - (t_ns - self.last[port]) * rate / 8e9)
            self.last[port] = t_ns
        self.drain[port] = factor

    def queue_bytes(self, port: int, now_ns: int | None = None) -> float:
        """The port's queue at `now_ns` (None: as of its last arrival or drain change)."""
        backlog = self.backlog[port]
        if now_ns is not None and now_ns > self.last[port]:
            backlog -= (now_ns - self.last[port]) * self.speed[port] * self.drain[port] / 8e9
        return max(0.0, backlog)

    def port_counts(self, ports: list[int], now_ns: int | None = None) -> dict[int, tuple[int, int, int]]:
        """What the drivers give the agent per port, all as of one instant `now_ns`, as the
        hardware's TM and MAC counters are: frames dropped at the tail, the queue (bytes), and the
        line-rate bytes the port sent (what it admitted less what still waits: the count that says
        what the port drains, where the egress's own counters count each frame as it is admitted)."""
        out = {}
        for p in ports:
            if 0 <= p < self.size:
                queue = self.queue_bytes(p, now_ns)
                out[p] = (self.drops[p], int(queue), int(self.enqueued_bytes[p] - queue))
        return out

    def oversize_drop(self, port: int, frame_len: int) -> bool:
        """True, and counted, if a frame of `frame_len` bytes (FCS included) exceeds `port`'s limit."""
        limit = self.frame_max[port]
        if limit and frame_len > limit:
            self.oversize[port] += 1
            self.oversize_bytes[port] += frame_len
            return True
        return False

    def sent_len(self, port: int, frame_len: int) -> int:
        """The bytes of a frame of `frame_len` that `port` sends: a longer one than its limit is cut there."""
        limit = self.frame_max[port]
        return min(frame_len, limit) if limit else frame_len

    def enqueue(self, port: int, t_ns: int, wire_bytes: int) -> int:
        """The time (ns) the frame's last bit leaves `port`, or -1 if the queue drops it."""
        speed = self.speed[port]
        if speed <= 0.0:
            self.enqueued_bytes[port] += wire_bytes
            return t_ns
        last = self.last[port]
        backlog = self.backlog[port]
        rate = speed * self.drain[port]
        if t_ns > last:
            backlog -= (t_ns - last) * rate / 8e9
            if backlog < 0.0:
                backlog = 0.0
            self.last[port] = t_ns
        else:  # an arrival stamped before the last one (a live clock read earlier): no time passed
            t_ns = last
        if backlog + wire_bytes > self.buffer[port]:
            self.backlog[port] = backlog
            self.drops[port] += 1
            self.drop_bytes[port] += wire_bytes
            return -1
        backlog += wire_bytes
        self.backlog[port] = backlog
        # paused, the frame's time at the port's speed once the pause ends (its end is not known here)
        delay = backlog * 8 / (rate if rate > 0.0 else speed)
        self.enqueued[port] += 1
        self.enqueued_bytes[port] += wire_bytes
        self.delay_sum[port] += delay
        return t_ns + int(delay * 1e9)

    def stats(self, port: int) -> PortQueueStats:
        n = self.enqueued[port]
        return PortQueueStats(
            self.backlog[port],
            self.drops[port],
            self.drop_bytes[port],
            n,
            self.delay_sum[port] / n if n else 0.0,
            self.oversize[port],
        )

    def paced(self) -> list[int]:
        return [p for p in range(self.size) if self.speed[p] > 0.0]


def configure_node(tm: TrafficManager, node: Node) -> None:
    """Every interface of a topology node paced at its speed (default: its capacity) with its
    buffer (default: `default_buffer`) and the frame limit of its MTU, as the ports of the switch
    that runs it are, and its drain at time 0 (`apply_drains` for later ones)."""
    for i in node.interfaces.values():
        tm.configure(i.port, i.speed, i.buffer_bytes, i.mtu)
        tm.set_mtu(i.port, i.mtu)
    apply_drains(tm, node, 0, 0)


def apply_drains(tm: TrafficManager, node: Node, after_ns: int, until_ns: int) -> None:
    """The node's scripted drain changes timed in (after_ns, until_ns] (at 0: those at time 0), set
    at until_ns: a caller that steps time in periods applies each at the period it falls in."""
    for i in node.interfaces.values():
        for t_s, factor in i.drain:
            t_ns = int(round(t_s * 1e9))
            if after_ns < t_ns <= until_ns or (t_ns == 0 == until_ns):
                tm.set_drain(i.port, factor, until_ns)
