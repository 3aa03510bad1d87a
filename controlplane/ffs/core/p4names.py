# SPDX-License-Identifier: Apache-2.0
"""The names of every P4 object the control plane and the software switch touch (docs/spec.md §7).

This is the single list: `p4src/` declares exactly these (checked by tests/unit/test_p4_schema.py), the
software switch instantiates exactly these, and the drivers address tables by these names (the
BF-RT names of the compiled program, without the `pipe.` prefix).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ffs.core import constants
from ffs.core.entries import action_name

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
        return action_name(self.name) or ""


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
    key=Key("ig_intr_md.ingress_port", "exact", constants.PORT_BITS),
    fields=(("trust", 8), ("insert", 8)),
)

_ROUTE = Action(f"{ING}.forwarding.route", (("port", constants.PORT_BITS),))
_NO_ROUTE = Action(f"{ING}.forwarding.no_route")  # marks a miss; fate drops it

IPV4_ROUTES = Table(
    f"{ING}.forwarding.ipv4_routes",
    (Key("dst_addr", "lpm", 32),),
    (_ROUTE, _NO_ROUTE),
    _NO_ROUTE.name,
    constants.IPV4_ROUTES,
)
IPV6_ROUTES = Table(
    f"{ING}.forwarding.ipv6_routes",
    (Key("dst_addr", "lpm", 128),),
    (_ROUTE, _NO_ROUTE),
    _NO_ROUTE.name,
    constants.IPV6_ROUTES,
)

# nlm = -lm (mod 2^16): an action cannot subtract action data (spec §5.3)
_SET_PAIR = Action(f"{ING}.pair_map.set_pair", (("pid", constants.PID_BITS), ("nlm", 16)))
# a pair held in quarantine: the same data, and its packets face τ = 1 (spec §9)
_SET_HELD_PAIR = Action(f"{ING}.pair_map.set_held_pair", (("pid", constants.PID_BITS), ("nlm", 16)))
_NO_PAIR = Action(f"{ING}.pair_map.no_pair")
PAIRS = Table(
    f"{ING}.pair_map.pairs",
    (Key("ingress_port", "exact", constants.PORT_BITS), Key("egress_port", "exact", constants.PORT_BITS)),
    (_SET_PAIR, _SET_HELD_PAIR, _NO_PAIR),
    _NO_PAIR.name,
    constants.PAIRS_TABLE_SIZE,
)

_SET_EGRESS = Action(
    f"{ING}.pair_map.set_egress",
    (("ltau", 16), ("ltau_p", 16), ("congested", 1), ("lcr", 16)),
)
_EGRESS_UNMANAGED = Action(f"{ING}.pair_map.egress_unmanaged")
EGRESS_PARAMS = Table(
    f"{ING}.pair_map.egress_params",
    (Key("egress_port", "exact", constants.PORT_BITS),),
    (_SET_EGRESS, _EGRESS_UNMANAGED),
    _EGRESS_UNMANAGED.name,
    constants.NUM_PORTS,
)

_SET_ROOM = Action(f"{ING}.pair_map.set_room", (("thr", 16),))
_ROOM_MAX = Action(f"{ING}.pair_map.room_max")
# room for an inserted shim under the egress's MTU, per egress port and IP version (spec §2)
SHIM_ROOM = Table(
    f"{ING}.pair_map.shim_room",
    (Key("egress_port", "exact", constants.PORT_BITS), Key("ipv6", "exact", 1)),
    (_SET_ROOM, _ROOM_MAX),
    _ROOM_MAX.name,
    constants.SHIM_ROOM_SIZE,
)

_SET_CLAIM_LIMIT = Action(f"{ING}.set_claim_limit", (("thr", 16),))
_CLAIM_UNLIMITED = Action(f"{ING}.claim_unlimited")
# the longest IP length a frame that arrived through the port can claim, per ingress port and IP
# version: its MAC admits nothing longer, so a longer claim is a lie the ingress sees (spec §4)
CLAIM_LIMIT = Table(
    f"{ING}.claim_limit",
    (Key("ingress_port", "exact", constants.PORT_BITS), Key("ipv6", "exact", 1)),
    (_SET_CLAIM_LIMIT, _CLAIM_UNLIMITED),
    _CLAIM_UNLIMITED.name,
    constants.CLAIM_LIMIT_SIZE,
)

# wadd: what the claim's IP length lacks of its line-rate bytes (L2 header, FCS, preamble and gap);
# a runt's wlen is its padded frame's (spec §4, §7.7)
_SET_LW = Action(f"{ING}.rate_est.set_lw", (("llen", 16), ("wadd", 16)))
_SET_LW_RUNT = Action(f"{ING}.rate_est.set_lw_runt", (("llen", 16), ("wlen", 16)))
_LW_ZERO = Action(f"{ING}.rate_est.lw_zero")
# keyed on the IP length and the header class: the L2 overhead is added by the generator (spec §4)
LEN_LOG = Table(
    f"{ING}.rate_est.len_log",
    (Key("ipv6", "exact", 1), Key("vlan", "exact", 1), Key("l3_len", "ternary", 16)),
    (_SET_LW, _SET_LW_RUNT, _LW_ZERO),
    _LW_ZERO.name,
    constants.LEN_LOG_SIZE,
)

_SET_WEIGHT = Action(f"{ING}.rate_est.set_weight", (("w", 32),))
_WEIGHT_MAX = Action(f"{ING}.rate_est.weight_max")
WEIGHT = Table(
    f"{ING}.rate_est.weight",
    (Key("lw", "exact", 16),),
    (_SET_WEIGHT, _WEIGHT_MAX),
    _WEIGHT_MAX.name,
    constants.WEIGHT_KEYS,
)
# a resetting port's weight (rf = 1.0), keyed on llen: trust picks the table (spec §5.2)
WEIGHT_RESET = Table(
    f"{ING}.rate_est.weight_reset",
    (Key("llen", "exact", 16),),
    (_SET_WEIGHT, _WEIGHT_MAX),
    _WEIGHT_MAX.name,
    constants.WEIGHT_KEYS,
)

# nlf = -lf (mod 2^16) rides with lf: c_cong = cc - lf is an add of nlf (spec §5.1)
_SET_LF = Action(f"{ING}.rate_est.set_lf", (("lf", 16), ("nlf", 16)))
_LF_ZERO = Action(f"{ING}.rate_est.lf_zero")
F_LOG = Table(
    f"{ING}.rate_est.f_log",
    (Key("f", "ternary", 32),),
    (_SET_LF, _LF_ZERO),
    _LF_ZERO.name,
    4096,
)

_GAMMA_ONE = Action(f"{ING}.normalize.gamma_one")
_GAMMA_FRAC = Action(f"{ING}.normalize.gamma_frac", (("thr", 16),))
_GAMMA_ZERO = Action(f"{ING}.normalize.gamma_zero")
GAMMA = Table(
    f"{ING}.normalize.gamma",
    (Key("congested", "ternary", 1), Key("c_cong", "ternary", 16)),
    (_GAMMA_ONE, _GAMMA_FRAC, _GAMMA_ZERO),
    _GAMMA_ZERO.name,
    constants.GAMMA_D_MAX + 2,
)

# the queue guard (spec §7.7): each egress's virtual-queue threshold, and which port each of the
# packet generator's timer packets drains by how many line-rate bytes
_SET_QUEUE = Action(f"{ING}.guard.set_queue", (("qhi", 32),))
_NO_QUEUE = Action(f"{ING}.guard.no_queue")
EGRESS_QUEUE = Table(
    f"{ING}.guard.egress_queue",
    (Key("egress_port", "exact", constants.PORT_BITS),),
    (_SET_QUEUE, _NO_QUEUE),
    _NO_QUEUE.name,
    constants.NUM_PORTS,
)
_SET_DRAIN = Action(f"{ING}.guard.set_drain", (("port", constants.PORT_BITS), ("drain", 32)))
_NO_DRAIN = Action(f"{ING}.guard.no_drain")
TIMER_PORTS = Table(
    f"{ING}.guard.timer_ports",
    (Key("packet_id", "exact", 16),),
    (_SET_DRAIN, _NO_DRAIN),
    _NO_DRAIN.name,
    constants.NUM_PORTS,
)

# --- tables whose entries are fixed in the P4 source (const entries, spec §5.5) ---------------

_USE_LABEL = Action(f"{ING}.use_label")
PORT_LABEL = Table(
    f"{ING}.port_label",
    (Key("trust", "ternary", 1), Key("ffs_state", "ternary", 2)),
    (_USE_LABEL, Action(f"{ING}.use_label_ri"), Action(f"{ING}.reset_label")),
    _USE_LABEL.name,
    8,
    const_entries=True,
)

_SHIM_FITS = Action(f"{ING}.shim_fits")
IPV4_SHIM_LEN = Table(
    f"{ING}.ipv4_shim_len",
    (Key("ihl", "exact", 4), Key("total_len", "range", 16)),
    (Action(f"{ING}.short_shim"), _SHIM_FITS),
    _SHIM_FITS.name,
    16,
    const_entries=True,
)

_CANDIDATE_KEEP = Action(f"{ING}.ri_update.candidate_keep")
RI_CANDIDATE = Table(
    f"{ING}.ri_update.ri_candidate",
    (
        Key("ri_req", "exact", 1),
        Key("rri_ge_one", "exact", 1),  # bit 15 of the rri code: rri >= 1.0
        Key("congested", "exact", 1),
    ),
    (
        Action(f"{ING}.ri_update.candidate_upstream"),
        _CANDIDATE_KEEP,
        Action(f"{ING}.ri_update.candidate_congested"),
        Action(f"{ING}.ri_update.candidate_uncongested"),
    ),
    _CANDIDATE_KEEP.name,
    8,  # three one-bit keys: 16 would be shrunk to 8 with a warning
    const_entries=True,
)

_PARSE_DROP = Action(f"{ING}.parse_drop")
FATE = Table(
    f"{ING}.fate",
    tuple(
        Key(n, "ternary", w)
        for n, w in (
            ("parse_error", 1),
            ("parser_err", 16),
            ("routed", 1),
            ("managed", 1),
            ("admit_margin", 16),
            ("guard", 1),
            ("ffs_state", 2),
            ("trust", 1),
            ("insert", 1),
            ("ipv4", 1),
            ("ipv6", 1),
            ("ipv6_next_hdr", 8),
            ("runt", 1),
            ("frag", 1),
            ("room", 16),
            ("claim_room", 16),
        )
    ),
    tuple(
        Action(f"{ING}.{a}")
        for a in (
            "parse_drop",
            "miss_drop",
            "note_no_pair",
            "ffs_drop",
            "guard_drop",
            "note_opaque",
            "rewrite_label",
            "rewrite_reset_label",
            "insert_shim_v4",
            "insert_shim_v6",
            "note_not_inserted",
            "forward",
            "claim_drop",
        )
    ),
    _PARSE_DROP.name,
    16,
    const_entries=True,
)

_STRIP = Action(f"{EGR}.egress_acct.strip_shim")
_KEEP = Action(f"{EGR}.egress_acct.keep_shim")
EGRESS_PORTS = Table(
    f"{EGR}.egress_acct.egress_ports",
    (Key("egress_port", "exact", constants.PORT_BITS),),
    (_STRIP, _KEEP),
    _KEEP.name,
    constants.NUM_PORTS,
)

_FRAME_LIES = Action(f"{EGR}.egress_acct.frame_lies")
FRAME_CHECK = Table(
    f"{EGR}.egress_acct.frame_check",
    (Key("excess", "range", 16), Key("pkt_length", "ternary", 16), Key("vlan", "ternary", 1)),
    (Action(f"{EGR}.egress_acct.frame_ok"), _FRAME_LIES),
    _FRAME_LIES.name,
    5,
    const_entries=True,
)

TABLES: tuple[Table, ...] = (
    IPV4_ROUTES,
    IPV6_ROUTES,
    PAIRS,
    EGRESS_PARAMS,
    LEN_LOG,
    WEIGHT,
    WEIGHT_RESET,
    F_LOG,
    GAMMA,
    EGRESS_PORTS,
    SHIM_ROOM,
    PORT_LABEL,
    IPV4_SHIM_LEN,
    RI_CANDIDATE,
    FATE,
    FRAME_CHECK,
    EGRESS_QUEUE,
    TIMER_PORTS,
    CLAIM_LIMIT,
)
CONST_TABLES: tuple[Table, ...] = tuple(t for t in TABLES if t.const_entries)

PAIR_BYTES = Counter(f"{ING}.rate_est.pair_bytes", constants.NUM_PAIRS)  # R_(i,j), labels as they arrive
OFFERED = Counter(f"{ING}.rate_est.offered", constants.NUM_PORTS)  # R*_j = sum over i of R_(i,j), by egress device port
PAIR_DROPS = Counter(f"{ING}.pair_drops", constants.NUM_PAIRS)  # dropped by gamma
# A_j: the managed packets gamma let through toward egress port j, counted before the traffic manager
ADMITTED = Counter(f"{ING}.admitted", constants.NUM_PORTS)
EVENTS = Counter(f"{ING}.events", constants.EVENT_COUNTER_SIZE, "PACKETS")  # indices: constants.EVENT_*
ACCEPTED = Counter(f"{EGR}.egress_acct.accepted", constants.NUM_PORTS)  # what left egress port j (after the TM)
MALFORMED = Counter(
    f"{EGR}.egress_acct.malformed", constants.NUM_PORTS
)  # frames whose bytes disagree with their IP length
PAIR_MALFORMED = Counter(f"{EGR}.egress_acct.pair_malformed", constants.NUM_PAIRS)  # the same, by the (bridged) pair
# the frames the ingress inserts a shim into, or would if admitted: the port sends each SHIM_LEN
# bytes longer than the counters above count it, and the agent adds them (spec §4)
OFFERED_SHIMS = Counter(f"{ING}.offered_shims", constants.NUM_PORTS, "PACKETS")  # of R*_j
ADMITTED_SHIMS = Counter(f"{ING}.admitted_shims", constants.NUM_PORTS, "PACKETS")  # of A_j: the shims inserted
# timer packets of the packet generator, by the port each drained (spec §7.7)
GUARD_TIMERS = Counter(f"{ING}.guard.timers", constants.NUM_PORTS, "PACKETS")
COUNTERS: tuple[Counter, ...] = (
    PAIR_BYTES,
    OFFERED,
    PAIR_DROPS,
    ADMITTED,
    EVENTS,
    ACCEPTED,
    MALFORMED,
    PAIR_MALFORMED,
    GUARD_TIMERS,
    OFFERED_SHIMS,
    ADMITTED_SHIMS,
)

F_EST = Register(f"{ING}.rate_est.f_est", 32, constants.NUM_PAIRS)  # copy of the F LPF output
# each egress's virtual queue in line-rate bytes, per ingress pipe (spec §7.7)
GUARD_QUEUE = Register(f"{ING}.guard.queue", 32, constants.NUM_PORTS)
REGISTERS: tuple[Register, ...] = (F_EST, GUARD_QUEUE)

F_LPF = Lpf(f"{ING}.rate_est.f_lpf", 32, constants.NUM_PAIRS)
LPFS: tuple[Lpf, ...] = (F_LPF,)

RANDOM = f"{ING}.normalize.rng"  # Random<bit<16>>


def table(name: str) -> Table:
    """Look a table up by its full name or a unique suffix (as BF-RT allows)."""
    hits = [t for t in TABLES if t.name == name or t.name.endswith("." + name)]
    if len(hits) != 1:
        raise KeyError(f"unknown or ambiguous table {name!r}")
    return hits[0]
