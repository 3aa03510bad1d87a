"""The agent: owns one switch through a Driver, keeps τ per egress, applies fairness matrices.

Data flow every period (docs/control-plane.md):
  read pair_bytes (R_ij), accepted (A_j), pair_drops, f_est  ->  rates in bit/s (wrap-safe deltas)
  -> tau_step per managed egress -> one atomic batch of set_egress modifications.
A fairness-matrix change is validated whole, turned into one batch (pair entries inserted,
modified or deleted, egress entries likewise), applied atomically, then persisted and audited;
if the switch refuses the batch, neither the switch nor the agent's state changes.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field

from ffs import p4names as N
from ffs.agent.matrix import MatrixError, diff_matrices, validate_matrix
from ffs.agent.program import LpfConfig, Pair, egress_entry, node_updates, pair_entry, pairs_of
from ffs.agent.state import StateStore
from ffs.driver.base import CounterValue, Driver, Update
from ffs.tables import egress_params, f_from_lpf
from ffs.tau import EgressTau, TauParams, egress_action_params, tau_step
from ffs.topology import Node, Topology

log = logging.getLogger("ffs.agent")

WRAP = 1 << 64
ZERO = CounterValue(0, 0)


@dataclass
class EgressStatus:
    egress: str
    port: int
    capacity: float
    target: float
    accepted_bps: float = 0.0
    offered_bps: float = 0.0
    tau: float = 1.0
    congested: bool = False
    drop_bps: float = 0.0  # dropped by FFS toward this egress (all its pairs)
    drops: int = 0  # packets dropped in the last period


@dataclass
class PairStatus:
    pid: int
    ingress: str
    egress: str
    share_bps: float
    rate_bps: float = 0.0
    f_bps: float = 0.0
    drop_bps: float = 0.0
    drops: int = 0


@dataclass
class Snapshot:
    time_s: float
    egresses: list[EgressStatus] = field(default_factory=list)
    pairs: list[PairStatus] = field(default_factory=list)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class Agent:
    def __init__(
        self,
        driver: Driver,
        topology: Topology,
        node: str,
        *,
        lpf: LpfConfig = LpfConfig(),
        tau_params: TauParams = TauParams(),
        frame_overhead_bytes: int = 14,
        store: StateStore | None = None,
    ) -> None:
        self.driver = driver
        self.topology = topology
        self.node: Node = topology.node(node)
        self.lpf = lpf.for_node(self.node)  # spec §4: F sized for the fastest port
        self.tau_params = tau_params
        self.frame_overhead = frame_overhead_bytes  # counters count frames; rates are IP-layer
        self.store = store
        self.fairness = {e: dict(col) for e, col in self.node.fairness.items()}
        if store is not None:
            saved = store.load_matrix(self.node.name)
            if saved is not None:
                try:
                    self.fairness = self.validate(saved)
                except MatrixError as e:
                    raise MatrixError(f"{store.matrix_path(self.node.name)}: the saved matrix no longer fits the topology: {e}") from None
        self.taus: dict[str, EgressTau] = {}
        self._last: dict[str, dict[int, CounterValue]] = {}
        self._last_t: dict[str, float] = {}  # when each counter was last read
        self._program_id: str | None = None
        self.snapshot = Snapshot(0.0)

    # -- the static state ------------------------------------------------------------------
    def current_node(self) -> Node:
        return dataclasses.replace(self.node, fairness=self.fairness)

    def pairs(self) -> list[Pair]:
        return pairs_of(self.node, self.fairness)

    def target(self, egress: str) -> float:
        return self.current_node().target(egress)

    def install(self) -> None:
        """Program the whole node: clear what the agent owns, then write everything in one batch."""
        for t in N.TABLES:
            if not t.const_entries:
                self.driver.clear_table(t.name)
        self.driver.clear_table(N.PORT_METADATA.name)
        self.driver.write(node_updates(self.current_node(), self.lpf))
        # every LPF index gets the spec, so a matrix change that adds pairs needs no LPF write and
        # stays one atomic batch
        self.driver.set_lpf_spec(N.F_LPF.name, range(N.F_LPF.size), self.lpf.spec())
        pids = [p.pid for p in self.pairs()]
        self.taus = {e: EgressTau() for e in self.fairness}
        self._last, self._last_t = {}, {}
        self._program_id = self.driver.program_id()
        log.info("installed node=%s pairs=%d egresses=%d program=%s", self.node.name, len(pids), len(self.fairness), self._program_id)

    def ensure_installed(self) -> bool:
        """Re-apply everything if the pipeline was reloaded under us. True if it re-installed."""
        pid = self.driver.program_id()
        if pid != self._program_id:
            log.warning("pipeline changed (program %s -> %s): re-applying state", self._program_id, pid)
            self.install()
            return True
        return False

    # -- the τ loop ------------------------------------------------------------------------
    def _measure(self, name: str, counter: str, indices: list[int], now_s: float | None) -> tuple[dict[int, CounterValue], float]:
        """Increments of one counter since its last read, and the seconds between the two reads.
        Live, each read is timed at the middle of its own RPC, so a slow or starved read (a loaded
        switch answers late) stretches its interval with it instead of inflating the rate; in
        virtual time every read is at `now_s`."""
        t0 = time.monotonic()
        values = self.driver.read_counters(counter, indices)
        t = (t0 + time.monotonic()) / 2 if now_s is None else now_s
        prev = self._last_t.get(name)
        self._last_t[name] = t
        return self._delta(name, values), (0.0 if prev is None else t - prev)

    def _delta(self, name: str, now: dict[int, CounterValue]) -> dict[int, CounterValue]:
        """Per-index counter increments since the last read, modulo 2^64 (a counter may wrap).
        An index read for the first time (a pair or egress a matrix change added) has no baseline
        yet and counts 0 for this period."""
        last = self._last.get(name, {})
        self._last[name] = now
        out = {}
        for i, v in now.items():
            b = last.get(i)
            out[i] = ZERO if b is None else CounterValue((v.packets - b.packets) % WRAP, (v.bytes - b.bytes) % WRAP)
        return out

    def _bps(self, c: CounterValue, dt: float) -> float:
        return max(0, c.bytes - self.frame_overhead * c.packets) * 8 / dt if dt > 0 else 0.0

    def step(self, now_s: float | None = None) -> Snapshot:
        """One control period: measure, update τ per egress, push every egress in one batch."""
        virtual = now_s
        now_s = time.monotonic() if now_s is None else now_s
        pairs = self.pairs()
        pids = [p.pid for p in pairs]
        ports = sorted({self.node.interfaces[e].port for e in self.fairness})
        r, dt = self._measure("R", N.PAIR_BYTES.name, pids, virtual)
        drops, dt_d = self._measure("D", N.PAIR_DROPS.name, pids, virtual)
        a, dt_a = self._measure("A", N.ACCEPTED.name, ports, virtual)
        f_est = self.driver.read_registers(N.F_EST.name, pids)
        snap = Snapshot(now_s)
        node = self.current_node()
        by_egress: dict[str, float] = {}
        drops_by_egress: dict[str, tuple[float, int]] = {}
        for p in pairs:
            rd, dd = r.get(p.pid, ZERO), drops.get(p.pid, ZERO)  # a target may leave out never-hit cells
            st = PairStatus(
                p.pid, p.ingress, p.egress, node.share(p.ingress, p.egress),
                self._bps(rd, dt),
                f_from_lpf(f_est.get(p.pid, 0), self.lpf.time_constant_ns, self.lpf.scale_down),
                self._bps(dd, dt_d),
                dd.packets,
            )
            by_egress[p.egress] = by_egress.get(p.egress, 0.0) + st.rate_bps
            d_bps, d_pk = drops_by_egress.get(p.egress, (0.0, 0))
            drops_by_egress[p.egress] = (d_bps + st.drop_bps, d_pk + st.drops)
            snap.pairs.append(st)
        batch: list[Update] = []
        for e in sorted(self.fairness):
            port = self.node.interfaces[e].port
            target = self.target(e)
            a_bps = self._bps(a.get(port, ZERO), dt_a)
            r_star = by_egress.get(e, 0.0)
            state = self.taus.get(e, EgressTau())
            if dt > 0 and dt_a > 0:
                state = tau_step(state, a_bps, r_star, target, self.tau_params)
                self.taus[e] = state
            batch.append(egress_entry(port, egress_action_params(state, r_star, target), "modify"))
            snap.egresses.append(
                EgressStatus(e, port, self.node.interfaces[e].capacity, target, a_bps, r_star, state.tau, state.congested,
                             *drops_by_egress.get(e, (0.0, 0)))
            )
        if dt > 0 and batch:
            self.driver.write(batch)
        self.snapshot = snap
        return snap

    def on_period(self, now_ns: int, driver: Driver | None = None) -> Snapshot:
        """The software switch's virtual-time hook (`on_period(now_ns)` or `on_period(now_ns, driver)`):
        one step at that time, on the given driver if one is passed."""
        if driver is not None:
            self.driver = driver
        return self.step(now_ns / 1e9)

    # -- fairness matrices -------------------------------------------------------------------
    def validate(self, fairness: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return validate_matrix(self.node, fairness)

    def matrix_updates(self, new: dict[str, dict[str, float]]) -> list[Update]:
        old_pairs = {p.pid: p for p in self.pairs()}
        new_pairs = {p.pid: p for p in pairs_of(self.node, new)}
        ups: list[Update] = []
        old_node = self.current_node()
        new_node = dataclasses.replace(self.node, fairness=new)
        for pid, p in sorted(new_pairs.items()):
            m = new_node.share(p.ingress, p.egress)
            if pid not in old_pairs:
                ups.append(pair_entry(m, p, self.lpf, "insert"))
            elif m != old_node.share(p.ingress, p.egress):
                ups.append(pair_entry(m, p, self.lpf, "modify"))
        for pid, p in sorted(old_pairs.items()):
            if pid not in new_pairs:
                ups.append(pair_entry(0.0, p, self.lpf, "delete"))
        for e in sorted(set(new) - set(self.fairness)):
            ups.append(egress_entry(self.node.interfaces[e].port, egress_params(None, False, None), "insert"))
        for e in sorted(set(self.fairness) - set(new)):
            ups.append(egress_entry(self.node.interfaces[e].port, egress_params(None, False, None), "delete"))
        return ups

    def apply_matrix(self, fairness: dict[str, dict[str, float]], who: str = "agent", uid: int | None = None) -> list[dict]:
        """Validate, apply atomically, persist, audit. Returns the list of changes.

        The new state file is written (and fsynced) before the switch sees the batch and renamed into
        place only after the switch accepted it: a refusal leaves the switch, the agent and the file
        as they were, and an accepted change is never lost to a full disk."""
        new = self.validate(fairness)
        changes = diff_matrices(self.fairness, new)
        ups = self.matrix_updates(new)
        staged = self.store.stage_matrix(self.node.name, new) if self.store is not None and changes else None
        try:
            if ups:
                self.driver.write(ups)  # atomic: the switch keeps the old matrix if this raises
        except BaseException:
            if staged is not None:
                staged.unlink(missing_ok=True)
            raise
        if staged is not None:
            self.store.commit_matrix(self.node.name, staged)
        self.fairness = new
        for e in new:
            self.taus.setdefault(e, EgressTau())
        for e in list(self.taus):
            if e not in new:
                del self.taus[e]
        if self.store is not None and changes:
            self.store.audit(who, "matrix", changes, uid=uid)
        log.info("matrix applied by=%s uid=%s changes=%d", who, uid, len(changes))
        return changes
