# SPDX-License-Identifier: Apache-2.0
"""A port's propagation delay: the wire after the traffic manager.

On a real link a frame's last bit leaves the port's queue and arrives at the far end one propagation
delay later; the queue never sees the frames in flight, and the wire never reorders them. The live
software switch keeps, per egress port, the frames its TM has released in a FIFO, each due at its
departure time plus the port's delay, and sends it when that time comes. A port without a delay
(0) sends a frame as soon as its TM departure time has passed: the switch's behaviour before it
had delays.

The paper's experiments add 10 ms one-way delay on every host with netem; a kernel without netem
cannot, and a delay in the switch, which forwards every frame anyway, gives the same round-trip
times without it (docs/live-mode.md).
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

T = TypeVar("T")


class DelayLine(Generic[T]):
    """The frames in flight on one port's wire, oldest first.

    `push(depart_ns, frame)`: the TM released `frame` at `depart_ns` (its last bit left the port);
    it is due `delay_ns` later. Departures of one port's FIFO never go back in time, but a live
    clock read a moment earlier can stamp a frame a few ns before its predecessor: a wire keeps
    order, so a frame is never due before the one ahead of it.
    """

    def __init__(self, delay_ns: int = 0) -> None:
        if delay_ns < 0:
            raise ValueError(f"negative delay {delay_ns} ns")
        self.delay_ns = int(delay_ns)
        self._q: deque[tuple[int, T]] = deque()
        self._last_due = -(1 << 62)

    def __len__(self) -> int:
        return len(self._q)

    def push(self, depart_ns: int, frame: T) -> int:
        """Queue `frame`; returns the time (ns) it is due at the far end."""
        due = max(depart_ns + self.delay_ns, self._last_due)
        self._last_due = due
        self._q.append((due, frame))
        return due

    def next_due(self) -> int | None:
        """When the oldest frame is due (ns), or None when nothing is in flight."""
        return self._q[0][0] if self._q else None

    def pop_due(self, now_ns: int) -> list[T]:
        """The frames due by `now_ns`, in the order they were pushed."""
        q = self._q
        out: list[T] = []
        while q and q[0][0] <= now_ns:
            out.append(q.popleft()[1])
        return out
