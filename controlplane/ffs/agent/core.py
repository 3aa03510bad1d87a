# SPDX-License-Identifier: Apache-2.0
"""The agent: owns one switch through a Driver, keeps τ per egress, applies fairness matrices.

`Agent` is the one object the service, ffsctl's local commands and the laboratory use. Its jobs
live each in a module of its own (ffs.agent.parts lists them):

- take-over and reconciliation (`ffs.agent.takeover`): read back the owned tables and write only
  the difference in one atomic batch, so a restart under traffic changes nothing the data plane is
  using (docs/control-plane.md, "Restarts");
- the τ loop (`ffs.agent.tau_loop`): offered and admitted rates per egress, τ, one batch per period;
- the pairs' telemetry (`ffs.agent.telemetry`) and the quarantine's set_pair entries
  (`ffs.agent.quarantine_entries`) of pairs whose frames lie about their length (docs/security.md);
- the audited matrix transaction (`ffs.agent.matrix_transaction`);
- the counter readings under the loop and the telemetry (`ffs.agent.readings`).
"""

from __future__ import annotations

import logging
from typing import Literal

from ffs.agent.frontpanel import FrontPanel
from ffs.agent.matrix_transaction import MatrixTransaction
from ffs.agent.quarantine import Quarantine
from ffs.agent.quarantine_entries import QuarantineEntries
from ffs.agent.snapshot import EgressStatus, PairStatus, Snapshot, tau_display
from ffs.agent.state import StateStore
from ffs.agent.takeover import (
    GENERATED_EVERY,
    NODE_TABLES,
    OWNED_TABLES,
    TakeOver,
    canonical_key,
    canonical_value,
)
from ffs.agent.tau_loop import TauLoop
from ffs.agent.telemetry import Telemetry
from ffs.core import constants
from ffs.core.matrix import MatrixError, validate_saved
from ffs.core.program import LpfConfig, guard_timer_period_ns
from ffs.core.tables import GENERATED_TABLES
from ffs.core.tau import TauParams
from ffs.core.topology import Topology
from ffs.driver.base import Driver

__all__ = [
    "Agent",
    "EgressStatus",
    "GENERATED_EVERY",
    "GENERATED_TABLES",
    "MatrixError",
    "NODE_TABLES",
    "OWNED_TABLES",
    "PairStatus",
    "Snapshot",
    "canonical_key",
    "canonical_value",
    "tau_display",
]

log = logging.getLogger("ffs.agent")


class Agent(TakeOver, TauLoop, Telemetry, QuarantineEntries, MatrixTransaction):
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
        guard_timer_ns: int | Literal["auto"] | None = "auto",
    ) -> None:
        self.driver = driver
        self.topology = topology
        self.selftest = None
        self.node = topology.node(node)
        self.lpf = lpf.for_node(self.node)  # spec §4: τ_F per pair, F's range for the fastest port
        self.tau_params = tau_params
        # counters count frames with their FCS; every rate is a line rate, these bytes more per frame
        self.wire_overhead = wire_overhead_bytes
        self.store = store
        # a pair whose lying frames exceed this fraction of its admitted bytes in a period has that
        # fraction of its share withheld for quarantine_s (0: never): on Tofino the egress drops a
        # lie only after it queued
        self.quarantine = Quarantine(quarantine_s, quarantine_fraction)
        self.port_drain = {}  # per egress: the factor of its target in force (ffs.agent.port_drain)
        self._drain_acc, self._drain_standing = {}, {}
        self._tm_last, self._tm_unavailable = {}, False
        self.fairness = self._starting_matrix(store, use_saved_matrix)
        self.lpf = self.lpf.for_node(self.current_node())  # each pair's τ_F for the matrix it runs
        self._check_estimator(self.fairness)
        self.taus = {}
        self._last = {}
        self._last_t = {}  # when each counter was last read
        self._program_id = None
        # a step over a shorter interval only re-baselines the counters: rates over a sliver of a
        # period are noise, and τ must not move on them (the process sets half its period)
        self.min_interval_s = 0.0
        # τ moves on rates measured over at least `min_packets` admitted frames (or `max_interval_s`):
        # the update is multiplicative, so a noisy A biases τ up by about Var(A)/2·E[A]^2, the
        # inverse of twice the frames it counts (jumbo frames at a short period: a handful per
        # period, spec §9); periods are accumulated until the count is reached
        self.min_packets = min_packets
        self.max_interval_s = max_interval_s
        self._tau_acc = {}
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
        self._jumped = {}  # counter -> the indices that went backwards at its last read
        self._jump_notes = []  # those of this step, for its one log line
        # per egress port since the last telemetry: A_j and the lies at j (bytes), to tell what the
        # traffic manager dropped before the frame check could count it; None: a counter jumped
        self._since_telemetry = {}
        self._pair_status = []
        self._drops_by_egress = {}
        self._pushed = {}  # egress port -> the set_egress data last written
        # the queue guard (spec §7.7): its virtual queues drain by the packet generator's timer
        # packets, one per managed egress every guard_timer_ns ("auto": sized for the node's
        # ports); off (None), and without a generator
        timer = guard_timer_period_ns(self.node) if guard_timer_ns == "auto" else guard_timer_ns
        self.guard_timer_ns = timer if driver.has_pktgen else None
        if timer is not None and not driver.has_pktgen:
            log.warning("the queue guard is off: this target has no packet generator (docs/spec.md §7.7)")
        # Tofino's front-panel ports, brought up from the topology (ffs.agent.frontpanel)
        self.front_panel = FrontPanel(driver, self.node) if manage_ports else None
        self._port_status = []

    def _starting_matrix(self, store: StateStore | None, use_saved: bool) -> dict[str, dict[str, float]]:
        """The topology's matrix, or the one the state directory saved (a foreign or unreadable file
        stops here, settled later; --from-topology ignores it)."""
        fairness = {e: dict(col) for e, col in self.node.fairness.items()}
        if store is None:
            return fairness
        saved = store.load_matrix(self.node.name) if use_saved else None
        for line in store.recover(self.node.name):
            log.warning("%s", line)
        if saved is None:
            return fairness
        return validate_saved(self.node, saved, store.matrix_path(self.node.name))
