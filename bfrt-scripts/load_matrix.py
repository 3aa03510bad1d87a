"""bfshell: apply a fairness matrix file (FFS_MATRIX) to the node's pair entries."""

import os

from _common import node, write  # noqa: E402
from ffs.agent.program import LpfConfig, pair_entry, pairs_of  # noqa: E402
from ffs.agent.service import load_matrix_file  # noqa: E402

n = node()
fairness = load_matrix_file(os.environ["FFS_MATRIX"])
unknown = {i for col in fairness.values() for i in col} | set(fairness)
unknown -= set(n.interfaces)
if unknown:
    raise SystemExit(f"ffs: unknown interfaces {sorted(unknown)}; nothing written")
for e, col in fairness.items():
    if sum(col.values()) > n.interfaces[e].capacity:
        raise SystemExit(f"ffs: entries toward {e} exceed its capacity; nothing written")
write(bfrt, [pair_entry(fairness[p.egress].get(p.ingress, 0.0), p, LpfConfig(), "modify")  # noqa: F821
             for p in pairs_of(n, fairness)])
print("ffs: matrix applied")
