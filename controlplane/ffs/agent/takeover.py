# SPDX-License-Identifier: Apache-2.0
"""Taking over a switch and keeping it as the agent wants it: reconciliation.

Taking over (start, restart, program reload) and the slow check both reconcile: read back the
owned tables, write only the difference in one atomic batch, so a restart under traffic changes
nothing the data plane is using (docs/control-plane.md, "Restarts"). τ resumes from what the
switch holds and the state file saved.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any

from ffs.agent.readings import CounterReadings
from ffs.agent.selftest import basis_update
from ffs.core import p4names
from ffs.core.entries import Exact, KeyValue, TableEntry, Ternary, Update, exact_value
from ffs.core.labels import decode, encode
from ffs.core.ports import pipe_of
from ffs.core.program import guard_timer, node_updates
from ffs.core.tables import GENERATED_TABLES, egress_action_params
from ffs.core.tau import EgressTau
from ffs.driver.base import DriverError

log = logging.getLogger("ffs.agent")

# the tables the agent writes (and so reads back and repairs); constant tables are the program's
OWNED_TABLES: tuple[str, ...] = tuple(t.name for t in p4names.TABLES if not t.const_entries) + (
    p4names.PORT_METADATA.name,
)
# the generated lookup tables (GENERATED_TABLES, spec §5) hold thousands of immutable entries.
# Reading one back stalls the software switch's packet loop (docs/control-plane.md, "Out-of-band
# changes"), so a restart on the same program skips them and the slow check reads one of them now
# and then, in turn
NODE_TABLES: tuple[str, ...] = tuple(t for t in OWNED_TABLES if t not in GENERATED_TABLES)
GENERATED_EVERY = 6  # slow checks per generated-table read (with 10 s checks: each one every 4 min)


def canonical_key(e: TableEntry) -> tuple[Any, ...]:
    """An entry's identity, the same whichever target read it back (masked values, priority)."""

    def norm(v: KeyValue) -> KeyValue:
        if isinstance(v, Ternary):
            return Ternary(v.value & v.mask, v.mask)
        return v

    return tuple(sorted((k, norm(v)) for k, v in e.key.items())) + (e.priority,)


def canonical_value(e: TableEntry) -> tuple[Any, ...]:
    return (e.action_name, tuple(sorted(e.params.items())))


def _resume_tau(held: EgressTau | None, saved: EgressTau | None) -> EgressTau:
    """τ after a restart. The switch's entry is what is enforced, but only to its code's precision
    (spec §3: 1/128 of an octave); the state file has the exact float of the last period. Use the
    saved value when it is the one the switch holds, the switch's otherwise (the file is stale after
    a crash, or was lost), the file's if the switch lost its tables, else start afresh."""
    if held is None:
        return saved or EgressTau()
    if not held.congested:  # τ is kept while uncongested (the entry carries none)
        return EgressTau(saved.tau if saved is not None else 1.0, False)
    if saved is not None and saved.congested and encode(saved.tau) == encode(held.tau):
        return saved
    return held


class TakeOver(CounterReadings):
    def install(self, now_s: float | None = None) -> None:
        """Take over the switch: resume τ, then reconcile (write only what differs, one batch).

        An agent restart, a crash-restart or an upgrade leaves a switch that already holds the right
        entries untouched, so packets keep flowing through it (docs/control-plane.md, "Restarts")."""
        saved = self.store.load_taus(self.node.name) if self.store is not None else {}
        held = self._held_taus()
        self._resume_quarantine(time.monotonic() if now_s is None else now_s)
        self.taus = {e: _resume_tau(held.get(e), saved.get(e)) for e in self.fairness}
        self._last, self._last_t, self._tau_acc, self._since_telemetry = {}, {}, {}, {}
        self._program_id = self.driver.program_id()
        self._clear_moved_estimates()
        verified = self.store.load_program(self.node.name) if self.store is not None else None
        # the generated tables hold the estimator's scale-down (the weights): verified for this one
        generated = f"{self._program_id} weight-shift {self.lpf.scale_down}"
        # the same program instance: this agent (or its predecessor) verified the generated tables on
        # it, and only an out-of-band change can have altered them since (the slow check's job)
        n = self.reconcile("start", NODE_TABLES if verified == generated else OWNED_TABLES)
        if self.front_panel is not None:
            n += self.front_panel.reconcile()  # ports last: they forward what the tables now decide
            self._port_status = self.front_panel.status()
        if self.store is not None:
            self.store.save_program(self.node.name, generated)
        self.baseline(now_s)
        log.info(
            "took over node=%s pairs=%d egresses=%d program=%s updates=%d tau=%s",
            self.node.name,
            len(self.pairs()),
            len(self.fairness),
            self._program_id,
            n,
            ",".join(f"{e}:{s.tau:.4f}{'' if s.congested else '(uncongested)'}" for e, s in sorted(self.taus.items())),
        )

    def _clear_moved_estimates(self) -> None:
        """A pair's f_est cell is written in the pipe of its ingress port alone, and reads sum the
        pipes (ffs.driver.base.pipe_sum). A pair whose ingress port moved to another pipe (a new
        topology: same interface, another port) left its last F in the old pipe, which every read
        would add to the new one: clear those cells (the live one is rewritten by its next packet)."""
        pairs = self.pairs()
        try:
            cells = self.driver.read_register_pipes(p4names.F_EST.name, [p.pid for p in pairs])
        except DriverError as e:
            log.warning("f_est could not be read per pipe (%s): an estimate left in another pipe is not cleared", e)
            return
        moved = []
        for p in pairs:
            pipe = pipe_of(self.node.interfaces[p.ingress].port)
            if any(v for q, v in enumerate(cells.get(p.pid, ())) if q != pipe):
                moved.append(p)
        for p in moved:
            self.driver.write_register(p4names.F_EST.name, p.pid, 0)
        if moved:
            log.warning(
                "cleared the F estimate that %d pairs left in another pipe (their ingress port moved): %s",
                len(moved),
                " ".join(f"{p.ingress}->{p.egress}" for p in moved[:8]) + (" ..." if len(moved) > 8 else ""),
            )

    def _held_taus(self) -> dict[str, EgressTau]:
        """τ per managed egress as the switch's set_egress entries hold it (spec §5.3: ltau = code(τ)
        while congested; an uncongested entry carries no τ and reads as EgressTau(1.0, False))."""
        ports = {self.node.interfaces[e].port: e for e in self.fairness}
        out = {}
        for entry in self.driver.read_table(p4names.EGRESS_PARAMS.name):
            k = entry.key.get(p4names.EGRESS_PARAMS.keys[0].name)
            e = ports.get(k.value) if isinstance(k, Exact) else None
            if e is None or entry.action_name != "set_egress":
                continue
            if entry.params.get("congested") == 1:
                tau = decode(entry.params["ltau"])
                if tau >= 1.0:
                    out[e] = EgressTau(tau, True)
            else:
                out[e] = EgressTau(1.0, False)
        return out

    def desired(self) -> dict[str, dict[tuple[Any, ...], TableEntry]]:
        """Every entry the agent owns, by table and canonical key."""
        out: dict[str, dict[tuple[Any, ...], TableEntry]] = {t: {} for t in OWNED_TABLES}
        for u in node_updates(self.current_node(), self.lpf, self.guard_timer_ns):
            e = self.quarantine.withhold(u).entry
            out.setdefault(e.table, {})[canonical_key(e)] = e
        return out

    def reconcile(self, why: str, tables: tuple[str, ...] = OWNED_TABLES) -> int:
        """Read every owned table, write the difference to the desired state in one atomic batch
        (deletes first, then inserts and modifications). Egress entries carry τ: an entry the switch
        holds is kept as it is (the τ loop rewrites it each period); a missing one is written from
        the agent's τ. Returns the number of updates written (0: the switch was right)."""
        self._pushed = {}  # what the switch holds is re-read here: push every egress next step
        want = self.desired()
        deletes: list[Update] = []
        puts: list[Update] = []
        for table in tables:
            held = {canonical_key(e): e for e in self.driver.read_table(table)}
            desired = want.get(table, {})
            for k, e in held.items():
                if k not in desired:
                    deletes.append(Update("delete", e))
            for k, e in desired.items():
                h = held.get(k)
                if table == p4names.EGRESS_PARAMS.name:
                    if h is None or h.action_name != e.action_name or set(h.params) != set(e.params):
                        eg = self._egress_of_port(exact_value(e.key[p4names.EGRESS_PARAMS.keys[0].name]))
                        params = egress_action_params(self.taus.get(eg, EgressTau()), 0.0, self.target(eg))
                        puts.append(Update("insert" if h is None else "modify", dataclasses.replace(e, params=params)))
                elif h is None:
                    puts.append(Update("insert", e))
                elif canonical_value(h) != canonical_value(e):
                    puts.append(Update("modify", e))
        batch = deletes + puts
        if batch:
            self.driver.write(batch)  # atomic: all of it or nothing
            counts: dict[str, int] = {}
            for u in batch:
                key = f"{u.entry.table.rsplit('.', 1)[-1]}:{u.kind}"
                counts[key] = counts.get(key, 0) + 1
            log.log(
                logging.WARNING if why == "check" else logging.INFO,
                "reconciled (%s): %d updates %s",
                why,
                len(batch),
                " ".join(f"{k}={v}" for k, v in sorted(counts.items())),
            )
        lpf = self._reconcile_lpf()
        if lpf and why == "check":
            log.warning("reconciled (%s): LPF specs rewritten", why)
        timer = self._reconcile_timer()
        if timer and why == "check":
            log.warning("reconciled (%s): the packet generator's timer restarted", why)
        basis = self._reconcile_frame_basis()
        if basis and why == "check":
            log.warning("reconciled (%s): the frame check's length basis rewritten", why)
        return len(batch) + lpf + timer + basis

    def _reconcile_frame_basis(self) -> int:
        """The frame check's length basis the self-test measured (ffs.agent.selftest), again after a
        reload or an out-of-band change; without a self-test the P4 default stands untouched."""
        if self.selftest is None:
            return 0
        want = basis_update(self.selftest.basis.fcs_counted, bool(self.selftest.basis.deparsed))
        try:
            held = self.driver.read_default(want.entry.table)
            if held.action_name == want.entry.action_name and dict(held.params) == dict(want.entry.params):
                return 0
        except DriverError:
            pass
        self.driver.write([want])
        return 1

    def _reconcile_timer(self) -> int:
        """The guard's timer as the node needs it (one packet per managed egress each period), or
        none; written only if the target runs another (1) or cannot say (a target without a
        generator has no guard, and nothing to reconcile)."""
        if not self.driver.has_pktgen:
            return 0
        want = guard_timer(self.current_node(), self.guard_timer_ns)
        try:
            if self.driver.read_timer() == want:
                return 0
        except DriverError:
            pass
        self.driver.set_timer(want)
        return 1

    def _egress_of_port(self, port: int) -> str:
        return next(e for e in self.fairness if self.node.interfaces[e].port == port)

    def _reconcile_lpf(self) -> int:
        """Each pair's estimator gets its own spec (spec §4), one write per time constant; a group
        is rewritten only if one of its pairs holds another spec (a write restarts the pair's F)."""
        n = 0
        for pids in self.lpf.by_spec([p.pid for p in self.pairs()]).values():
            spec = self.lpf.spec(pids[0])
            try:
                if all(spec.matches(self.driver.read_lpf_spec(p4names.F_LPF.name, i)) for i in pids):
                    continue
            except (DriverError, KeyError, ValueError):
                pass  # a spec that cannot be read back (never written on this target) is written
            self.driver.set_lpf_spec(p4names.F_LPF.name, pids, spec)
            n += 1
        return n

    def check(self) -> int:
        """The slow-period read-back: repair anything changed behind the agent's back (logged). Every
        call reads the node's own tables; every GENERATED_EVERY-th call also one of the generated
        tables, in turn: a generated table's read costs the compliant sender packets on the software
        switch (docs/control-plane.md, "Out-of-band changes")."""
        self._checks += 1
        tables = NODE_TABLES
        if self._checks % GENERATED_EVERY == 0:
            self._check_turn = (self._check_turn + 1) % len(GENERATED_TABLES)
            tables += (GENERATED_TABLES[self._check_turn],)
        return self.reconcile("check", tables)

    def ensure_installed(self) -> bool:
        """Take over again if the pipeline was reloaded under us. True if it did."""
        pid = self.driver.program_id()
        if pid != self._program_id:
            log.warning("pipeline changed (program %s -> %s): reconciling", self._program_id, pid)
            self.install()
            return True
        return False
