# SPDX-License-Identifier: Apache-2.0
"""bfshell: program one node of a topology by hand (port metadata, strip ports, routes, pairs, idle
egress parameters, the generated tables, LPF specs) -- exactly what ffs-agent installs.

    FFS_ROOT=<checkout> FFS_TOPOLOGY=<file> FFS_NODE=<name> $SDE/run_bfshell.sh -b setup_node.py
"""

from _common import node, p4names, set_lpf_specs, table_obj, write  # noqa: E402

from ffs.core.program import LpfConfig, node_updates, pairs_of  # noqa: E402

n = node()
lpf = LpfConfig().for_node(n)  # sized for the node's fastest port, as the agent does
# start from empty tables (the RI table's entries are const in the P4 source)
for t in p4names.TABLES:
    if not t.const_entries:
        table_obj(bfrt, t.name).clear()  # noqa: F821 - bfrt is the bfshell's global
table_obj(bfrt, p4names.PORT_METADATA.name).clear()  # noqa: F821
write(bfrt, node_updates(n, lpf))  # noqa: F821
set_lpf_specs(bfrt, lpf)  # noqa: F821
print(f"ffs: node {n.name} programmed ({len(pairs_of(n))} pairs, {len(n.routes)} routes)")
