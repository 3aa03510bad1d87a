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

from ffs.agent.matrix import diff_matrices, validate_matrix
from ffs.agent.parts import AgentParts
from ffs.agent.program import (
    LPF_PACKETS,
    egress_entry,
    frames_per_time_constant,
    largest_frame_bits,
    pair_entry,
    pairs_of,
)
from ffs.entries import Update
from ffs.tables import egress_params
from ffs.tau import EgressTau

log = logging.getLogger("ffs.agent")


class MatrixTransaction(AgentParts):
    def _check_estimator(self, fairness: dict[str, dict[str, float]]) -> None:
        """Warn when the smallest share carries too few frames per estimator time constant for
        the precision budget (spec §10): it reads high by about one frame in that many."""
        n = frames_per_time_constant(self.node, self.lpf, fairness)
        if n < LPF_PACKETS / 2:
            log.warning(
                "the smallest share carries %.1f frames of %d bytes per estimator time constant (%.0f ms): an "
                "overloaded pair at that share may lose about %.0f %% of it (docs/spec.md §10)",
                n,
                int(largest_frame_bits(self.node) / 8),
                (self.lpf.time_constant_ns or 0) / 1e6,
                100 / max(n, 1e-9),
            )

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
