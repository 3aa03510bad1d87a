# SPDX-License-Identifier: Apache-2.0
"""The state the parts of the agent share, and the node they manage.

`ffs.agent.core.Agent` is assembled from one class per job, each in its own module: take-over and
reconciliation (`takeover`), the τ loop (`tau_loop`), the pairs' telemetry (`telemetry`), the
quarantine's set_pair entries (`quarantine_entries`), the audited matrix transaction
(`matrix_transaction`), and the counter readings the loop and the telemetry rest on (`readings`).
They are one object because they decide on one state: the τ loop pushes what the take-over
resumed, the telemetry judges what the matrix shares out, a reconcile writes what all of them
decided. This class declares that state (Agent.__init__ sets it) and the methods one part calls
in another, so that each part type-checks on its own.
"""

from __future__ import annotations

import dataclasses

from ffs.agent.drain_rule import PortDrain
from ffs.agent.frontpanel import FrontPanel, PortStatus
from ffs.agent.quarantine import Quarantine
from ffs.agent.selftest import SelftestResult
from ffs.agent.snapshot import PairStatus, Snapshot
from ffs.agent.state import StateStore
from ffs.core.entries import CounterValue, Update, UpdateKind
from ffs.core.program import LpfConfig, Pair, pairs_of
from ffs.core.tau import EgressTau, TauParams
from ffs.core.topology import Node, Topology
from ffs.driver.base import Driver, TmPortCounts


class AgentParts:
    # the switch, the node it is, and how its estimator and τ are sized
    driver: Driver
    topology: Topology
    node: Node
    lpf: LpfConfig
    tau_params: TauParams
    wire_overhead: int
    store: StateStore | None
    front_panel: FrontPanel | None
    guard_timer_ns: int | None
    selftest: SelftestResult | None  # the frame check's length basis, once measured (ffs.agent.selftest)
    # what the agent decided: the matrix, τ per egress, the quarantines, the egress data last written
    fairness: dict[str, dict[str, float]]
    taus: dict[str, EgressTau]
    quarantine: Quarantine
    _pushed: dict[int, dict[str, int]]
    _program_id: str | None
    _check_turn: int
    _checks: int
    # the counters: last reading and its time per Reading, the indices that jumped, the notes to log
    _last: dict[str, dict[int, CounterValue]]
    _last_t: dict[str, float]
    _jumped: dict[str, set[int]]
    _jump_notes: list[str]
    # the τ loop's pacing
    min_interval_s: float
    min_packets: int
    max_interval_s: float
    _tau_acc: dict[
        str, tuple[CounterValue, CounterValue, float, float, tuple[CounterValue, CounterValue, float, bool] | None]
    ]
    # the telemetry's cadence and what it last read
    telemetry_period_s: float
    _last_telemetry: float
    _last_lie_telemetry: float
    _since_telemetry: dict[int, tuple[CounterValue, CounterValue] | None]
    _pair_status: list[PairStatus]
    _drops_by_egress: dict[str, tuple[float, int]]
    _port_status: list[PortStatus]
    snapshot: Snapshot
    # a port that drains slower than its speed (ffs.agent.port_drain): the factor of the target in
    # force per egress, the open windows, the TM's drop counts last read, a target without them
    port_drain: dict[str, PortDrain]
    _drain_acc: dict[str, tuple[int, float, int, float]]  # frames, line-rate bytes, drops, seconds
    _drain_standing: dict[str, bool]  # the egress's queue stood at the last read
    _tm_last: dict[int, TmPortCounts]
    _tm_unavailable: bool

    # -- the static state ------------------------------------------------------------------
    def current_node(self) -> Node:
        """The node as it runs: the matrix in force, and the target of an egress that drains
        slower than its speed scaled to what it drains (spec §9, item 8)."""
        node = dataclasses.replace(self.node, fairness=self.fairness)
        slow = {
            e: d.factor * node.target(e) for e, d in self.port_drain.items() if d.factor < 1.0 and e in self.fairness
        }
        return dataclasses.replace(node, targets={**node.targets, **slow}) if slow else node

    def configured_target(self, egress: str) -> float:
        """T_j as configured (the matrix in force, no port's drain)."""
        return dataclasses.replace(self.node, fairness=self.fairness).target(egress)

    def _reconcile_timer(self) -> int:  # ffs.agent.takeover
        raise NotImplementedError

    def pairs(self) -> list[Pair]:
        return pairs_of(self.node, self.fairness)

    def target(self, egress: str) -> float:
        return self.current_node().target(egress)

    def _egress_ports(self) -> list[int]:
        return sorted({self.node.interfaces[e].port for e in self.fairness})

    # -- what one part asks of another (each is defined by the part named) --------------------
    def telemetry(self, virtual: float | None, now_s: float) -> list[Update]:
        """ffs.agent.telemetry.Telemetry"""
        raise NotImplementedError

    def _resume_quarantine(self, now_s: float) -> None:
        """ffs.agent.quarantine_entries.QuarantineEntries"""
        raise NotImplementedError

    def _release_quarantine(self, now_s: float) -> list[Update]:
        """ffs.agent.quarantine_entries.QuarantineEntries"""
        raise NotImplementedError

    def _pair_updates(self, kind: UpdateKind) -> dict[int, Update]:
        """ffs.agent.quarantine_entries.QuarantineEntries"""
        raise NotImplementedError

    def _strip_drains(self, a: dict[int, CounterValue], sent: dict[int, CounterValue]) -> list[Update]:
        """ffs.agent.quarantine_entries.QuarantineEntries"""
        raise NotImplementedError

    def _update_quarantine(
        self,
        pairs: list[PairStatus],
        lies: dict[int, CounterValue],
        r: dict[int, CounterValue],
        drops: dict[int, CounterValue],
        survived: dict[int, float],
        now_s: float,
    ) -> list[Update]:
        """ffs.agent.quarantine_entries.QuarantineEntries"""
        raise NotImplementedError
