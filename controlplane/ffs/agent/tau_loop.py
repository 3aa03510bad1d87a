# SPDX-License-Identifier: Apache-2.0
"""The τ loop: every period, per managed egress, the offered and admitted rates, τ, and the egress
entries pushed in one atomic batch (docs/control-plane.md).

  read offered (R*_j) and admitted (A_j, counted in the ingress after γ, before the traffic
  manager), malformed  ->  line rates in bit/s (wrap-safe deltas; a counter that went backwards,
  cleared by another client, is re-baselined and decides nothing that period)
  -> tau_step per managed egress -> one atomic batch of set_egress modifications, with the
  quarantine's set_pair modifications of the same period.
"""

from __future__ import annotations

import logging
import time

from ffs import p4names
from ffs.agent.program import egress_entry
from ffs.agent.readings import ZERO, CounterReadings, Reading, add_counts
from ffs.agent.snapshot import EgressStatus, Snapshot
from ffs.driver.base import Driver
from ffs.entries import Update, exact_value
from ffs.ports import pipe_of
from ffs.tau import EgressTau, egress_action_params, tau_step

log = logging.getLogger("ffs.agent")


class TauLoop(CounterReadings):
    def step(self, now_s: float | None = None) -> Snapshot:
        """One control period: R*_j, A_j and the lies at j per egress (three reads of one cell per
        egress, whatever the number of pairs), τ per egress, every egress pushed in one batch. The
        pairs' telemetry (R, drops, lies, F; the quarantine) is read on its own cadence,
        `telemetry_period_s`, and at once when an egress counted a lying frame."""
        virtual = now_s
        now_s = time.monotonic() if now_s is None else now_s
        ports = self._egress_ports()
        offered, dt = self._read(Reading.OFFERED, ports, virtual)
        a, dt_a = self._read(Reading.ADMITTED, ports, virtual)
        bad, _ = self._read(Reading.MALFORMED, ports, virtual)
        # an egress whose counters went backwards decides nothing this period (its τ stays)
        jumped = self._jumped_in(Reading.OFFERED, Reading.ADMITTED, Reading.MALFORMED)
        for port in ports:
            acc = self._since_telemetry.get(port, (ZERO, ZERO))
            self._since_telemetry[port] = (
                None
                if acc is None or port in jumped
                else (add_counts(acc[0], a.get(port, ZERO)), add_counts(acc[1], bad.get(port, ZERO)))
            )
        quarantine = self._release_quarantine(now_s)
        lied = any(v.packets for v in bad.values())
        brought_forward = lied and now_s - self._last_lie_telemetry >= self.telemetry_period_s
        # a clear is rarely of one counter alone: re-baseline the pairs' now too, one event, one line
        if (
            jumped
            or brought_forward
            or now_s - self._last_telemetry >= self.telemetry_period_s
            or not self._pair_status
        ):
            if lied:
                self._last_lie_telemetry = now_s
            quarantine += self.telemetry(virtual, now_s)
        snap = Snapshot(now_s, pairs=self._pair_status, pairs_time_s=self._last_telemetry, ports=self._port_status)
        batch: list[Update] = []
        node = self.current_node()
        for e in sorted(self.fairness):
            port = self.node.interfaces[e].port
            target = node.target(e)
            # A_j: what γ admitted toward j, counted before the traffic manager, so that it exceeds
            # T_j whenever FFS over-admits even on a port that is its own bottleneck; a lying frame
            # is among it (the egress drops it only after it queued, docs/security.md)
            state = self.taus.get(e, EgressTau())
            a_bps, r_star = self._bps(a.get(port, ZERO), dt_a), self._bps(offered.get(port, ZERO), dt)
            if port in jumped:  # no rate this period: τ, the accumulation and the pushed entry stay
                snap.egresses.append(
                    EgressStatus(
                        e,
                        port,
                        self.node.interfaces[e].capacity,
                        target,
                        0.0,
                        0.0,
                        state.tau,
                        state.congested,
                        *self._drops_by_egress.get(e, (0.0, 0)),
                        0,
                        pipe=pipe_of(port),
                    )
                )
                continue
            if dt > self.min_interval_s and dt_a > self.min_interval_s:
                o0, a0, t_o, t_a = self._tau_acc.get(e, (ZERO, ZERO, 0.0, 0.0))
                o1, a1 = add_counts(o0, offered.get(port, ZERO)), add_counts(a0, a.get(port, ZERO))
                t_o, t_a = t_o + dt, t_a + dt_a
                if a1.packets >= self.min_packets or t_a >= self.max_interval_s:
                    state = tau_step(state, self._bps(a1, t_a), self._bps(o1, t_o), target, self.tau_params)
                    self.taus[e] = state
                    self._tau_acc.pop(e, None)
                else:
                    self._tau_acc[e] = (o1, a1, t_o, t_a)
            params = egress_action_params(state, r_star, target)  # C/R* for RI: this period's
            if self._pushed.get(port) != params:  # the switch holds the rest as pushed (the slow check repairs)
                batch.append(egress_entry(port, params, "modify"))
            snap.egresses.append(
                EgressStatus(
                    e,
                    port,
                    self.node.interfaces[e].capacity,
                    target,
                    a_bps,
                    r_star,
                    state.tau,
                    state.congested,
                    *self._drops_by_egress.get(e, (0.0, 0)),
                    bad.get(port, ZERO).packets,
                    pipe=pipe_of(port),
                )
            )
        if not dt > self.min_interval_s:
            batch = []
        if quarantine or batch:
            self.driver.write(quarantine + batch)
            self._pushed.update(
                {exact_value(u.entry.key[p4names.EGRESS_PARAMS.keys[0].name]): u.entry.params for u in batch}
            )
            if self.store is not None:
                self.store.save_taus(self.node.name, self.taus, self.quarantine.level)
        if self._jump_notes:
            log.warning(
                "counters went backwards (cleared by another client?): %s indices; re-baselined, no decision "
                "on them this period",
                ", ".join(self._jump_notes),
            )
            self._jump_notes = []
        self.snapshot = snap
        return snap

    def on_period(self, now_ns: int, driver: Driver | None = None) -> Snapshot:
        """The software switch's virtual-time hook (`on_period(now_ns)` or `on_period(now_ns, driver)`):
        one step at that time, on the given driver if one is passed."""
        if driver is not None:
            self.driver = driver
        return self.step(now_ns / 1e9)
