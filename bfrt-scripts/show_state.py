"""bfshell: dump what FFS keeps: pairs, egress parameters, per-pair and per-egress counters, F."""

from _common import N, table_obj  # noqa: E402

for t in (N.PAIRS, N.EGRESS_PARAMS):
    table_obj(bfrt, t.name).dump(table=True, from_hw=False)  # noqa: F821 - bfrt is the bfshell's global
for c in (N.PAIR_BYTES, N.PAIR_DROPS, N.ACCEPTED, N.EVENTS):
    obj = table_obj(bfrt, c.name)  # noqa: F821
    obj.operation_counter_sync()
    obj.dump(table=True, from_hw=False)
f_est = table_obj(bfrt, N.F_EST.name)  # noqa: F821
f_est.operation_register_sync()
f_est.dump(table=True, from_hw=False)
