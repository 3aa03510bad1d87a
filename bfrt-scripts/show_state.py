# SPDX-License-Identifier: Apache-2.0
"""bfshell: dump what FFS keeps: pairs, egress parameters, per-pair and per-egress counters, F."""

from _common import p4names, table_obj  # noqa: E402

for t in (p4names.PAIRS, p4names.EGRESS_PARAMS):
    table_obj(bfrt, t.name).dump(table=True, from_hw=False)  # noqa: F821 - bfrt is the bfshell's global
for c in (p4names.PAIR_BYTES, p4names.PAIR_DROPS, p4names.ACCEPTED, p4names.EVENTS):
    obj = table_obj(bfrt, c.name)  # noqa: F821
    obj.operation_counter_sync()
    obj.dump(table=True, from_hw=False)
f_est = table_obj(bfrt, p4names.F_EST.name)  # noqa: F821
f_est.operation_register_sync()
f_est.dump(table=True, from_hw=False)
