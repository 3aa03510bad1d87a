# SPDX-License-Identifier: Apache-2.0
"""The audited matrix transaction: a fairness-matrix change validated whole, turned into one batch
(pair entries inserted, modified or deleted, egress entries likewise), audited ahead, applied
atomically, then persisted and settled in the audit log. If the switch refuses the batch, neither
the switch nor the agent's state changes (the audit log marks the attempt aborted).
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from ffs.agent.parts import AgentParts
from ffs.core import p4names
from ffs.core.entries import Update
from ffs.core.matrix import diff_matrices, validate_matrix
from ffs.core.program import (
    LPF_PACKETS,
    LPF_TIME_CONSTANT_MAX_NS,
    LpfConfig,
    egress_entry,
    frames_per_time_constant,
    guard_updates,
    largest_frame_bits,
    pair_entry,
    pairs_of,
)
from ffs.core.tables import egress_params
from ffs.core.tau import EgressTau

log = logging.getLogger("ffs.agent")


class MatrixTransaction(AgentParts):
    def _check_estimator(self, fairness: dict[str, dict[str, float]]) -> None:
        """Warn when the smallest share carries too few frames per estimator time constant for
        the precision budget (spec §10): it reads high by about one frame in that many."""
        node = dataclasses.replace(self.node, fairness=fairness)
        n = frames_per_time_constant(node, self.lpf.for_node(node))
        if n < LPF_PACKETS / 2:
            log.warning(
                "the smallest share carries %.1f frames of %d bytes per estimator time constant (at most %.0f ms): an "
                "overloaded pair at that share may lose about %.0f %% of it (docs/spec.md §10)",
                n,
                int(largest_frame_bits(self.node) / 8),
                LPF_TIME_CONSTANT_MAX_NS / 1e6,
                100 / max(n, 1e-9),
            )

    def validate(self, fairness: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        return validate_matrix(self.node, fairness)

    def matrix_updates(self, new: dict[str, dict[str, float]], lpf: LpfConfig | None = None) -> list[Update]:
        """The batch that takes the switch to matrix `new`, its pairs' lm computed with the
        estimators `lpf` sizes for it (default: the agent's, resized for `new`)."""
        old_pairs = {p.pid: p for p in self.pairs()}
        new_pairs = {p.pid: p for p in pairs_of(self.node, new)}
        ups: list[Update] = []
        old_node = self.current_node()
        new_node = dataclasses.replace(self.node, fairness=new)
        lpf = self.lpf.for_node(new_node) if lpf is None else lpf
        for pid, p in sorted(new_pairs.items()):
            m = new_node.share(p.ingress, p.egress)
            if pid not in old_pairs:
                ups.append(pair_entry(m, p, lpf, "insert"))
            elif m != old_node.share(p.ingress, p.egress) or lpf.tc(pid) != self.lpf.tc(pid):
                ups.append(pair_entry(m, p, lpf, "modify"))
        for pid, p in sorted(old_pairs.items()):
            if pid not in new_pairs:
                ups.append(pair_entry(0.0, p, self.lpf, "delete"))
        for e in sorted(set(new) - set(self.fairness)):
            ups.append(egress_entry(self.node.interfaces[e].port, egress_params(None, False, None), "insert"))
        for e in sorted(set(self.fairness) - set(new)):
            ups.append(egress_entry(self.node.interfaces[e].port, egress_params(None, False, None), "delete"))
        ups += _entry_diff(guard_updates(old_node, self.guard_timer_ns), guard_updates(new_node, self.guard_timer_ns))
        return [self.quarantine.withhold(u) for u in ups]  # a new share does not lift a quarantine

    def apply_matrix(
        self, fairness: dict[str, dict[str, float]], who: str = "agent", uid: int | None = None
    ) -> list[dict[str, Any]]:
        """Validate, audit ahead, apply atomically, persist, settle. Returns the list of changes.

        The order is the audit's guarantee (docs/control-plane.md): the record is fsynced in the audit
        log first, then the new state file is staged (fsynced), then the switch gets the batch, then the
        rename commits the state file, then the record's outcome is appended. A refusal leaves the
        switch, the agent and the file as they were (the record is marked aborted); a crash at any
        step is settled by `StateStore.recover` at the next start."""
        new = self.validate(fairness)
        self._check_estimator(new)
        changes = diff_matrices(self.fairness, new)
        lpf = self.lpf.for_node(dataclasses.replace(self.node, fairness=new))  # each pair's τ_F for its new share
        ups = self.matrix_updates(new, lpf)
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
        self._resize_estimators(lpf)
        self._reconcile_timer()  # one timer packet per managed egress
        for egress in new:
            self.taus.setdefault(egress, EgressTau())
        for egress in list(self.taus):
            if egress not in new:
                del self.taus[egress]
        log.info("matrix applied by=%s uid=%s changes=%d", who, uid, len(changes))
        return changes

    def _resize_estimators(self, lpf: LpfConfig) -> None:
        """The pairs whose estimator time constant the new matrix moved get their new spec (which
        restarts their F from 0, §8; the queue guard covers the rise), after the batch that gave
        them the lm of it."""
        moved = [p.pid for p in self.pairs() if lpf.tc(p.pid) != self.lpf.tc(p.pid)]
        self.lpf = lpf
        for tc, pids in lpf.by_spec(moved).items():
            self.driver.set_lpf_spec(p4names.F_LPF.name, pids, lpf.spec(pids[0]))
            log.info("estimator time constant %.3g ms for %d pairs (their shares changed)", tc / 1e6, len(pids))


def _entry_diff(old: list[Update], new: list[Update]) -> list[Update]:
    """The updates that take a table from the entries `old` inserts to those `new` inserts."""
    was = {tuple(sorted(u.entry.key.items())): u.entry for u in old}
    now = {tuple(sorted(u.entry.key.items())): u.entry for u in new}
    out = [Update("delete", e) for k, e in was.items() if k not in now]
    for k, e in now.items():
        if k not in was:
            out.append(Update("insert", e))
        elif (was[k].action, was[k].params) != (e.action, e.params):
            out.append(Update("modify", e))
    return out
