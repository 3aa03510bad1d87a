"""Shared by the bfshell scripts: find the ffs package and the node, and write entries the
bfrt_python way (`add_with_<action>(key=..., param=...)`)."""

import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("FFS_ROOT", os.getcwd()), "controlplane"))

from ffs import p4names as N  # noqa: E402
from ffs.driver.base import Exact, Lpm, Ternary  # noqa: E402
from ffs.topology import load  # noqa: E402


def node():
    topo = load(os.environ["FFS_TOPOLOGY"])
    return topo.node(os.environ["FFS_NODE"])


def table_obj(bfrt, name):
    """bfrt.ffs.pipe.FfsIngress.pair_map.pairs for 'FfsIngress.pair_map.pairs'."""
    obj = bfrt.ffs.pipe
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def key_args(entry):
    args = {}
    for k, v in entry.key.items():
        name = k.replace(".", "_")
        if isinstance(v, Exact):
            args[name] = v.value
        elif isinstance(v, Lpm):
            args[name] = v.value
            args[f"{name}_p_length"] = v.prefix_len
        elif isinstance(v, Ternary):
            args[name] = v.value
            args[f"{name}_mask"] = v.mask
            args["MATCH_PRIORITY"] = entry.priority
    return args


def write(bfrt, updates):
    for u in updates:
        e = u.entry
        t = table_obj(bfrt, e.table.replace("$PORT_METADATA", "_PORT_METADATA_"))
        if e.action is None:  # $PORT_METADATA
            bfrt.ffs.pipe.FfsIngressParser._PORT_METADATA.add(ingress_port=e.key[N.PORT_METADATA.key.name].value, **e.params)
            continue
        action = e.action.rsplit(".", 1)[-1]
        verb = {"insert": "add_with_", "modify": "mod_with_"}[u.kind]
        getattr(t, verb + action)(**key_args(e), **e.params)
    bfrt.complete_operations()
