# SPDX-License-Identifier: Apache-2.0
"""bfshell: apply the fairness-matrix columns of a file (FFS_MATRIX) to the node's pair entries.

The file's columns replace the topology's columns of the same egress; other columns stay as
setup_node.py wrote them. The merged matrix is validated as the agent validates it (known
interfaces, finite non-negative rates, per-egress sums within capacity or target) before anything
is written; the pushed shares are the column scaled to the egress target (spec §9).
"""

import dataclasses
import os

from _common import node, set_lpf_specs, write  # noqa: E402

from ffs.core.matrix import MatrixError, load_matrix_file, validate_matrix  # noqa: E402
from ffs.core.program import LpfConfig, egress_entry, pair_entry, pairs_of  # noqa: E402
from ffs.core.tables import egress_params  # noqa: E402

n = node()
try:
    if not os.environ.get("FFS_MATRIX"):
        raise MatrixError("set FFS_MATRIX to a matrix file")
    fairness = validate_matrix(n, {**n.fairness, **load_matrix_file(os.environ["FFS_MATRIX"])})
except MatrixError as e:
    raise SystemExit(f"ffs: {e}; nothing written") from None
new = dataclasses.replace(n, fairness=fairness)
was = LpfConfig().for_node(n)  # as setup_node.py sized it
lpf = was.for_node(new)  # each pair re-sized for its new share as the agent re-sizes it (spec §4)
ups = [pair_entry(new.share(p.ingress, p.egress), p, lpf, "insert") for p in pairs_of(new)]
ups += [
    egress_entry(new.interfaces[e].port, egress_params(None, False, None), "insert")
    for e in sorted(set(fairness) - set(n.fairness))
]
resized = [pid for pid, tc in lpf.pairs or () if tc != was.tc(pid)]
set_lpf_specs(bfrt, lpf, resized, upsert=True)  # noqa: F821 - before the shares that assume them
write(bfrt, ups, upsert=True)  # noqa: F821 - bfrt is the bfshell's global
print(f"ffs: matrix applied to {len(ups)} entries")
