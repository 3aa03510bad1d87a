# SPDX-License-Identifier: Apache-2.0
"""A port that drains slower than its speed (a PFC pause, a shaper, a lower negotiated rate): the
target follows what it drains while its queue drops what γ admitted, and climbs back once it
stops (docs/spec.md §9, item 8).

  per managed egress, every period: the TM's drops toward the port, its queue and what the port
  sent, read at one instant (the driver's `read_tm_ports`; where the driver has no sent count,
  the egress's accepted + malformed, which Tofino counts as each frame leaves the queue), line rate
  -> `drain_window` (per window of the τ loop's frames) and `drain_period` (ffs.agent.drain_rule)
  -> the factor of the configured target in force; the shares scale with it (spec §9 item 2), so
  that Eq. 2 splits the drained capacity as it split the configured one; set_pair modifications
  of the egress's pairs in the τ loop's batch.
"""

from __future__ import annotations

import logging
import time

from ffs.agent.drain_rule import CLEAR_FRACTION, PortDrain, drain_period, drain_window
from ffs.agent.readings import ZERO, CounterReadings, Reading, add_counts
from ffs.core.entries import CounterValue, Update
from ffs.core.tables import default_buffer
from ffs.driver.base import DriverError, TmPortCounts

log = logging.getLogger("ffs.agent")
TM_READ = "TM"  # the TM's counters' read time among the readings' (`_last_t`)


class PortDrains(CounterReadings):
    """The τ loop's part that follows a port draining slower than its speed (module docstring)."""

    def _follow_drains(
        self, ports: list[int], bad: dict[int, CounterValue], virtual: float | None
    ) -> tuple[dict[int, tuple[int, float]], list[Update]]:
        """Every period: per managed egress port, the TM's drops this period and what the port
        drained (bit/s); the set_pair modifications of the egresses whose factor changed. A target
        without the TM's counters (DriverError) follows nothing."""
        if self._tm_unavailable or not ports:
            return {}, []
        try:
            tm, dt_tm = self._read_tm(ports, virtual)
        except DriverError as err:
            self._tm_unavailable = True
            log.info("the target follows no slow port: %s", err)
            return {}, []
        out: dict[int, tuple[int, float]] = {}
        changed: list[str] = []
        left, dt = self._read(Reading.DRAINED, ports, virtual)
        jumped = self._jumped_in(Reading.DRAINED, Reading.MALFORMED)  # no reading of what left: no decision
        for e in sorted(self.fairness):
            i = self.node.interfaces[e]
            if i.port not in tm or i.port in jumped:
                continue
            now, last = tm[i.port], self._tm_last.get(i.port, tm[i.port])
            self._tm_last[i.port] = now
            drops = now.drops - last.drops
            frames = add_counts(left.get(i.port, ZERO), bad.get(i.port, ZERO))
            period = self._left(now, last, frames, dt, dt_tm)
            if period is None:  # the TM's sent count went backwards (reconfigured): no decision
                continue
            out[i.port] = (drops, period[1] * 8 / period[2] if period[2] > 0 else 0.0)
            buffer = i.buffer_bytes or default_buffer(i.speed, i.mtu)
            before = self.port_drain.get(e, PortDrain())
            clear = now.queue_bytes < CLEAR_FRACTION * buffer
            # what left a port says what it drains only over periods it was busy all through: each
            # began and ended with its queue standing. One that began idle (the onset of a flood,
            # traffic after a lull) or emptied its queue (a pulse's end) drained less than the port
            # can, and would read as a slow port; it closes the window undecided
            if self._drain_standing.get(e, False) and not clear:
                state = self._drain_window(e, before, period, drops)
            else:
                self._drain_acc.pop(e, None)
                state = before
            self._drain_standing[e] = not clear
            state = drain_period(state, drops > 0, clear)
            if state.factor > before.factor:  # the open window read the port below this factor
                self._drain_acc.pop(e, None)
            self.port_drain[e] = state
            if state.factor != before.factor:
                changed.append(e)
                self._log_drain(e, before, state)
        return out, self._drain_updates(changed)

    def _read_tm(self, ports: list[int], virtual: float | None) -> tuple[dict[int, TmPortCounts], float]:
        """The TM's counters of these ports, and the seconds since their last read (timed as
        `_measure` times a counter's read)."""
        t0 = time.monotonic()
        tm = self.driver.read_tm_ports(ports)
        t = (t0 + time.monotonic()) / 2 if virtual is None else virtual
        prev = self._last_t.get(TM_READ)
        self._last_t[TM_READ] = t
        return tm, 0.0 if prev is None else t - prev

    def _left(
        self, now: TmPortCounts, last: TmPortCounts, frames: CounterValue, dt: float, dt_tm: float
    ) -> tuple[int, float, float] | None:
        """What left the port this period: its frames (the egress's count), its line-rate bytes and
        the seconds they took. The bytes are the TM's sent count where the driver has one, read at
        the instant of the queue and the drops (the software switch's egress counts a frame as the
        TM admits it, so over a window whose queue fell its count reads low by the fall); else the
        egress's count, which on Tofino counts each frame as it leaves the queue."""
        if now.sent_bytes is None or last.sent_bytes is None:
            return frames.packets, float(frames.bytes + self.wire_overhead * frames.packets), dt
        if now.sent_bytes < last.sent_bytes:
            return None
        return frames.packets, float(now.sent_bytes - last.sent_bytes), dt_tm

    def _drain_window(self, e: str, state: PortDrain, period: tuple[int, float, float], drops: int) -> PortDrain:
        """What left the port and the drops, summed over windows of the τ loop's frames (or its
        longest interval); at a window's end, `drain_window`."""
        n0, b0, d0, t0 = self._drain_acc.get(e, (0, 0.0, 0, 0.0))
        n, b, d, t = n0 + period[0], b0 + period[1], d0 + max(drops, 0), t0 + period[2]
        if n + d < self.min_packets and t < self.max_interval_s:
            self._drain_acc[e] = (n, b, d, t)
            return state
        self._drain_acc.pop(e, None)
        return drain_window(state, self.configured_target(e), b * 8 / t, d > 0) if t > 0 else state

    def _log_drain(self, e: str, before: PortDrain, after: PortDrain) -> None:
        """One line on entering and one on leaving: the steps in between are in the status."""
        if before.factor >= 1.0 > after.factor:
            log.warning(
                "egress %s drains %.4g bit/s, below its target %.4g, and its queue drops what FFS admits: "
                "the target follows it (%.4g bit/s) until it stops dropping",
                e,
                after.drained * self.configured_target(e),
                self.configured_target(e),
                after.factor * self.configured_target(e),
            )
        elif after.factor >= 1.0 > before.factor:
            log.warning("egress %s drops no more: back at its target %.4g bit/s", e, self.configured_target(e))

    def _drain_updates(self, egresses: list[str]) -> list[Update]:
        """The set_pair of every pair toward these egresses, at its share of the target in force."""
        if not egresses:
            return []
        pids = {p.pid for p in self.pairs() if p.egress in egresses}
        return [self.quarantine.withhold(u) for pid, u in self._pair_updates("modify").items() if pid in pids]
