# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/queue_guard.p4`: the queue guard's virtual queues and timer
packets; its C twin in `_fastpath.c`: queue_guard_apply, queue_guard_timer."""

from __future__ import annotations

from ffs.core import constants, p4names
from ffs.switch.header import Meta
from ffs.switch.tna import (
    U32,
    Counter,
    MatchTable,
    Register,
    sat_sub,
)


class QueueGuard:
    """`FfsIngress.guard` (spec §7.7): each egress's virtual queue, filled by what γ admits and
    drained by the packet generator's timer packets; while it stands above `qhi`, a packet of a
    pair reading over GUARD_RF_CODE of its share is dropped before the queue."""

    def __init__(self) -> None:
        self.egress_queue = MatchTable(p4names.EGRESS_QUEUE)
        self.timer_ports = MatchTable(p4names.TIMER_PORTS)
        self.queue = Register(p4names.GUARD_QUEUE)
        self.timers = Counter(p4names.GUARD_TIMERS)

    @staticmethod
    def set_queue(md: Meta, qhi: int) -> None:  # stage 0-1
        md.qhi = qhi

    @staticmethod
    def no_queue(md: Meta) -> None:
        md.qhi = constants.QHI_OFF

    @staticmethod
    def set_drain(md: Meta, port: int, drain: int) -> None:  # a timer packet: the port it drains
        md.egress_port, md.drain = port, drain

    def enqueue(self, md: Meta, pipe: int) -> None:  # stage 5: a managed packet γ admitted
        at = pipe * self.queue.size + md.egress_port
        v = self.queue.cells[at]
        md.guard = int(v > md.qhi and md.rf_norm > constants.GUARD_RF_CODE)
        if not md.guard:
            self.queue.cells[at] = min(v + md.wlen, U32)

    def drain(self, md: Meta, pipe: int, k: int = 1) -> None:  # stage 5: a timer packet (k alike: k of them)
        at = pipe * self.queue.size + md.egress_port
        self.queue.cells[at] = sat_sub(self.queue.cells[at], k * md.drain)

    def apply(self, md: Meta, pipe: int) -> None:
        """A data packet: the threshold of its egress, then (managed and admitted by γ) the queue."""
        action, params = self.egress_queue.lookup(md.egress_port)
        if action == "set_queue":
            self.set_queue(md, params["qhi"])
        else:
            self.no_queue(md)
        if md.managed and md.admit_margin:
            self.enqueue(md, pipe)

    def timer(self, md: Meta, pipe: int, k: int = 1) -> None:
        """A timer packet (`md.timer_id` its packet_id), or k alike: drains its port's queue and
        counts it; a packet_id without a timer_ports entry (no_drain) does nothing. k saturating
        subtractions of one drain are one subtraction of k drains, the counter counts k."""
        action, params = self.timer_ports.lookup(md.timer_id)
        if action != "set_drain":
            return
        self.set_drain(md, params["port"], params["drain"])
        self.drain(md, pipe, k)
        at = pipe * self.timers.size + md.egress_port
        self.timers.packets[at] = (self.timers.packets[at] + k) & 0xFFFFFFFFFFFFFFFF
