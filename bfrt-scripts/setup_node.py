"""bfshell: program one node of a topology (ports, routes, pairs, generated tables, LPF specs)."""

from _common import N, node, table_obj, write  # noqa: E402
from ffs.agent.program import LpfConfig, node_updates, pairs_of  # noqa: E402

n = node()
lpf = LpfConfig()
write(bfrt, node_updates(n, lpf))  # noqa: F821 - bfrt is the bfshell's global
lpf_table = table_obj(bfrt, N.F_LPF.name)  # noqa: F821
for p in pairs_of(n):
    lpf_table.add(LPF_INDEX=p.pid, LPF_SPEC_TYPE="RATE", LPF_SPEC_GAIN_TIME_CONSTANT_NS=lpf.time_constant_ns,
                  LPF_SPEC_DECAY_TIME_CONSTANT_NS=lpf.time_constant_ns, LPF_SPEC_OUT_SCALE_DOWN_FACTOR=lpf.scale_down)
bfrt.complete_operations()  # noqa: F821
print(f"ffs: node {n.name} programmed ({len(pairs_of(n))} pairs)")
