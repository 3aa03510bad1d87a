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
import math
import time
from dataclasses import dataclass, field

from ffs import p4names as N
from ffs.agent.program import LpfConfig, Pair, egress_entry, node_updates, pair_entry, pairs_of
from ffs.agent.state import StateStore
from ffs.driver.base import CounterValue, Driver, Update
from ffs.tables import egress_params, f_from_lpf
from ffs.tau import EgressTau, TauParams, egress_action_params, tau_step
from ffs.topology import Node, Topology

log = logging.getLogger("ffs.agent")

WRAP = 1 << 64


class MatrixError(ValueError):
    """A proposed fairness matrix is invalid; nothing was changed."""


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
        self.lpf = lpf
        self.tau_params = tau_params
        self.frame_overhead = frame_overhead_bytes  # counters count frames; rates are IP-layer
        self.store = store
        self.fairness = {e: dict(col) for e, col in self.node.fairness.items()}
        if store is not None:
            saved = store.load_matrix(self.node.name)
            if saved is not None:
                self.fairness = self.validate(saved)
        self.taus: dict[str, EgressTau] = {}
        self._last: dict[str, dict[int, CounterValue]] = {}
        self._last_t: float | None = None
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
        pids = [p.pid for p in self.pairs()]
        if pids:
            self.driver.set_lpf_spec(N.F_LPF.name, pids, self.lpf.spec())
        self.taus = {e: EgressTau() for e in self.fairness}
        self._last, self._last_t = {}, None
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
    def _delta(self, name: str, now: dict[int, CounterValue]) -> dict[int, CounterValue]:
        last = self._last.get(name)
        self._last[name] = now
        if last is None:
            return {i: CounterValue(0, 0) for i in now}
        return {
            i: CounterValue((v.packets - last[i].packets) % WRAP, (v.bytes - last[i].bytes) % WRAP) for i, v in now.items()
        }

    def _bps(self, c: CounterValue, dt: float) -> float:
        return max(0, c.bytes - self.frame_overhead * c.packets) * 8 / dt if dt > 0 else 0.0

    def step(self, now_s: float | None = None) -> Snapshot:
        """One control period: measure, update τ per egress, push every egress in one batch."""
        now_s = time.monotonic() if now_s is None else now_s
        pairs = self.pairs()
        pids = [p.pid for p in pairs]
        ports = sorted({self.node.interfaces[e].port for e in self.fairness})
        r = self._delta("R", self.driver.read_counters(N.PAIR_BYTES.name, pids))
        drops = self._delta("D", self.driver.read_counters(N.PAIR_DROPS.name, pids))
        a = self._delta("A", self.driver.read_counters(N.ACCEPTED.name, ports))
        f_est = self.driver.read_registers(N.F_EST.name, pids)
        dt = 0.0 if self._last_t is None else now_s - self._last_t
        self._last_t = now_s
        snap = Snapshot(now_s)
        by_egress: dict[str, float] = {}
        for p in pairs:
            st = PairStatus(
                p.pid, p.ingress, p.egress, self.current_node().share(p.ingress, p.egress),
                self._bps(r[p.pid], dt),
                f_from_lpf(f_est.get(p.pid, 0), self.lpf.time_constant_ns, self.lpf.scale_down),
                self._bps(drops[p.pid], dt),
                drops[p.pid].packets,
            )
            by_egress[p.egress] = by_egress.get(p.egress, 0.0) + st.rate_bps
            snap.pairs.append(st)
        batch: list[Update] = []
        for e in sorted(self.fairness):
            port = self.node.interfaces[e].port
            target = self.target(e)
            a_bps = self._bps(a[port], dt)
            r_star = by_egress.get(e, 0.0)
            state = self.taus.get(e, EgressTau())
            if dt > 0:
                state = tau_step(state, a_bps, r_star, target, self.tau_params)
                self.taus[e] = state
            batch.append(egress_entry(port, egress_action_params(state, r_star, target), "modify"))
            snap.egresses.append(
                EgressStatus(e, port, self.node.interfaces[e].capacity, target, a_bps, r_star, state.tau, state.congested)
            )
        if dt > 0 and batch:
            self.driver.write(batch)
        self.snapshot = snap
        return snap

    # -- fairness matrices -------------------------------------------------------------------
    def validate(self, fairness: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        """Check a whole matrix; raise MatrixError naming the first problem."""
        ifs = self.node.interfaces
        if not isinstance(fairness, dict):
            raise MatrixError("a matrix maps egress -> ingress -> rate")
        out: dict[str, dict[str, float]] = {}
        for e, col in fairness.items():
            if e not in ifs:
                raise MatrixError(f"unknown egress interface {e!r} (node {self.node.name} has {', '.join(sorted(ifs))})")
            if not isinstance(col, dict):
                raise MatrixError(f"egress {e}: expected ingress -> rate")
            out[e] = {}
            for i, rate in col.items():
                if i not in ifs:
                    raise MatrixError(f"unknown ingress interface {i!r} (node {self.node.name} has {', '.join(sorted(ifs))})")
                if isinstance(rate, bool) or not isinstance(rate, (int, float)) or math.isnan(rate) or math.isinf(rate):
                    raise MatrixError(f"M({i},{e}) must be a finite rate, got {rate!r}")
                if rate < 0:
                    raise MatrixError(f"M({i},{e}) is negative ({rate!r})")
                out[e][i] = float(rate)
            total = sum(out[e].values())
            limit = self.node.targets.get(e, ifs[e].capacity)
            if total > limit * (1 + 1e-9):
                raise MatrixError(f"entries toward {e} sum to {total:.6g} bit/s, above its {'target' if e in self.node.targets else 'capacity'} {limit:.6g} bit/s")
        return out

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

    def apply_matrix(self, fairness: dict[str, dict[str, float]], who: str = "agent") -> list[dict]:
        """Validate, apply atomically, persist, audit. Returns the list of changes."""
        new = self.validate(fairness)
        changes = _diff(self.fairness, new)
        ups = self.matrix_updates(new)
        if ups:
            self.driver.write(ups)  # atomic: the switch keeps the old matrix if this raises
        added = [p.pid for p in pairs_of(self.node, new) if p.egress not in self.fairness]
        if added:
            self.driver.set_lpf_spec(N.F_LPF.name, added, self.lpf.spec())
        self.fairness = new
        for e in new:
            self.taus.setdefault(e, EgressTau())
        for e in list(self.taus):
            if e not in new:
                del self.taus[e]
        if self.store is not None:
            self.store.save_matrix(self.node.name, new)
            self.store.audit(who, "matrix", changes)
        log.info("matrix applied by=%s changes=%d", who, len(changes))
        return changes


def _diff(old: dict[str, dict[str, float]], new: dict[str, dict[str, float]]) -> list[dict]:
    out = []
    for e in sorted(set(old) | set(new)):
        for i in sorted(set(old.get(e, {})) | set(new.get(e, {}))):
            a, b = old.get(e, {}).get(i), new.get(e, {}).get(i)
            if a != b:
                out.append({"ingress": i, "egress": e, "old": a, "new": b})
    return out
