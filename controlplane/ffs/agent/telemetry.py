# SPDX-License-Identifier: Apache-2.0
"""The pairs' telemetry: their counters (R, drops, lies) and F, read on a cadence of their own, and
what the quarantine judges from them (a pair whose frames lie about their length has the lying
fraction of its share withheld for `quarantine_s`, docs/security.md).
"""

from __future__ import annotations

from ffs.agent.readings import ZERO, CounterReadings, Reading
from ffs.agent.snapshot import PairStatus
from ffs.core import constants, p4names
from ffs.core.entries import Update
from ffs.core.ports import pipe_of
from ffs.core.tables import f_from_lpf


class Telemetry(CounterReadings):
    def telemetry(self, virtual: float | None, now_s: float) -> list[Update]:
        """The pairs' counters since the last telemetry (R, drops, lies) and their F: status,
        metrics and the quarantine, whose set_pair changes it returns."""
        pairs = self.pairs()
        pids = [p.pid for p in pairs]
        r, dt = self._read(Reading.PAIR_BYTES, pids, virtual)
        drops, dt_d = self._read(Reading.PAIR_DROPS, pids, virtual)
        lies, _ = self._read(Reading.PAIR_MALFORMED, pids, virtual)
        f_est = self.driver.read_registers(p4names.F_EST.name, pids)
        survived = self._survived(virtual)
        node = self.current_node()
        scale_down = (
            constants.LPF_SCALE_DOWN if self.lpf.scale_down is None else self.lpf.scale_down
        )  # sized in __init__
        status: list[PairStatus] = []
        drops_by_egress: dict[str, tuple[float, int]] = {}
        for p in pairs:
            rd, dd = r.get(p.pid, ZERO), drops.get(p.pid, ZERO)  # a target may leave out never-hit cells (and a jump)
            st = PairStatus(
                p.pid,
                p.ingress,
                p.egress,
                node.share(p.ingress, p.egress),
                self._bps(rd, dt),
                f_from_lpf(f_est.get(p.pid, 0), self.lpf.tc(p.pid), scale_down),
                self._bps(dd, dt_d),
                dd.packets,
                lies.get(p.pid, ZERO).packets,
                lies.get(p.pid, ZERO).bytes,
                pipe=pipe_of(self.node.interfaces[p.ingress].port),
            )
            d_bps, d_pk = drops_by_egress.get(p.egress, (0.0, 0))
            drops_by_egress[p.egress] = (d_bps + st.drop_bps, d_pk + st.drops)
            status.append(st)
        # a pair whose counters jumped is not judged this period: it is left out of the three
        skip = self._jumped_in(Reading.PAIR_BYTES, Reading.PAIR_DROPS, Reading.PAIR_MALFORMED)
        egress_of = {p.pid: self.node.interfaces[p.egress].port for p in pairs}
        judged = [i for i in pids if i not in skip and egress_of[i] in survived]
        r, drops, lies = ({i: c.get(i, ZERO) for i in judged} for c in (r, drops, lies))
        quarantine = self._update_quarantine(status, lies, r, drops, {i: survived[egress_of[i]] for i in judged}, now_s)
        self._pair_status, self._drops_by_egress, self._last_telemetry = status, drops_by_egress, now_s
        if self.front_panel is not None:
            self._port_status = self.front_panel.status()
        return quarantine

    def _survived(self, virtual: float | None) -> dict[int, float]:
        """Per egress port since the last telemetry, the fraction of the bytes γ admitted (A_j) that
        reached the egress pipeline (`accepted` + `malformed`): the rest the traffic manager
        dropped at the tail, lies and honest frames alike, so the frame check counted only this
        fraction of a pair's lies. A port whose counters jumped is left out."""
        ports = self._egress_ports()
        accepted, _ = self._read(Reading.ACCEPTED, ports, virtual)
        since, self._since_telemetry = self._since_telemetry, {}
        out = {}
        for port in ports:
            acc = since.get(port, (ZERO, ZERO))
            if acc is None or port not in accepted:
                continue
            a, x = acc
            out[port] = min(1.0, (accepted[port].bytes + x.bytes) / a.bytes) if a.bytes else 1.0
        return out
