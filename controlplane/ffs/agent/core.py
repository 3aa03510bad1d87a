"""The agent: owns one switch through a Driver, keeps τ per egress, applies fairness matrices.

Taking over a switch (start, restart, program reload) and the slow check both reconcile: read back
the owned tables, write only the difference in one atomic batch, so a restart under traffic
changes nothing the data plane is using (docs/control-plane.md, "Restarts").

Data flow every period (docs/control-plane.md):
  read offered (R*_j) and admitted (A_j, counted in the ingress after γ, before the traffic
  manager), malformed  ->  line rates in bit/s (wrap-safe deltas; a counter that went backwards,
  cleared by another client, is re-baselined and decides nothing that period)
  -> tau_step per managed egress -> one atomic batch of set_egress modifications;
  read pair_malformed -> quarantine a pair whose frames lie about their length (the lying fraction
  of its share withheld for `quarantine_s`, docs/security.md) -> its set_pair modification in the
  same batch.
A fairness-matrix change is validated whole, turned into one batch (pair entries inserted,
modified or deleted, egress entries likewise), audited ahead, applied atomically, then persisted
and settled in the audit log; if the switch refuses the batch, neither the switch nor the agent's
state changes (the audit log marks the attempt aborted).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ffs import constants
from ffs import p4names
from ffs.agent.frontpanel import FrontPanel, PortStatus
from ffs.agent.matrix import MatrixError, diff_matrices, validate_matrix
from ffs.agent.program import (
    LPF_PACKETS,
    LpfConfig,
    Pair,
    egress_entry,
    frames_per_time_constant,
    largest_frame_bits,
    node_updates,
    pair_entry,
    pairs_of,
    short_action,
)
from ffs.agent.quarantine import Quarantine, lm_of
from ffs.agent.state import StateStore
from ffs.driver.base import Driver, DriverError
from ffs.entries import CounterValue, Exact, KeyValue, TableEntry, Ternary, Update, UpdateKind, exact_value
from ffs.labels import decode, encode
from ffs.ports import pipe_of
from ffs.tables import egress_params, f_from_lpf, static_updates
from ffs.tau import EgressTau, TauParams, egress_action_params, tau_step
from ffs.topology import Node, Topology

log = logging.getLogger("ffs.agent")

WRAP = 1 << 64
# a counter read below its last reading wrapped (a small difference modulo 2^64) or was cleared by
# another client (a difference near 2^64): 2^63 bytes take 5.8 years at 400 Gb/s, so a difference
# of at least this much is a clear
JUMP = 1 << 63
ZERO = CounterValue(0, 0)


def _add(a: CounterValue, b: CounterValue) -> CounterValue:
    return CounterValue(a.packets + b.packets, a.bytes + b.bytes)
# the tables the agent writes (and so reads back and repairs); constant tables are the program's
OWNED_TABLES: tuple[str, ...] = tuple(t.name for t in p4names.TABLES if not t.const_entries) + (p4names.PORT_METADATA.name,)
# the generated lookup tables (spec §5): thousands of immutable entries. Reading one back costs the
# software switch up to ~170 ms of CPU, which stalls its packet loop, so a restart on the same
# program skips them and the slow check reads one of them now and then, in turn
GENERATED_TABLES: tuple[str, ...] = tuple(sorted({u.entry.table for u in static_updates()}))
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
    return (short_action(e.action), tuple(sorted(e.params.items())))


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
    drop_bps: float = 0.0  # dropped by FFS toward this egress (all its pairs), at the last telemetry
    drops: int = 0  # packets dropped between the last two telemetries
    malformed: int = 0  # frames the egress dropped in the last period: bytes disagreeing with the IP length (spec §7.3)
    pipe: int = 0  # the pipe of the egress port, which counts A_j and the lies at j


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
    malformed: int = 0  # its frames the egress dropped for a lying length in the last period
    malformed_bytes: int = 0
    quarantined: bool = False  # part of its share is withheld for lying frames (spec §7.3, docs/security.md)
    withheld: float = 0.0  # that part: the lying fraction of its admitted bytes (1: all of its share)
    pipe: int = 0  # the pipe of its ingress port, which holds its estimator, counters and f_est cell


@dataclass
class Snapshot:
    time_s: float
    egresses: list[EgressStatus] = field(default_factory=list)
    pairs: list[PairStatus] = field(default_factory=list)
    pairs_time_s: float = float("-inf")  # when the pairs (and the egresses' drops) were read: telemetry
    ports: list[PortStatus] = field(default_factory=list)  # front-panel ports (Tofino, --target tofino)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def tau_display(tau: float | None, congested: bool) -> str:
    """τ as every output shows it: the value, and "(uncongested)" when no drop uses it (γ = 1,
    spec §5.3). The exact allocator has no τ for an uncongested egress."""
    if tau is None or tau == float("inf"):
        return "uncongested"
    return f"{tau:.4f}" if congested else f"{tau:.4f} (uncongested)"


def _resume(held: EgressTau | None, saved: EgressTau | None) -> EgressTau:
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


class Agent:
    def __init__(
        self,
        driver: Driver,
        topology: Topology,
        node: str,
        *,
        lpf: LpfConfig = LpfConfig(),
        tau_params: TauParams = TauParams(),
        wire_overhead_bytes: int = constants.WIRE_OVERHEAD,
        store: StateStore | None = None,
        quarantine_s: float = 10.0,
        quarantine_fraction: float = 0.01,
        telemetry_period_s: float = 1.0,
        use_saved_matrix: bool = True,
        manage_ports: bool = False,
        min_packets: int = 100,
        max_interval_s: float = 1.0,
    ) -> None:
        self.driver = driver
        self.topology = topology
        self.node: Node = topology.node(node)
        self.lpf = lpf.for_node(self.node)  # spec §4: τ_F for the smallest share, F's range for the fastest port
        self.tau_params = tau_params
        # counters count frames with their FCS; every rate is a line rate, these bytes more per frame
        self.wire_overhead = wire_overhead_bytes
        self.store = store
        # a pair whose lying frames exceed this fraction of its admitted bytes in a period has that
        # fraction of its share withheld for quarantine_s (0: never): on Tofino the egress drops a
        # lie only after it queued
        self.quarantine = Quarantine(quarantine_s, quarantine_fraction)
        self.fairness = {e: dict(col) for e, col in self.node.fairness.items()}
        if store is not None:
            # a foreign or unreadable file stops here, settled later; --from-topology ignores it
            saved = store.load_matrix(self.node.name) if use_saved_matrix else None
            for line in store.recover(self.node.name):
                log.warning("%s", line)
            if saved is not None:
                try:
                    self.fairness = self.validate(saved)
                except MatrixError as e:
                    raise MatrixError(f"{store.matrix_path(self.node.name)}: the saved matrix no longer fits the topology: {e}") from None
        self._check_estimator(self.fairness)
        self.taus: dict[str, EgressTau] = {}
        self._last: dict[str, dict[int, CounterValue]] = {}
        self._last_t: dict[str, float] = {}  # when each counter was last read
        self._program_id: str | None = None
        # a step over a shorter interval only re-baselines the counters: rates over a sliver of a
        # period are noise, and τ must not move on them (the process sets half its period)
        self.min_interval_s = 0.0
        # τ moves on rates measured over at least `min_packets` admitted frames (or `max_interval_s`):
        # the update is multiplicative, so a noisy A biases τ up by about Var(A)/2·E[A]^2, the
        # inverse of twice the frames it counts (jumbo frames at a short period: a handful per
        # period, +13 % measured); periods are accumulated until the count is reached
        self.min_packets = min_packets
        self.max_interval_s = max_interval_s
        self._tau_acc: dict[str, tuple[CounterValue, CounterValue, float, float]] = {}
        self._check_turn = -1  # which generated table the last slow check read
        self._checks = 0
        self.snapshot = Snapshot(0.0)
        # the pairs' counters and F, read every telemetry_period_s, and at once when an egress saw
        # a lie unless a lie already brought one forward within the last telemetry period: the τ
        # step itself reads one cell per egress, and a lie per period costs it no more than the
        # telemetry's own cadence (docs/benchmarks.md)
        self.telemetry_period_s = telemetry_period_s
        self._last_telemetry = float("-inf")
        self._last_lie_telemetry = float("-inf")
        self._jumped: dict[str, set[int]] = {}  # counter -> the indices that went backwards at its last read
        self._jump_notes: list[str] = []  # those of this step, for its one log line
        # per egress port since the last telemetry: A_j and the lies at j (bytes), to tell what the
        # traffic manager dropped before the frame check could count it; None: a counter jumped
        self._since_telemetry: dict[int, tuple[CounterValue, CounterValue] | None] = {}
        self._pair_status: list[PairStatus] = []
        self._drops_by_egress: dict[str, tuple[float, int]] = {}
        self._pushed: dict[int, dict[str, int]] = {}  # egress port -> the set_egress data last written
        # Tofino's front-panel ports, brought up from the topology (ffs.agent.frontpanel)
        self.front_panel = FrontPanel(driver, self.node) if manage_ports else None
        self._port_status: list[PortStatus] = []

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

    def _check_estimator(self, fairness: dict[str, dict[str, float]]) -> None:
        """Warn when the smallest share carries too few frames per estimator time constant for
        the precision budget (spec §10): it reads high by about one frame in that many."""
        n = frames_per_time_constant(self.node, self.lpf, fairness)
        if n < LPF_PACKETS / 2:
            log.warning("the smallest share carries %.1f frames of %d bytes per estimator time constant (%.0f ms): an "
                        "overloaded pair at that share may lose about %.0f %% of it (docs/spec.md §10)",
                        n, int(largest_frame_bits(self.node) / 8), (self.lpf.time_constant_ns or 0) / 1e6, 100 / max(n, 1e-9))

    # -- the static state ------------------------------------------------------------------
    def current_node(self) -> Node:
        return dataclasses.replace(self.node, fairness=self.fairness)

    def pairs(self) -> list[Pair]:
        return pairs_of(self.node, self.fairness)

    def target(self, egress: str) -> float:
        return self.current_node().target(egress)

    def install(self, now_s: float | None = None) -> None:
        """Take over the switch: resume τ, then reconcile (write only what differs, one batch).

        An agent restart, a crash-restart or an upgrade leaves a switch that already holds the right
        entries untouched, so packets keep flowing through it (docs/control-plane.md, "Restarts")."""
        saved = self.store.load_taus(self.node.name) if self.store is not None else {}
        held = self._held_taus()
        self._resume_quarantine(time.monotonic() if now_s is None else now_s)
        self.taus = {e: _resume(held.get(e), saved.get(e)) for e in self.fairness}
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
        log.info("took over node=%s pairs=%d egresses=%d program=%s updates=%d tau=%s", self.node.name, len(self.pairs()),
                 len(self.fairness), self._program_id, n,
                 ",".join(f"{e}:{s.tau:.4f}{'' if s.congested else '(uncongested)'}" for e, s in sorted(self.taus.items())))

    def _resume_quarantine(self, now_s: float) -> None:
        """The quarantines a predecessor left on the switch run again (ffs.agent.quarantine)."""
        if self.quarantine.seconds <= 0:
            return
        shared = {pid: lm_of(u.entry.params["nlm"]) for pid, u in self._pair_updates("insert").items()}
        saved = self.store.load_withheld(self.node.name) if self.store is not None else {}
        self.quarantine.resume(self.driver.read_table(p4names.PAIRS.name), shared, saved, now_s)

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
            log.warning("cleared the F estimate that %d pairs left in another pipe (their ingress port moved): %s",
                        len(moved), " ".join(f"{p.ingress}->{p.egress}" for p in moved[:8]) + (" ..." if len(moved) > 8 else ""))

    def _held_taus(self) -> dict[str, EgressTau]:
        """τ per managed egress as the switch's set_egress entries hold it (spec §5.3: ltau = code(τ)
        while congested; an uncongested entry carries no τ and reads as EgressTau(1.0, False))."""
        ports = {self.node.interfaces[e].port: e for e in self.fairness}
        out = {}
        for entry in self.driver.read_table(p4names.EGRESS_PARAMS.name):
            k = entry.key.get(p4names.EGRESS_PARAMS.keys[0].name)
            e = ports.get(k.value) if isinstance(k, Exact) else None
            if e is None or short_action(entry.action) != "set_egress":
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
        for u in node_updates(self.current_node(), self.lpf):
            e = self.quarantine.withhold(u).entry
            out.setdefault(e.table, {})[canonical_key(e)] = e
        return out

    def _release_quarantine(self, now_s: float) -> list[Update]:
        """Every step: the set_pair of each pair whose quarantine time is up (its share back)."""
        over = self.quarantine.release(now_s)
        if not over:
            return []
        self._mark_quarantine(self._pair_status)
        return [u for pid, u in self._pair_updates("modify").items() if pid in over]

    def _update_quarantine(self, pairs: list[PairStatus], lies: dict[int, CounterValue], r: dict[int, CounterValue],
                           drops: dict[int, CounterValue], survived: dict[int, float], now_s: float) -> list[Update]:
        """The pairs' lies since the last telemetry judged (ffs.agent.quarantine); the set_pair
        modifications of every pair whose withheld fraction changed."""
        changed = self.quarantine.judge(self.pairs(), lies, r, drops, survived, now_s)
        self._mark_quarantine(pairs)
        if not changed:
            return []
        return [self.quarantine.withhold(u) for pid, u in self._pair_updates("modify").items() if pid in changed]

    def _pair_updates(self, kind: UpdateKind) -> dict[int, Update]:
        """The node's set_pair entries by pid, each with its share (no quarantine applied)."""
        node = self.current_node()
        return {p.pid: pair_entry(node.share(p.ingress, p.egress), p, self.lpf, kind) for p in self.pairs()}

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
                    if h is None or short_action(h.action) != short_action(e.action) or set(h.params) != set(e.params):
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
            log.log(logging.WARNING if why == "check" else logging.INFO, "reconciled (%s): %d updates %s", why, len(batch),
                    " ".join(f"{k}={v}" for k, v in sorted(counts.items())))
        lpf = self._reconcile_lpf()
        if lpf and why == "check":
            log.warning("reconciled (%s): LPF specs rewritten", why)
        return len(batch) + lpf

    def _egress_of_port(self, port: int) -> str:
        return next(e for e in self.fairness if self.node.interfaces[e].port == port)

    def _reconcile_lpf(self) -> int:
        """Every LPF index gets the spec (so a matrix change that adds pairs needs no LPF write and
        stays one atomic batch); rewritten only if an index in use holds another spec."""
        spec = self.lpf.spec()
        probe = sorted({0, p4names.F_LPF.size - 1, *(p.pid for p in self.pairs())})
        try:
            if all(spec.matches(self.driver.read_lpf_spec(p4names.F_LPF.name, i)) for i in probe):
                return 0
        except (DriverError, KeyError, ValueError):
            pass  # a spec that cannot be read back (never written on this target) is written
        self.driver.set_lpf_spec(p4names.F_LPF.name, range(p4names.F_LPF.size), spec)
        return 1

    def check(self) -> int:
        """The slow-period read-back: repair anything changed behind the agent's back (logged). Every
        call reads the node's own tables; every GENERATED_EVERY-th call also one of the generated
        tables, in turn (measured live on the software switch: a read of a generated table every
        second cost the compliant sender 1.2 % of its packets; one every sixth second, 0.02 %)."""
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

    # -- the τ loop ------------------------------------------------------------------------
    def _egress_ports(self) -> list[int]:
        return sorted({self.node.interfaces[e].port for e in self.fairness})

    def baseline(self, now_s: float | None = None) -> None:
        """Read every counter once, so the first period after a (re)start measures a full interval
        and updates τ like any other (a restart does not skip a τ step)."""
        pids = [p.pid for p in self.pairs()]
        ports = self._egress_ports()
        self._measure("O", p4names.OFFERED.name, ports, now_s)
        self._measure("A", p4names.ADMITTED.name, ports, now_s)
        self._measure("X", p4names.MALFORMED.name, ports, now_s)
        self._measure("E", p4names.ACCEPTED.name, ports, now_s)
        self._since_telemetry = {}
        self._measure("R", p4names.PAIR_BYTES.name, pids, now_s)
        self._measure("D", p4names.PAIR_DROPS.name, pids, now_s)
        self._measure("M", p4names.PAIR_MALFORMED.name, pids, now_s)
        self._last_telemetry = now_s if now_s is not None else time.monotonic()

    def _measure(self, name: str, counter: str, indices: list[int], now_s: float | None) -> tuple[dict[int, CounterValue], float]:
        """Increments of one counter since its last read, and the seconds between the two reads.
        Live, each read is timed at the middle of its own RPC, so a slow or starved read (a loaded
        switch answers late) stretches its interval with it instead of inflating the rate; in
        virtual time every read is at `now_s`."""
        t0 = time.monotonic()
        values = self.driver.read_counters(counter, indices) if indices else {}  # none: no read (a driver reads all)
        t = (t0 + time.monotonic()) / 2 if now_s is None else now_s
        prev = self._last_t.get(name)
        self._last_t[name] = t
        return self._delta(name, values, counter), (0.0 if prev is None else t - prev)

    def _delta(self, name: str, now: dict[int, CounterValue], counter: str = "") -> dict[int, CounterValue]:
        """Per-index counter increments since the last read, modulo 2^64 (a counter may wrap).
        An index read for the first time (a pair or egress a matrix change added) has no baseline
        yet and counts 0 for this period. An index that went backwards (another client cleared the
        counter; JUMP) is left out, re-baselined and listed in `_jumped[name]` (the step logs them
        in one line): nothing is decided on it this period."""
        last = self._last.get(name, {})
        self._last[name] = now
        out = {}
        jumped = set()
        for i, v in now.items():
            b = last.get(i)
            if b is None:
                out[i] = ZERO
                continue
            d = CounterValue((v.packets - b.packets) % WRAP, (v.bytes - b.bytes) % WRAP)
            if d.packets >= JUMP or d.bytes >= JUMP:
                jumped.add(i)
            else:
                out[i] = d
        self._jumped[name] = jumped
        if jumped:
            self._jump_notes.append(f"{(counter or name).rsplit('.', 1)[-1]} at {len(jumped)} of {len(now)}")
        return out

    def _bps(self, c: CounterValue, dt: float) -> float:
        return (c.bytes + self.wire_overhead * c.packets) * 8 / dt if dt > 0 else 0.0

    def step(self, now_s: float | None = None) -> Snapshot:
        """One control period: R*_j, A_j and the lies at j per egress (three reads of one cell per
        egress, whatever the number of pairs), τ per egress, every egress pushed in one batch. The
        pairs' telemetry (R, drops, lies, F; the quarantine) is read on its own cadence,
        `telemetry_period_s`, and at once when an egress counted a lying frame."""
        virtual = now_s
        now_s = time.monotonic() if now_s is None else now_s
        ports = self._egress_ports()
        offered, dt = self._measure("O", p4names.OFFERED.name, ports, virtual)
        a, dt_a = self._measure("A", p4names.ADMITTED.name, ports, virtual)
        bad, _ = self._measure("X", p4names.MALFORMED.name, ports, virtual)
        # an egress whose counters went backwards decides nothing this period (its τ stays)
        jumped = self._jumped.get("O", set()) | self._jumped.get("A", set()) | self._jumped.get("X", set())
        for port in ports:
            acc = self._since_telemetry.get(port, (ZERO, ZERO))
            self._since_telemetry[port] = None if acc is None or port in jumped else (
                _add(acc[0], a.get(port, ZERO)), _add(acc[1], bad.get(port, ZERO)))
        quarantine = self._release_quarantine(now_s)
        lied = any(v.packets for v in bad.values())
        brought_forward = lied and now_s - self._last_lie_telemetry >= self.telemetry_period_s
        # a clear is rarely of one counter alone: re-baseline the pairs' now too, one event, one line
        if jumped or brought_forward or now_s - self._last_telemetry >= self.telemetry_period_s or not self._pair_status:
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
                snap.egresses.append(EgressStatus(e, port, self.node.interfaces[e].capacity, target, 0.0, 0.0, state.tau,
                                                  state.congested, *self._drops_by_egress.get(e, (0.0, 0)), 0,
                                                  pipe=pipe_of(port)))
                continue
            if dt > self.min_interval_s and dt_a > self.min_interval_s:
                o0, a0, t_o, t_a = self._tau_acc.get(e, (ZERO, ZERO, 0.0, 0.0))
                o1, a1 = _add(o0, offered.get(port, ZERO)), _add(a0, a.get(port, ZERO))
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
                EgressStatus(e, port, self.node.interfaces[e].capacity, target, a_bps, r_star, state.tau, state.congested,
                             *self._drops_by_egress.get(e, (0.0, 0)), bad.get(port, ZERO).packets, pipe=pipe_of(port))
            )
        if not dt > self.min_interval_s:
            batch = []
        if quarantine or batch:
            self.driver.write(quarantine + batch)
            self._pushed.update({exact_value(u.entry.key[p4names.EGRESS_PARAMS.keys[0].name]): u.entry.params for u in batch})
            if self.store is not None:
                self.store.save_taus(self.node.name, self.taus, self.quarantine.level)
        if self._jump_notes:
            log.warning("counters went backwards (cleared by another client?): %s indices; re-baselined, no decision "
                        "on them this period", ", ".join(self._jump_notes))
            self._jump_notes = []
        self.snapshot = snap
        return snap

    def telemetry(self, virtual: float | None, now_s: float) -> list[Update]:
        """The pairs' counters since the last telemetry (R, drops, lies) and their F: status,
        metrics and the quarantine, whose set_pair changes it returns."""
        pairs = self.pairs()
        pids = [p.pid for p in pairs]
        r, dt = self._measure("R", p4names.PAIR_BYTES.name, pids, virtual)
        drops, dt_d = self._measure("D", p4names.PAIR_DROPS.name, pids, virtual)
        lies, _ = self._measure("M", p4names.PAIR_MALFORMED.name, pids, virtual)
        f_est = self.driver.read_registers(p4names.F_EST.name, pids)
        survived = self._survived(virtual)
        node = self.current_node()
        scale_down = constants.LPF_SCALE_DOWN if self.lpf.scale_down is None else self.lpf.scale_down  # sized in __init__
        status: list[PairStatus] = []
        drops_by_egress: dict[str, tuple[float, int]] = {}
        for p in pairs:
            rd, dd = r.get(p.pid, ZERO), drops.get(p.pid, ZERO)  # a target may leave out never-hit cells (and a jump)
            st = PairStatus(
                p.pid, p.ingress, p.egress, node.share(p.ingress, p.egress),
                self._bps(rd, dt),
                f_from_lpf(f_est.get(p.pid, 0), self.lpf.time_constant_ns or constants.LPF_TIME_CONSTANT_NS, scale_down),
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
        skip = self._jumped.get("R", set()) | self._jumped.get("D", set()) | self._jumped.get("M", set())
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
        accepted, _ = self._measure("E", p4names.ACCEPTED.name, ports, virtual)
        since, self._since_telemetry = self._since_telemetry, {}
        out = {}
        for port in ports:
            acc = since.get(port, (ZERO, ZERO))
            if acc is None or port not in accepted:
                continue
            a, x = acc
            out[port] = min(1.0, (accepted[port].bytes + x.bytes) / a.bytes) if a.bytes else 1.0
        return out

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
        return [self.quarantine.withhold(u) for u in ups]  # a new share does not lift a quarantine

    def apply_matrix(self, fairness: dict[str, dict[str, float]], who: str = "agent", uid: int | None = None) -> list[dict[str, Any]]:
        """Validate, audit ahead, apply atomically, persist, settle. Returns the list of changes.

        The order is the audit's guarantee (docs/control-plane.md): the record is fsynced in the audit
        log first, then the new state file is staged (fsynced), then the switch gets the batch, then the
        rename commits the state file, then the record's outcome is appended. A refusal leaves the
        switch, the agent and the file as they were (the record is marked aborted); a crash at any
        step is settled by `StateStore.recover` at the next start."""
        new = self.validate(fairness)
        self._check_estimator(new)
        changes = diff_matrices(self.fairness, new)
        ups = self.matrix_updates(new)
        store = self.store if changes else None
        record = store.record(who, "matrix", changes, uid) if store is not None else None
        staged = None
        if store is not None and record is not None:
            store.begin(record)
            store.reached("logged")
            staged = store.stage_matrix(self.node.name, new, record)  # the record rides in the file
            store.reached("staged")
        try:
            if ups:
                self.driver.write(ups)  # atomic: the switch keeps the old matrix if this raises
        except BaseException as e:
            if store is not None and staged is not None and record is not None:
                staged.unlink(missing_ok=True)
                store.settle(record["id"], "abort", f"the switch refused it: {e}")
            raise
        if store is not None and staged is not None and record is not None:
            store.reached("switched")
            store.commit_matrix(self.node.name, staged)
            store.reached("renamed")
            store.settle(record["id"], "commit", "applied")
            store.reached("committed")
        self.fairness = new
        for egress in new:
            self.taus.setdefault(egress, EgressTau())
        for egress in list(self.taus):
            if egress not in new:
                del self.taus[egress]
        log.info("matrix applied by=%s uid=%s changes=%d", who, uid, len(changes))
        return changes
