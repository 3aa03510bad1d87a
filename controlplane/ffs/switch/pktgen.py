# SPDX-License-Identifier: Apache-2.0
"""TNA's packet generator, its periodic timer application (spec §7.7), as the software switch runs it.

Every period the application emits one batch of `packets` timer packets into the ingress of each
pipe, on the generator's port (pipe << 7 | 68, Tofino 1's): TNA's `pktgen_timer_header_t` (pipe,
application, batch_id, packet_id) followed by the packet buffer (zeros here) up to `packet_len`.

The packets are generated when they are due, which in the software switch is when the pipe next
runs a packet (or the control plane reads its state): a timer packet changes nothing but the
guard's registers and counters of its own pipe, which nothing reads in between, so running it
late, but before anything that could see it, is running it on time. After a long lull many
batches are due at once; `due` counts them, and the guard applies a batch of k identical packets
as k of them (`QueueGuard.timer`).

The state lives in arrays the compiled fast path shares (`ffs.switch.fast`): the period, batch
size and application (`cfg`), each pipe's next batch time (`next_ns`) and the pipeline's clock,
the time of the last packet it ran (`now_ns`).
"""

from __future__ import annotations

import struct
from array import array

from ffs.core import constants
from ffs.core.entries import TimerSpec
from ffs.switch.tna import PIPE_SHIFT, PIPES

# cfg cells
PERIOD, PACKETS, APP, LEN = range(4)


def timer_frame(pipe: int, app_id: int, batch_id: int, packet_id: int, packet_len: int) -> bytes:
    """One timer packet as the generator emits it on Tofino 1: pktgen_timer_header_t (3 bits of
    padding, 2 of pipe, 3 of application; a byte of padding; batch_id; packet_id), then the buffer."""
    head = struct.pack("!BBHH", ((pipe & 3) << 3) | (app_id & 7), 0, batch_id & 0xFFFF, packet_id & 0xFFFF)
    return head + bytes(packet_len - len(head))


def parse_timer(buf: bytes | bytearray) -> tuple[int, int] | None:
    """What FfsIngressParser reads of a packet on the generator's port: (app_id, packet_id)."""
    if len(buf) < constants.TIMER_HEADER_LEN:
        return None
    return buf[0] & 7, (buf[4] << 8) | buf[5]


def is_generator_port(port: int) -> bool:
    return port & ((1 << PIPE_SHIFT) - 1) == constants.PKTGEN_PORT


class PacketGenerator:
    """The timer application of one device (every pipe's generator runs it)."""

    def __init__(self) -> None:
        self.cfg = array("q", [0, 0, 0, 0])  # period 0: not running
        self.next_ns = array("q", [0] * PIPES)
        self.now_ns = array("q", [0])

    def configure(self, timer: TimerSpec | None) -> None:
        """Start the application (its first batch one period from the pipeline's clock) or stop it."""
        if timer is None:
            self.cfg[PERIOD] = 0
            return
        self.cfg[PERIOD], self.cfg[PACKETS] = timer.period_ns, timer.packets
        self.cfg[APP], self.cfg[LEN] = timer.app_id, timer.packet_len
        for pipe in range(PIPES):
            self.next_ns[pipe] = self.now_ns[0] + timer.period_ns

    def spec(self) -> TimerSpec | None:
        if self.cfg[PERIOD] == 0:
            return None
        return TimerSpec(self.cfg[PERIOD], self.cfg[PACKETS], self.cfg[APP], self.cfg[LEN])

    def due(self, pipe: int, t_ns: int) -> int:
        """The batches of `pipe` due by t_ns (their time ≤ t_ns), which are taken as run."""
        period = self.cfg[PERIOD]
        if period == 0 or self.next_ns[pipe] > t_ns:
            return 0
        k = (t_ns - self.next_ns[pipe]) // period + 1
        self.next_ns[pipe] += k * period
        return int(k)

    def frames(self, pipe: int) -> list[bytes]:
        """One batch's packets, packet_id 0 .. packets-1 (batch_id 0: the application sends one
        batch per period)."""
        return [timer_frame(pipe, self.cfg[APP], 0, i, self.cfg[LEN]) for i in range(self.cfg[PACKETS])]

    def port(self, pipe: int) -> int:
        return (pipe << PIPE_SHIFT) | constants.PKTGEN_PORT
