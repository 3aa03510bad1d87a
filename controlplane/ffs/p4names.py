"""The names of every P4 object the control plane and the software switch touch (docs/spec.md §7).

This is the single list: `p4src/` declares exactly these (checked by tests/test_p4_schema.py), the
software switch instantiates exactly these, and the drivers address tables by these names (the
BF-RT names of the compiled program, without the `pipe.` prefix).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ffs import constants as C

P4_NAME = "ffs"


@dataclass(frozen=True)
class Key:
    name: str  # the @name of the key field, as BF-RT shows it
    match: str  # exact | lpm | ternary | range
    width: int


@dataclass(frozen=True)
class Action:
    name: str  # fully qualified, e.g. "FfsIngress.forwarding.route"
    params: tuple[tuple[str, int], ...] = ()

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[Key, ...]
    actions: tuple[Action, ...]
    default_action: str  # fully qualified action name
    size: int
    const_entries: bool = False  # entries fixed in the P4 source, not writable

    def action(self, name: str) -> Action:
        for a in self.actions:
            if a.name == name or a.short == name:
                return a
        raise KeyError(f"table {self.name} has no action {name!r}")


@dataclass(frozen=True)
class Counter:
    name: str
    size: int
    kind: str = "PACKETS_AND_BYTES"  # PACKETS | BYTES | PACKETS_AND_BYTES


@dataclass(frozen=True)
class Register:
    name: str
    width: int
    size: int


@dataclass(frozen=True)
class Lpf:
    name: str
    width: int
    size: int


@dataclass(frozen=True)
class PortMetadata:
    """The TNA per-port parser metadata table (`$PORT_METADATA` of the ingress parser)."""

    name: str
    key: Key
    fields: tuple[tuple[str, int], ...] = field(default_factory=tuple)


ING = "FfsIngress"
EGR = "FfsEgress"

PORT_METADATA = PortMetadata(
    name="FfsIngressParser.$PORT_METADATA",
    key=Key("ig_intr_md.ingress_port", "exact", C.PORT_BITS),
    fields=(("ifindex", 8), ("trust", 1), ("insert", 1)),
)

_ROUTE = Action(f"{ING}.forwarding.route", (("port", C.PORT_BITS),))
_DROP = Action(f"{ING}.forwarding.drop")

IPV4_ROUTES = Table(
    f"{ING}.forwarding.ipv4_routes",
    (Key("dst_addr", "lpm", 32),),
    (_ROUTE, _DROP),
    _DROP.name,
    C.IPV4_ROUTES,
)
IPV6_ROUTES = Table(
    f"{ING}.forwarding.ipv6_routes",
    (Key("dst_addr", "lpm", 128),),
    (_ROUTE, _DROP),
    _DROP.name,
    C.IPV6_ROUTES,
)

_SET_PAIR = Action(f"{ING}.pair_map.set_pair", (("pid", C.PID_BITS), ("lm", 16)))
_NO_PAIR = Action(f"{ING}.pair_map.no_pair")
PAIRS = Table(
    f"{ING}.pair_map.pairs",
    (Key("ingress_port", "exact", C.PORT_BITS), Key("egress_port", "exact", C.PORT_BITS)),
    (_SET_PAIR, _NO_PAIR),
    _NO_PAIR.name,
    C.NUM_PAIRS,
)

_SET_EGRESS = Action(
    f"{ING}.pair_map.set_egress",
    (("ltau", 16), ("ntau", 32), ("congested", 1), ("lcr", 16)),
)
_EGRESS_UNMANAGED = Action(f"{ING}.pair_map.egress_unmanaged")
EGRESS_PARAMS = Table(
    f"{ING}.pair_map.egress_params",
    (Key("egress_port", "exact", C.PORT_BITS),),
    (_SET_EGRESS, _EGRESS_UNMANAGED),
    _EGRESS_UNMANAGED.name,
    C.NUM_PORTS,
)

_SET_LW = Action(f"{ING}.rate_est.set_lw", (("llen", 16),))
_LW_ZERO = Action(f"{ING}.rate_est.lw_zero")
LEN_LOG = Table(
    f"{ING}.rate_est.len_log",
    (Key("l3_len", "ternary", 16),),
    (_SET_LW, _LW_ZERO),
    _LW_ZERO.name,
    2048,
)

_SET_WEIGHT = Action(f"{ING}.rate_est.set_weight", (("w", 32),))
_WEIGHT_MAX = Action(f"{ING}.rate_est.weight_max")
WEIGHT = Table(
    f"{ING}.rate_est.weight",
    (Key("lw", "exact", 16),),
    (_SET_WEIGHT, _WEIGHT_MAX),
    _WEIGHT_MAX.name,
    C.WEIGHT_KEYS,
)

_SET_LF = Action(f"{ING}.rate_est.set_lf", (("lf", 16),))
_LF_ZERO = Action(f"{ING}.rate_est.lf_zero")
F_LOG = Table(
    f"{ING}.rate_est.f_log",
    (Key("f", "ternary", 32),),
    (_SET_LF, _LF_ZERO),
    _LF_ZERO.name,
    4096,
)

_GAMMA_ONE = Action(f"{ING}.normalize.gamma_one")
_GAMMA_FRAC = Action(f"{ING}.normalize.gamma_frac", (("thr", 16), ("d16", 16)))
_GAMMA_ZERO = Action(f"{ING}.normalize.gamma_zero")
GAMMA = Table(
    f"{ING}.normalize.gamma",
    (Key("d", "ternary", 32),),
    (_GAMMA_ONE, _GAMMA_FRAC, _GAMMA_ZERO),
    _GAMMA_ZERO.name,
    C.GAMMA_D_MAX + 2,
)

_RI_UPSTREAM = Action(f"{ING}.ri_update.ri_upstream")
_RI_CONGESTED = Action(f"{ING}.ri_update.ri_congested")
_RI_UNCONGESTED = Action(f"{ING}.ri_update.ri_uncongested")
_RI_KEEP = Action(f"{ING}.ri_update.ri_keep")
RI = Table(
    f"{ING}.ri_update.ri",
    (
        Key("ri_req", "exact", 1),
        Key("rri_ge_one", "exact", 1),  # bit 15 of the rri code: rri >= 1.0
        Key("congested", "exact", 1),
    ),
    (_RI_UPSTREAM, _RI_CONGESTED, _RI_UNCONGESTED, _RI_KEEP),
    _RI_KEEP.name,
    8,
    const_entries=True,
)

_STRIP = Action(f"{EGR}.egress_acct.strip_shim")
_KEEP = Action(f"{EGR}.egress_acct.keep_shim")
EGRESS_PORTS = Table(
    f"{EGR}.egress_acct.egress_ports",
    (Key("egress_port", "exact", C.PORT_BITS),),
    (_STRIP, _KEEP),
    _KEEP.name,
    C.NUM_PORTS,
)

TABLES: tuple[Table, ...] = (
    IPV4_ROUTES,
    IPV6_ROUTES,
    PAIRS,
    EGRESS_PARAMS,
    LEN_LOG,
    WEIGHT,
    F_LOG,
    GAMMA,
    RI,
    EGRESS_PORTS,
)

PAIR_BYTES = Counter(f"{ING}.rate_est.pair_bytes", C.NUM_PAIRS)  # R_(i,j), labels as they arrive
PAIR_DROPS = Counter(f"{ING}.normalize.pair_drops", C.NUM_PAIRS)  # dropped by gamma
EVENTS = Counter(f"{ING}.events", C.EVENT_COUNTER_SIZE, "PACKETS")  # indices: constants.EVENT_*
ACCEPTED = Counter(f"{EGR}.egress_acct.accepted", C.NUM_PORTS)  # A_j, by egress device port
COUNTERS: tuple[Counter, ...] = (PAIR_BYTES, PAIR_DROPS, EVENTS, ACCEPTED)

F_EST = Register(f"{ING}.rate_est.f_est", 32, C.NUM_PAIRS)  # copy of the F LPF output
REGISTERS: tuple[Register, ...] = (F_EST,)

F_LPF = Lpf(f"{ING}.rate_est.f_lpf", 32, C.NUM_PAIRS)
LPFS: tuple[Lpf, ...] = (F_LPF,)

RANDOM = f"{ING}.normalize.rng"  # Random<bit<16>>


def table(name: str) -> Table:
    """Look a table up by its full name or a unique suffix (as BF-RT allows)."""
    hits = [t for t in TABLES if t.name == name or t.name.endswith("." + name)]
    if len(hits) != 1:
        raise KeyError(f"unknown or ambiguous table {name!r}")
    return hits[0]
