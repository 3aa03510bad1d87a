# SPDX-License-Identifier: Apache-2.0
"""Shared by the bfshell scripts: find the ffs package and the node, and write entries the
bfrt_python way.

bfrt_python names: `bfrt.ffs.pipe.<Control>.<...>.<table>` with `$` dropped from BF-RT names
(`FfsIngressParser.$PORT_METADATA` is `FfsIngressParser.PORT_METADATA`); key arguments are the last
component of the key name (`ig_intr_md.ingress_port` -> `ingress_port`), with `<key>_mask` for
ternary, `<key>_p_length` for LPM and `MATCH_PRIORITY`; `add_with_<action>(...)` inserts,
`entry_with_<action>(...).push()` adds or modifies, `delete(...)` removes; nothing reaches the
device before `bfrt.complete_operations()`.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("FFS_ROOT", os.getcwd()), "controlplane"))

from ffs.core import p4names  # noqa: E402
from ffs.core.entries import Exact, Lpm, Range, Ternary  # noqa: E402
from ffs.core.topology import load  # noqa: E402


def node():
    for var in ("FFS_TOPOLOGY", "FFS_NODE"):
        if not os.environ.get(var):
            raise SystemExit(f"ffs: set {var} (see bfrt-scripts/README.md); nothing written")
    topo = load(os.environ["FFS_TOPOLOGY"])
    return topo.node(os.environ["FFS_NODE"])


def table_obj(bfrt, name):
    """bfrt.ffs.pipe.FfsIngress.pair_map.pairs for 'FfsIngress.pair_map.pairs'."""
    obj = getattr(bfrt, p4names.P4_NAME).pipe
    for part in name.replace("$", "").split("."):
        obj = getattr(obj, part)
    return obj


def key_args(entry):
    args = {}
    for k, v in entry.key.items():
        name = k.rsplit(".", 1)[-1]
        if isinstance(v, Exact):
            args[name] = v.value
        elif isinstance(v, Lpm):
            args[name] = v.value
            args[f"{name}_p_length"] = v.prefix_len
        elif isinstance(v, Ternary):
            args[name] = v.value
            args[f"{name}_mask"] = v.mask
            args["MATCH_PRIORITY"] = entry.priority
        elif isinstance(v, Range):
            args[f"{name}_start"] = v.low
            args[f"{name}_end"] = v.high
            args["MATCH_PRIORITY"] = entry.priority
    return args


def write(bfrt, updates, upsert=False):
    """Apply Driver updates through bfrt_python; `upsert` turns inserts into add-or-modify (`push`)."""
    for u in updates:
        e = u.entry
        t = table_obj(bfrt, e.table)
        action = e.action_name
        if u.kind == "delete":
            t.delete(**key_args(e))
        elif u.kind == "set_default":
            getattr(t, f"set_default_with_{action}")(**e.params)
        elif action is None:  # $PORT_METADATA: data fields, no action
            if upsert or u.kind == "modify":
                t.entry(**key_args(e), **e.params).push()
            else:
                t.add(**key_args(e), **e.params)
        elif upsert or u.kind == "modify":
            getattr(t, f"entry_with_{action}")(**key_args(e), **e.params).push()
        else:
            getattr(t, f"add_with_{action}")(**key_args(e), **e.params)
    bfrt.complete_operations()


def set_lpf_specs(bfrt, lpf, pids=None, upsert=False):
    """Each pair's F estimator spec on its LPF index (spec §4), as the agent writes it (`LpfConfig.spec`):
    `pids` None is every index; `upsert` modifies what is installed."""
    t = table_obj(bfrt, p4names.F_LPF.name)
    for i in range(p4names.F_LPF.size) if pids is None else pids:
        spec = lpf.spec(i)
        fields = dict(
            LPF_INDEX=i,
            LPF_SPEC_TYPE=spec.kind,
            LPF_SPEC_GAIN_TIME_CONSTANT_NS=spec.gain_time_constant_ns,
            LPF_SPEC_DECAY_TIME_CONSTANT_NS=spec.decay_time_constant_ns,
            LPF_SPEC_OUT_SCALE_DOWN_FACTOR=spec.out_scale_down,
        )
        if upsert:
            t.entry(**fields).push()
        else:
            t.add(**fields)
    bfrt.complete_operations()
