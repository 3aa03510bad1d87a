# SPDX-License-Identifier: Apache-2.0
"""The quarantine as the switch sees it: the set_pair entries that withhold part of a lying pair's
share, resumed after a restart, released when their time is up (the judgement itself is
ffs.agent.quarantine's); the queue guard's drains they and a strip port raise."""

from __future__ import annotations

import dataclasses

from ffs.agent.parts import AgentParts
from ffs.agent.quarantine import lm_of
from ffs.agent.snapshot import PairStatus
from ffs.core import p4names
from ffs.core.entries import CounterValue, Update, UpdateKind
from ffs.core.program import guard_updates, pair_entry


class QuarantineEntries(AgentParts):
    @property
    def quarantine_s(self) -> float:
        return self.quarantine.seconds

    @quarantine_s.setter
    def quarantine_s(self, seconds: float) -> None:
        self.quarantine.seconds = seconds

    @property
    def quarantined(self) -> dict[int, float]:
        """pid -> when its quarantine ends (the step's clock)."""
        return self.quarantine.until

    def _mark_quarantine(self, pairs: list[PairStatus]) -> None:
        for st in pairs:
            st.quarantined = st.pid in self.quarantine
            st.withheld = self.quarantine.level.get(st.pid, 0.0) if st.quarantined else 0.0

    def _resume_quarantine(self, now_s: float) -> None:
        """The quarantines a predecessor left on the switch run again (ffs.agent.quarantine)."""
        if self.quarantine.seconds <= 0:
            return
        shared = {pid: lm_of(u.entry.params["nlm"]) for pid, u in self._pair_updates("insert").items()}
        saved = self.store.load_withheld(self.node.name) if self.store is not None else {}
        self.quarantine.resume(self.driver.read_table(p4names.PAIRS.name), shared, saved, now_s)

    def _release_quarantine(self, now_s: float) -> list[Update]:
        """Every step: the set_pair of each pair whose quarantine time is up (its share back), and
        its egress's guard drain."""
        drains = self.quarantine.drains()
        over = self.quarantine.release(now_s)
        if not over:
            return []
        self._mark_quarantine(self._pair_status)
        return self._guard_drains(drains) + [u for pid, u in self._pair_updates("modify").items() if pid in over]

    def _update_quarantine(
        self,
        pairs: list[PairStatus],
        lies: dict[int, CounterValue],
        r: dict[int, CounterValue],
        drops: dict[int, CounterValue],
        survived: dict[int, float],
        now_s: float,
    ) -> list[Update]:
        """The pairs' lies since the last telemetry judged (ffs.agent.quarantine); the set_pair
        modifications of every pair whose withheld fraction changed."""
        # what the pair's bytes weigh in its estimator against what they cost the port (F / R, both
        # line rates): 1 for honest frames on a resetting port, 1/k for lies claiming 1/k of their
        # bytes. Only where the port resets labels: on a trusting one F carries the upstream labels
        # too (honest labels of 2 read as w = 1/2), and its frames passed the upstream node's own
        # frame check, so λ alone judges a lie that reaches it (spec §9)
        resetting = {name for name, i in self.node.interfaces.items() if not i.trust}
        weighed = [st for st in pairs if st.rate_bps > 0 and st.ingress in resetting]
        weight = {st.pid: st.f_bps / st.rate_bps for st in weighed}
        # what γ admitted of the pair over its share, the same period and line rate as R: a held
        # pair's heavy claims set its code's factor from it (spec §9); only where its egress is
        # congested (elsewhere γ admits everyone, at no one's cost)
        congested = {e for e, t in self.taus.items() if t.congested}
        load = {
            st.pid: (st.rate_bps - st.drop_bps) / st.share_bps
            for st in weighed
            if st.share_bps > 0 and st.egress in congested
        }
        # λ in line-rate bytes, as F, R and the share: a lie costs the port its frame and 20 bytes
        lies, r, drops = ({pid: self._line(c) for pid, c in d.items()} for d in (lies, r, drops))
        drains = self.quarantine.drains()
        changed = self.quarantine.judge(self.pairs(), lies, r, drops, survived, now_s, weight, load)
        # a held pair's claims weigh (w − 1) times its admitted bytes above them (γ is uniform within
        # the pair), and it is admitted at most its share's worth at its new code, all it sends if
        # less (an uncongested egress admits everything)
        self.quarantine.excess = {
            st.pid: (eg.port, (weight[st.pid] - 1) * min(st.rate_bps, st.share_bps) / eg.speed)
            for st in weighed
            if st.pid in self.quarantine.factor and (eg := self.node.interfaces[st.egress]).speed > 0
        }
        self._mark_quarantine(pairs)
        return self._guard_drains(drains) + [
            self.quarantine.withhold(u) for pid, u in self._pair_updates("modify").items() if pid in changed
        ]

    def _guard_drains(self, before: dict[int, float]) -> list[Update]:
        """The guard's timer entries of the egresses whose drain factor changed (`Quarantine.drains`)."""
        after = self.quarantine.drains()
        ports = {port for port in before.keys() | after.keys() if before.get(port) != after.get(port)}
        ups = guard_updates(self.current_node(), self.guard_timer_ns)
        return [
            self.quarantine.withhold(dataclasses.replace(u, kind="modify"))
            for u in ups
            if u.entry.table == p4names.TIMER_PORTS.name and u.entry.params["port"] in ports
        ]

    def _strip_drains(self, a: dict[int, CounterValue], sent: dict[int, CounterValue]) -> list[Update]:
        """The guard's timer entries of the egresses whose strip factor changed: per egress that
        admitted frames this period, what they weigh in line-rate bytes as they arrived (`a`)
        over what the port sends of them (`sent`: A_j with the shims inserted and stripped, spec
        §4), where that is above 1 (spec §7.7: the virtual queue adds claims as they arrive, the
        port drains what it sends). In 1/256 steps, so that a steady mix rewrites nothing; an idle
        egress keeps its factor."""
        if self.guard_timer_ns is None:
            return []
        before = self.quarantine.drains()
        for port, c in a.items():
            out = sent.get(port, c)
            line, line_out = c.bytes + self.wire_overhead * c.packets, out.bytes + self.wire_overhead * out.packets
            if c.packets == 0 or line_out <= 0:
                continue
            f = round(line / line_out * 256) / 256
            if f > 1.0:
                self.quarantine.stripping[port] = f
            else:
                self.quarantine.stripping.pop(port, None)
        return self._guard_drains(before)

    def _line(self, c: CounterValue) -> CounterValue:
        """A counter's bytes as line-rate bytes (spec §4: +wire_overhead per frame)."""
        return CounterValue(c.packets, c.bytes + self.wire_overhead * c.packets)

    def _pair_updates(self, kind: UpdateKind) -> dict[int, Update]:
        """The node's set_pair entries by pid, each with its share (no quarantine applied)."""
        node = self.current_node()
        return {p.pid: pair_entry(node.share(p.ingress, p.egress), p, self.lpf, kind) for p in self.pairs()}
