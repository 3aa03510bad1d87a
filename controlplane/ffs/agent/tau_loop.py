# SPDX-License-Identifier: Apache-2.0
"""The τ loop: every period, per managed egress, the offered and admitted rates, τ, and the egress
entries pushed in one atomic batch (docs/control-plane.md).

  read offered (R*_j) and admitted (A_j, counted in the ingress after γ, before the traffic
  manager), malformed  ->  line rates in bit/s (wrap-safe deltas; a counter that went backwards,
  cleared by another client, is re-baselined and decides nothing that period)
  -> tau_step per managed egress -> one atomic batch of set_egress modifications, with the
  quarantine's set_pair modifications of the same period.

While a pair is held in quarantine, the other pairs at its egress (the free pairs) have their
pair_bytes and pair_drops read every period too: τ rises there only as far as they need (spec §9),
not into the held pair's lies.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable, Tuple

from ffs.agent.port_drain import PortDrains
from ffs.agent.readings import ZERO, Reading, add_counts, sub_counts
from ffs.agent.snapshot import EgressStatus, Snapshot
from ffs.core import p4names
from ffs.core.entries import CounterValue, Update, exact_value
from ffs.core.ports import pipe_of
from ffs.core.program import egress_entry, guard_threshold_of
from ffs.core.tables import egress_action_params
from ffs.core.tau import EgressTau, tau_step
from ffs.driver.base import Driver, DriverError

log = logging.getLogger("ffs.agent")

# how far below its target τ aims while an egress's queue stands (spec §9): the queue drains at this
# fraction of the port's speed, and no longer sits at the guard's threshold
STANDING_MARGIN = 1 / 32

# per egress with a pair held in quarantine, its free pairs since the last period: what arrived,
# what γ admitted, over how many seconds, and whether each of them had a reading (False: a
# quarantine that just began, a counter that jumped; τ then does not rise)
Free = Tuple[CounterValue, CounterValue, float, bool]


def add_free(a: Free | None, b: Free | None) -> Free | None:
    if a is None or b is None:
        return a if b is None else b
    return add_counts(a[0], b[0]), add_counts(a[1], b[1]), a[2] + b[2], a[3] and b[3]


class TauLoop(PortDrains):
    # called after every completed step: the service feeds systemd's watchdog from it, so a step
    # that hangs stops the pings (ffs.agent.notify)
    on_step: Callable[[Snapshot], None] | None = None

    def step(self, now_s: float | None = None) -> Snapshot:
        """One control period: R*_j, A_j and the lies at j per egress, R*_j and A_j as the port sends
        them (six reads of one cell per egress, whatever the number of pairs), τ per egress, every
        egress pushed in one batch. The pairs' telemetry (R, drops, lies, F; the quarantine) is read on its own cadence,
        `telemetry_period_s`, and at once when an egress counted a lying frame."""
        virtual = now_s
        now_s = time.monotonic() if now_s is None else now_s
        ports = self._egress_ports()
        offered, dt = self._read(Reading.OFFERED, ports, virtual)
        a, dt_a = self._read(Reading.ADMITTED, ports, virtual)
        bad, _ = self._read(Reading.MALFORMED, ports, virtual)
        free = self._free(virtual)
        # an egress whose counters went backwards decides nothing this period (its τ stays)
        jumped = self._jumped_in(Reading.OFFERED, Reading.ADMITTED, Reading.MALFORMED)
        self._count_since_telemetry(ports, a, bad, jumped)  # as they arrived, as the frame check counts them
        # τ holds what the port sends at the target: + SHIM_LEN per frame the ingress inserts a shim
        # into, − SHIM_LEN per frame the egress strips one off, ± VLAN_TAG_LEN per tag the host
        # pushed or popped
        change = self._egress_change(ports, virtual)
        offered = self._sent(Reading.OFFERED, offered, ports, virtual, change)
        arrived, a = a, self._sent(Reading.ADMITTED, a, ports, virtual, change)
        guard = self._strip_drains(arrived, a)  # the guard's queue adds the frames as they arrive
        jumped |= self._jumped_in(Reading.OFFERED_SHIMS, Reading.ADMITTED_SHIMS, Reading.STRIPPED, Reading.TAG_CHANGED)
        quarantine = guard + self._release_quarantine(now_s) + self._telemetry_if_due(virtual, now_s, bad, jumped)
        # a port that drains slower than its speed: the target in force follows it (spec §9, item 8)
        tm, drain_pairs = self._follow_drains(ports, bad, virtual)
        snap = Snapshot(now_s, pairs=self._pair_status, pairs_time_s=self._last_telemetry, ports=self._port_status)
        batch: list[Update] = []
        node = self.current_node()
        queues = self._guard_queues(ports)
        for e in sorted(self.fairness):
            port = self.node.interfaces[e].port
            # while the egress's queue stands, τ aims a little below the target so that it drains:
            # at the target itself the queue would sit at the guard's threshold (spec §9)
            qhi = guard_threshold_of(self.node, port) if port in queues else None
            draining = qhi is not None and queues[port] > qhi / 2
            target = node.target(e) * (1.0 - STANDING_MARGIN if draining else 1.0)
            # A_j: what γ admitted toward j, counted before the traffic manager, so that it exceeds
            # T_j whenever FFS over-admits even on a port that is its own bottleneck; a lying frame
            # is among it (the egress drops it only after it queued, docs/security.md)
            state = self.taus.get(e, EgressTau())
            a_bps, r_star = self._bps(a.get(port, ZERO), dt_a), self._bps(offered.get(port, ZERO), dt)
            if port in jumped:  # no rate this period: τ, the accumulation and the pushed entry stay
                snap.egresses.append(self._egress_status(e, port, target, 0.0, 0.0, state, 0))
                continue
            if dt > self.min_interval_s and dt_a > self.min_interval_s:
                state = self._advance_tau(e, target, state, offered.get(port, ZERO), a.get(port, ZERO), dt, dt_a, free)
            params = egress_action_params(state, r_star, target)  # C/R* for RI: this period's
            if self._pushed.get(port) != params:  # the switch holds the rest as pushed (the slow check repairs)
                batch.append(egress_entry(port, params, "modify"))
            status = self._egress_status(e, port, target, a_bps, r_star, state, bad.get(port, ZERO).packets)
            drain = self.port_drain.get(e)
            snap.egresses.append(
                dataclasses.replace(
                    status,
                    queue_bytes=queues.get(port, 0),
                    queue_threshold=qhi,
                    draining=draining,
                    tm_drops=tm.get(port, (0, 0.0))[0],
                    drained_bps=tm.get(port, (0, 0.0))[1],
                    drain_factor=1.0 if drain is None else drain.factor,
                )
            )
        self._push(quarantine + drain_pairs, batch if dt > self.min_interval_s else [])
        if self._jump_notes:
            log.warning(
                "counters went backwards (cleared by another client?): %s indices; re-baselined, no decision "
                "on them this period",
                ", ".join(self._jump_notes),
            )
            self._jump_notes = []
        self.snapshot = snap
        if self.on_step is not None:
            self.on_step(snap)
        return snap

    def _guard_queues(self, ports: list[int]) -> dict[int, int]:
        """Each egress port's virtual queue (the guard's, spec §7.7), the fullest pipe's: one
        register cell per egress, read with the counters; none while the guard is off."""
        if self.guard_timer_ns is None:
            return {}
        try:
            cells = self.driver.read_register_pipes(p4names.GUARD_QUEUE.name, ports)
        except DriverError:
            return {}
        return {p: max(v, default=0) for p, v in cells.items()}

    def _count_since_telemetry(
        self, ports: list[int], a: dict[int, CounterValue], bad: dict[int, CounterValue], jumped: set[int]
    ) -> None:
        """What each egress admitted and counted as lies since the last telemetry (None after a jump)."""
        for port in ports:
            acc = self._since_telemetry.get(port, (ZERO, ZERO))
            self._since_telemetry[port] = (
                None
                if acc is None or port in jumped
                else (add_counts(acc[0], a.get(port, ZERO)), add_counts(acc[1], bad.get(port, ZERO)))
            )

    def _telemetry_if_due(
        self, virtual: float | None, now_s: float, bad: dict[int, CounterValue], jumped: set[int]
    ) -> list[Update]:
        """The pairs' telemetry on its cadence, at once after a lie (at most once a telemetry period,
        and once more at the next lie after a quarantine began), and after a jump; the quarantine's
        updates it decides."""
        lied = any(v.packets for v in bad.values())
        # a quarantine's first λ is read while the onset's lies are still queued (admitted, not yet
        # counted as lies): the next lie reads it again (Quarantine.begun), not a telemetry period later
        brought_forward = lied and (
            bool(self.quarantine.begun)
            or bool(self.quarantine.suspects)  # a pair with some evidence: its next lie is judged at once
            or now_s - self._last_lie_telemetry >= self.telemetry_period_s
        )
        # a clear is rarely of one counter alone: re-baseline the pairs' now too, one event, one line
        if not (
            jumped
            or brought_forward
            or now_s - self._last_telemetry >= self.telemetry_period_s
            or not self._pair_status
        ):
            return []
        if lied:
            self._last_lie_telemetry = now_s
        return self.telemetry(virtual, now_s)

    def _advance_tau(
        self,
        e: str,
        target: float,
        state: EgressTau,
        offered: CounterValue,
        admitted: CounterValue,
        dt: float,
        dt_a: float,
        free: dict[str, Free],
    ) -> EgressTau:
        """τ's step once enough was admitted (min_packets) or enough time passed; until then the
        period's counts accumulate."""
        o0, a0, t_o, t_a, f0 = self._tau_acc.get(e, (ZERO, ZERO, 0.0, 0.0, None))
        o1, a1 = add_counts(o0, offered), add_counts(a0, admitted)
        t_o, t_a, f1 = t_o + dt, t_a + dt_a, add_free(f0, free.get(e))
        if not (a1.packets >= self.min_packets or t_a >= self.max_interval_s):
            self._tau_acc[e] = (o1, a1, t_o, t_a, f1)
            return state
        # a pair held: (A, R*) of the free pairs bound the rise (no reading: no rise)
        bound = None if f1 is None else (self._bps(f1[1], f1[2]), self._bps(f1[0], f1[2])) if f1[3] else (0.0, 0.0)
        state = tau_step(state, self._bps(a1, t_a), self._bps(o1, t_o), target, self.tau_params, bound)
        self.taus[e] = state
        self._tau_acc.pop(e, None)
        return state

    def _egress_status(
        self, e: str, port: int, target: float, a_bps: float, r_star: float, state: EgressTau, lies: int
    ) -> EgressStatus:
        return EgressStatus(
            e,
            port,
            self.node.interfaces[e].capacity,
            target,
            a_bps,
            r_star,
            state.tau,
            state.congested,
            *self._drops_by_egress.get(e, (0.0, 0)),
            lies,
            pipe=pipe_of(port),
        )

    def _push(self, quarantine: list[Update], batch: list[Update]) -> None:
        """The quarantine's and the egresses' entries in one write; τ saved with them."""
        if quarantine or batch:
            self.driver.write(quarantine + batch)
            self._pushed.update(
                {exact_value(u.entry.key[p4names.EGRESS_PARAMS.keys[0].name]): u.entry.params for u in batch}
            )
            if self.store is not None:
                self.store.save_taus(self.node.name, self.taus, self.quarantine.level)

    def _free(self, virtual: float | None) -> dict[str, Free]:
        """Per egress with a pair held in quarantine: its free pairs' arrivals and admitted bytes
        (pair_bytes, and it less pair_drops) since the last period, read every period while a pair
        is held (two reads of the free pairs' cells). As the frames arrived: the bound is a ratio,
        which 8 bytes more per frame of a pair that inserts change only through δ. Read from their
        own counters, not as the egress's less the held pair's: the free pairs pass whole where τ
        need not rise, so their drops read exactly 0 however far apart the reads are, where a
        difference of the egress's and the held pair's counters would carry the held pair's bytes
        in the gap between reads, and τ would creep up on its positive part."""
        held = {p.egress for p in self.pairs() if p.pid in self.quarantine}
        free = [p for p in self.pairs() if p.egress in held and p.pid not in self.quarantine]
        readings = (Reading.FREE_BYTES, Reading.FREE_DROPS)
        if not held:  # none: no read, and a quarantine that begins later starts from a fresh baseline
            for reading in readings:
                self._last.pop(reading, None)
                self._last_t.pop(reading, None)
            return {}
        pids = sorted(p.pid for p in free)
        known = set(self._last.get(Reading.FREE_BYTES, {})) & set(self._last.get(Reading.FREE_DROPS, {}))
        r, dt = self._read(Reading.FREE_BYTES, pids, virtual)
        d, _ = self._read(Reading.FREE_DROPS, pids, virtual)
        out: dict[str, Free] = {e: (ZERO, ZERO, dt, dt > 0) for e in held}
        for p in free:
            ok = p.pid in known and p.pid in r and p.pid in d
            rp, dp = (r[p.pid], d[p.pid]) if ok else (ZERO, ZERO)
            f0 = out[p.egress]
            out[p.egress] = add_counts(f0[0], rp), add_counts(f0[1], sub_counts(rp, dp)), f0[2], f0[3] and ok
        return out

    def on_period(self, now_ns: int, driver: Driver | None = None) -> Snapshot:
        """The software switch's virtual-time hook (`on_period(now_ns)` or `on_period(now_ns, driver)`):
        one step at that time, on the given driver if one is passed."""
        if driver is not None:
            self.driver = driver
        return self.step(now_ns / 1e9)
