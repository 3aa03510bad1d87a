# SPDX-License-Identifier: Apache-2.0
"""Every table the data plane looks up, generated in one place (docs/spec.md §4–§5).

The Tofino agent, the software switch and the tests install exactly these entries; nothing else
computes a log, an exponential or a γ threshold for the data plane.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, getcontext
from typing import Callable

from ffs.core import constants, p4names
from ffs.core.entries import Exact, Range, TableEntry, Ternary, Update
from ffs.core.labels import encode, round_log
from ffs.core.tau import EgressTau

# --- ternary log tables (§5.1) ---------------------------------------------------------------


def log_buckets(width: int, mantissa_bits: int = constants.LOG_TABLE_MANTISSA_BITS) -> list[tuple[int, int, int, int]]:
    """Disjoint (value, mask, lo, hi) buckets covering every input 1 .. 2^width - 1.

    A bucket matches the most significant set bit p and the `mantissa_bits` bits below it; values
    whose MSB is at p <= mantissa_bits are matched exactly (a bucket of one value).
    """
    full = (1 << width) - 1
    out: list[tuple[int, int, int, int]] = []
    for v in range(1, min(1 << (mantissa_bits + 1), 1 << width)):
        out.append((v, full, v, v))
    for p in range(mantissa_bits + 1, width):
        low_bits = p - mantissa_bits
        mask = full & ~((1 << low_bits) - 1)
        for k in range(1 << mantissa_bits):
            value = (1 << p) | (k << low_bits)
            out.append((value, mask, value, value + (1 << low_bits) - 1))
    return out


def bucket_log(lo: int, hi: int) -> int:
    """round(128 · log2 sqrt(lo · hi)) = round(64 · log2(lo · hi)), decided exactly."""
    return round_log(lo * hi, constants.CODE_STEPS_PER_OCTAVE // 2)


def log_table_entries(
    table: p4names.Table,
    width: int,
    action: str,
    out: Callable[[int, int], dict[str, int]],
    fixed: dict[str, int] | None = None,
    mantissa_bits: int = constants.LOG_TABLE_MANTISSA_BITS,
) -> list[TableEntry]:
    """A ternary MSB log table (spec §5.1) for `table`: one entry per bucket of `log_buckets`, on
    the table's ternary key, running `action` with `out(lo, hi)` as its parameters; `fixed` gives
    the table's exact keys. The names come from `ffs.core.p4names`, so generator and P4 program cannot
    drift apart."""
    fixed = fixed or {}
    (key,) = [k for k in table.keys if k.name not in fixed]
    if key.match != "ternary" or key.width != width:
        raise ValueError(f"{table.name}: key {key.name} is {key.match}/{key.width}, not ternary/{width}")
    act = table.action(action)
    exact = {name: Exact(v) for name, v in fixed.items()}
    return [
        TableEntry(table.name, {**exact, key.name: Ternary(value, mask)}, act.name, out(lo, hi))
        for value, mask, lo, hi in log_buckets(width, mantissa_bits)
    ]


LLEN_OFFSET = constants.CODE_STEPS_PER_OCTAVE * constants.WEIGHT_SHIFT + constants.CODE_BIAS


def llen_code(lo: int, hi: int) -> int:
    """len_log's action data: the log of the packet length, pre-shifted so that lw = llen - rf."""
    return bucket_log(lo, hi) + LLEN_OFFSET


MIN_CHARGE = constants.MIN_FRAME + constants.FCS_LEN  # the fewest bytes a frame occupies on an Ethernet wire


def wire_len(frame_len: int) -> int:
    """The bytes a frame of `frame_len` (FCS included) costs its port: padded to the Ethernet
    minimum, plus preamble and inter-frame gap. Every line rate counts these (spec §4)."""
    return max(frame_len, MIN_CHARGE) + constants.WIRE_OVERHEAD


def max_frame_len(mtu: int) -> int:
    """The longest frame, FCS included, a port of IP MTU `mtu` receives or sends: the IP MTU with
    an Ethernet header, one 802.1Q tag and the FCS. A Tofino MAC truncates and flags as an error
    every frame above its port's frame limit (the SDE's `bf_pal_port_mtu_set(tx_mtu, rx_mtu)`,
    BF-Runtime `$PORT` `$TX_MTU`/`$RX_MTU`, in frame bytes, default 10240); a topology's `mtu` is
    the IP MTU, so the switch's ports are configured with this limit (spec §4)."""
    return constants.ETH_HDR_LEN + constants.VLAN_TAG_LEN + mtu + constants.FCS_LEN


def charged_llen(lo: int, hi: int) -> int:
    """llen of a frame_len bucket: the frame is weighed by what it costs the port (`wire_len`), so
    F is a line rate like the shares it is compared with (spec §4), and a frame shorter than the
    Ethernet minimum, padded on the wire, weighs as a minimum frame: a padded liar gains nothing."""
    return llen_code(wire_len(lo), wire_len(hi))


LEN_CLASSES = ((0, 0), (0, 1), (1, 0), (1, 1))  # (ipv6, vlan): the header classes of len_log's key


def len_log_buckets(ipv6: int, vlan: int) -> list[tuple[int, int, int, bool]]:
    """(value, mask, llen, runt) per bucket of the 16-bit IP length of one header class: the log
    buckets of `log_buckets` plus length 0 (an empty IPv6 payload), each weighed as the frame its
    headers claim, L2 overhead and FCS added and saturated like `claimed_frame_len` (spec §4).
    Buckets below 2^8 hold one length each, so a bucket is a runt whole or not at all: a claim
    that may have arrived padded, below 64 bytes with FCS, or below 68 with an 802.1Q tag (a frame
    padded to 60 bytes and then tagged by a bridge is 64, 68 with FCS; spec §6)."""
    out = []
    padded_below = MIN_CHARGE + (constants.VLAN_TAG_LEN if vlan else 0)
    for value, mask, lo, hi in [(0, 0xFFFF, 0, 0), *log_buckets(16)]:
        flo, fhi = claimed_frame_len(lo, bool(ipv6), bool(vlan)), claimed_frame_len(hi, bool(ipv6), bool(vlan))
        runt = fhi < padded_below
        if runt != (flo < padded_below):
            raise AssertionError(f"len_log bucket {lo}..{hi} straddles the runt boundary")
        out.append((value, mask, charged_llen(flo, fhi), runt))
    return out


@functools.lru_cache(maxsize=None)
def _len_log_buckets(ipv6: int, vlan: int) -> tuple[tuple[int, int, int, bool], ...]:
    return tuple(len_log_buckets(ipv6, vlan))


def len_log_lookup(l3_len: int, ipv6: bool, vlan: bool) -> tuple[int, bool]:
    """What len_log's entries give one IP length of one header class: (llen, runt)."""
    for value, mask, llen, runt in _len_log_buckets(int(ipv6), int(vlan)):
        if l3_len & mask == value:
            return llen, runt
    raise ValueError(f"IP length {l3_len} is not 16 bits")


def packet_weight(l3_len: int, ipv6: bool, vlan: bool, rf: int, shift: int = 0) -> int:
    """w for one packet as len_log and the weight tables of scale-down `shift` give it (spec §5.1,
    §5.2): lw = llen |-| rf through `weight`, a miss (lw >= WEIGHT_KEYS) taking weight_max; a
    resetting port passes rf = code(1), which is what `weight_reset` holds for each llen."""
    llen, _ = len_log_lookup(l3_len, ipv6, vlan)
    lw = max(llen - rf, 0)
    return weight_value(lw, shift) if lw < constants.WEIGHT_KEYS else constants.WEIGHT_MAX


def len_log_entries() -> list[TableEntry]:
    """len_log (spec §5.1): llen per (header class, IP-length bucket); the action subtracts the
    arriving label (lw = llen - rf) and flags a runt. A resetting port's rf = 1.0 is applied by
    weight_reset, keyed on llen. Every 16-bit length of every class hits an entry."""
    t = p4names.LEN_LOG
    return [
        TableEntry(
            t.name,
            {"ipv6": Exact(ipv6), "vlan": Exact(vlan), "l3_len": Ternary(value, mask)},
            t.action("set_lw_runt" if runt else "set_lw").name,
            {"llen": llen, "wlen": wire_len(claimed_frame_len(value, bool(ipv6), bool(vlan)))}
            if runt
            else {"llen": llen, "wadd": wire_add(bool(ipv6), bool(vlan))},
        )
        for ipv6, vlan in LEN_CLASSES
        for value, mask, llen, runt in len_log_buckets(ipv6, vlan)
    ]


def wire_add(ipv6: bool, vlan: bool) -> int:
    """What a claim's IP length lacks of its line-rate bytes in one header class: L2 header (and the
    IPv6 header), FCS, preamble and gap; len_log's set_lw adds it (wlen, spec §5.1, §7.7)."""
    return claimed_frame_len(0, ipv6, vlan) + constants.WIRE_OVERHEAD


def claim_wire_len(l3_len: int, ipv6: bool, vlan: bool) -> int:
    """wlen as len_log gives it for one IP length (spec §5.1): a runt's padded frame, any other
    claim's `l3_len |+| wadd` (saturating at 2^16 - 1, the width of the field)."""
    _, runt = len_log_lookup(l3_len, ipv6, vlan)
    if runt:
        return wire_len(claimed_frame_len(l3_len, ipv6, vlan))
    return min(l3_len + wire_add(ipv6, vlan), 0xFFFF)


def claimed_frame_len(l3_len: int, ipv6: bool, vlan: bool, fcs: bool = True) -> int:
    """The frame a packet's headers claim, saturating at 2^16 - 1 like the P4 `|+|`: L2 header +
    IP length (+ the IPv6 header) + FCS, the ingress's frame_len (spec §4); without the FCS, the
    egress's `claimed` (spec §7.3)."""
    hdr = constants.ETH_HDR_LEN + (constants.VLAN_TAG_LEN if vlan else 0) + (constants.IPV6_HDR_LEN if ipv6 else 0)
    return min(l3_len + hdr + (constants.FCS_LEN if fcs else 0), 0xFFFF)


def lf_params(lo: int, hi: int) -> dict[str, int]:
    """f_log's action data: lf and nlf = -lf (mod 2^16), the same number twice because the data
    plane adds it to k and subtracts it from cc (spec §5.1)."""
    lf = bucket_log(lo, hi)
    return {"lf": lf, "nlf": (-lf) & constants.CODE_MAX}


def f_log_entries() -> list[TableEntry]:
    """f_log (spec §5.1): the unbiased log of the 32-bit F estimator output; 0 takes lf_zero."""
    return log_table_entries(p4names.F_LOG, 32, "set_lf", lf_params)


# --- the weight table (§5.2) -----------------------------------------------------------------


def weight_value(lw: int, shift: int = 0) -> int:
    """w = clamp(round(2^(lw/128 - shift)), 1, 2^32 - 1), rounded exactly: the weight scaled down
    by 2^shift, the estimator's scale-down (spec §4), so that its 32-bit state cannot saturate."""
    getcontext().prec = 50
    exact = (
        Decimal(lw - constants.CODE_STEPS_PER_OCTAVE * shift) / constants.CODE_STEPS_PER_OCTAVE * Decimal(2).ln()
    ).exp()
    w = int(exact.to_integral_value(rounding="ROUND_HALF_UP"))
    return min(max(w, 1), constants.WEIGHT_MAX)


def weight_entries(shift: int = 0) -> list[TableEntry]:
    t = p4names.WEIGHT
    return [
        TableEntry(t.name, {"lw": Exact(lw)}, t.actions[0].name, {"w": weight_value(lw, shift)})
        for lw in range(constants.WEIGHT_KEYS)
    ]


def weight_reset_entries(shift: int = 0) -> list[TableEntry]:
    """weight_reset (spec §5.2): a resetting port weighs by rf = 1.0, lw = llen - code(1) (at
    least 0), for every llen len_log can produce."""
    t = p4names.WEIGHT_RESET
    llens = sorted({llen for ipv6, vlan in LEN_CLASSES for _, _, llen, _ in _len_log_buckets(ipv6, vlan)})
    return [
        TableEntry(
            t.name,
            {"llen": Exact(llen)},
            t.actions[0].name,
            {"w": weight_value(max(llen - constants.CODE_ONE, 0), shift)},
        )
        for llen in llens
    ]


# --- the gamma table (§5.4) ------------------------------------------------------------------


def gamma_threshold(d: int) -> int:
    """thr = clamp(round(65536 · 2^(-d/128)), 1, 65535): accept iff a 16-bit random < thr."""
    if d < 1:
        raise ValueError("gamma_threshold is for d >= 1 (d <= 0 is the gamma = 1 bypass)")
    getcontext().prec = 50
    exact = (
        Decimal(1 << constants.RANDOM_BITS) * (-Decimal(d) / constants.CODE_STEPS_PER_OCTAVE * Decimal(2).ln()).exp()
    )
    thr = int(exact.to_integral_value(rounding="ROUND_HALF_UP"))
    return min(max(thr, 1), (1 << constants.RANDOM_BITS) - 1)


def gamma_entries() -> list[TableEntry]:
    """γ on (congested, c_cong), c_cong = code(τ / rf_norm) = CODE_ONE - d (spec §5.4): an
    uncongested egress and d <= 0 bypass the random draw; d = 1..GAMMA_D_MAX get a threshold;
    a miss (d beyond) drops."""
    t = p4names.GAMMA
    one, frac = t.action("gamma_one").name, t.action("gamma_frac").name
    entries = [
        TableEntry(t.name, {"congested": Ternary(0, 1), "c_cong": Ternary(0, 0)}, one),
        TableEntry(
            t.name, {"congested": Ternary(1, 1), "c_cong": Ternary(constants.CODE_ONE, constants.CODE_ONE)}, one
        ),
    ]
    for d in range(1, constants.GAMMA_D_MAX + 1):
        key = {"congested": Ternary(1, 1), "c_cong": Ternary(constants.CODE_ONE - d, constants.CODE_MAX)}
        entries.append(TableEntry(t.name, key, frac, {"thr": gamma_threshold(d)}))
    return entries


def gamma_of_code_distance(d: int) -> float:
    """The forwarding probability the table implements for d = rf_norm - ltau (in codes)."""
    if d <= 0:
        return 1.0
    if d > constants.GAMMA_D_MAX:
        return 0.0
    return gamma_threshold(d) / (1 << constants.RANDOM_BITS)


# --- the constant entries of p4src/ (spec §5.5, §7.6): one generator each, checked against the
# P4 source by tests/unit/test_p4_schema.py and run by the software switch --------------------------


def port_label_entries() -> list[TableEntry]:
    """FfsIngress.port_label, in priority order: which label enters normalization."""
    t = p4names.PORT_LABEL
    valid = Ternary(constants.FFS_STATE_VALID, 3)
    return [
        TableEntry(t.name, {"trust": Ternary(1, 1), "ffs_state": valid}, t.action("use_label_ri").name),
        TableEntry(t.name, {"trust": Ternary(0, 1), "ffs_state": valid}, t.action("reset_label").name),
    ]


def ipv4_shim_len_entries() -> list[TableEntry]:
    """FfsIngress.ipv4_shim_len: total_len < 4·IHL + 8 cannot hold the shim (spec §2)."""
    t = p4names.IPV4_SHIM_LEN
    return [
        TableEntry(
            t.name,
            {"ihl": Exact(ihl), "total_len": Range(0, 4 * ihl + constants.SHIM_LEN - 1)},
            t.action("short_shim").name,
        )
        for ihl in range(5, 16)
    ]


def ri_candidate_entries() -> list[TableEntry]:
    """FfsIngress.ri_update.ri_candidate: Algorithm 4's branches where RI is requested, on a
    trusting port with the arriving label and on a resetting one with the label it set (spec §6);
    `rri_ge_one` is bit 15 of the rri code (1 iff rri >= 1.0)."""
    t = p4names.RI_CANDIDATE
    out = []
    for ge_one in (0, 1):
        for cong in (0, 1):
            if not ge_one:
                act = "candidate_upstream" if cong else "candidate_keep"
            else:
                act = "candidate_congested" if cong else "candidate_uncongested"
            key = {"ri_req": Exact(1), "rri_ge_one": Exact(ge_one), "congested": Exact(cong)}
            out.append(TableEntry(t.name, key, t.action(act).name))
    return out


FATE_KEYS = (
    "parse_error",
    "parser_err",
    "routed",
    "managed",
    "admit_margin",
    "guard",
    "ffs_state",
    "trust",
    "insert",
    "ipv4",
    "ipv6",
    "ipv6_next_hdr",
    "runt",
    "frag",
    "room",
    "claim_room",
)


def fate_entries() -> list[TableEntry]:
    """FfsIngress.fate in priority order (first match wins; a miss, a parse error, drops)."""
    t = p4names.FATE
    rows: list[tuple[tuple[int | tuple[int, int] | None, ...], str]] = [
        ((0, 0, 0, None, None, None, None, None, None, None, None, None, None, None, None), "miss_drop"),
        # a claim beyond the ingress port's frame limit: a lie, before it weighs on any pair (spec §4)
        ((0, 0, 1, None, None, None, None, None, None, None, None, None, None, None, None, 0), "claim_drop"),
        ((0, 0, 1, 0, None, None, None, None, None, None, None, None, None, None, None), "note_no_pair"),
        ((0, 0, 1, 1, 0, None, None, None, None, None, None, None, None, None, None), "ffs_drop"),
        # the queue guard (spec §7.7): an admitted packet of a pair over its share while the queue stands
        ((0, 0, 1, 1, None, 1, None, None, None, None, None, None, None, None, None), "guard_drop"),
        (
            (0, 0, 1, 1, None, None, constants.FFS_STATE_VALID, 1, None, None, None, None, None, None, None),
            "rewrite_label",
        ),
        (
            (0, 0, 1, 1, None, None, constants.FFS_STATE_VALID, 0, None, None, None, None, None, None, None),
            "rewrite_reset_label",
        ),
        (
            (0, 0, 1, 1, None, None, constants.FFS_STATE_OPAQUE, None, None, None, None, None, None, None, None),
            "note_opaque",
        ),
        # a fragment: a shim in one fragment alone would keep the datagram from being reassembled
        (
            (0, 0, 1, 1, None, None, constants.FFS_STATE_NONE, None, 1, None, None, None, None, 1, None),
            "note_not_inserted",
        ),
        # a runt arrived padded: a shim in front of the padding would leave it behind the IP packet
        ((0, 0, 1, 1, None, None, constants.FFS_STATE_NONE, None, 1, None, None, None, 1, None, None), "forward"),
        # no room: the shim would take it beyond the egress's MTU, or wrap its IP length (spec §2)
        (
            (0, 0, 1, 1, None, None, constants.FFS_STATE_NONE, None, 1, None, None, None, None, None, 0),
            "note_not_inserted",
        ),
        (
            (0, 0, 1, 1, None, None, constants.FFS_STATE_NONE, None, 1, 1, None, None, None, None, None),
            "insert_shim_v4",
        ),
        # RFC 8200: a Hop-by-Hop header stays right after the IPv6 header; no shim in front of it
        (
            (
                0,
                0,
                1,
                1,
                None,
                None,
                constants.FFS_STATE_NONE,
                None,
                1,
                0,
                1,
                constants.IP_PROTO_HOPOPT,
                None,
                None,
                None,
            ),
            "forward",
        ),
        ((0, 0, 1, 1, None, None, constants.FFS_STATE_NONE, None, 1, 0, 1, None, None, None, None), "insert_shim_v6"),
        ((0, 0, 1, 1, None, None, constants.FFS_STATE_NONE, None, None, None, None, None, None, None, None), "forward"),
    ]
    widths = {k.name: k.width for k in t.keys}

    rows = [(values + (None,) * (len(FATE_KEYS) - len(values)), act) for values, act in rows]

    def key(name: str, v: int | tuple[int, int] | None) -> Ternary:
        if v is None:
            return Ternary(0, 0)
        if isinstance(v, tuple):
            return Ternary(*v)
        return Ternary(v, (1 << widths[name]) - 1)

    return [
        TableEntry(t.name, {n: key(n, v) for n, v in zip(FATE_KEYS, values)}, t.action(act).name)
        for values, act in rows
    ]


def shim_room_thr(mtu: int, ipv6: bool) -> int:
    """shim_room's `thr` for an egress of IP MTU `mtu` (spec §2): room = thr |-| l3_len is 0 exactly
    where 8 more bytes exceed the MTU, l3_len >= MTU - 7 (IPv4 total_len) or MTU - 47 (IPv6
    payload_len), never above SHIM_ROOM_MAX."""
    return min(mtu - constants.SHIM_LEN + 1 - (constants.IPV6_HDR_LEN if ipv6 else 0), constants.SHIM_ROOM_MAX)


def shim_room_entries(port: int, mtu: int) -> list[TableEntry]:
    """The shim_room entries of one egress port: its IPv4 and IPv6 limits."""
    t = p4names.SHIM_ROOM
    return [
        TableEntry(
            t.name,
            {"egress_port": Exact(port), "ipv6": Exact(v6)},
            t.action("set_room").name,
            {"thr": shim_room_thr(mtu, bool(v6))},
        )
        for v6 in (0, 1)
    ]


def claim_limit_thr(mtu: int, ipv6: bool) -> int | None:
    """claim_limit's `thr` for an ingress port of IP MTU `mtu` (spec §4): claim_room = thr |-| l3_len
    is 0 exactly where the frame the IP length claims, with the shortest L2 header, exceeds the
    port's frame limit (max_frame_len: the MAC admits nothing longer); None where no 16-bit IP
    length can exceed it."""
    longest = max_frame_len(mtu) - constants.FCS_LEN - constants.ETH_HDR_LEN - (constants.IPV6_HDR_LEN if ipv6 else 0)
    return longest + 1 if longest < 0xFFFF else None


def claim_limit_entries(port: int, mtu: int) -> list[TableEntry]:
    """The claim_limit entries of one ingress port: its IPv4 and IPv6 limits."""
    t = p4names.CLAIM_LIMIT
    out = []
    for v6 in (0, 1):
        thr = claim_limit_thr(mtu, bool(v6))
        if thr is not None:
            out.append(
                TableEntry(
                    t.name,
                    {"ingress_port": Exact(port), "ipv6": Exact(v6)},
                    t.action("set_claim_limit").name,
                    {"thr": thr},
                )
            )
    return out


def frame_check_entries() -> list[TableEntry]:
    """FfsEgress.egress_acct.frame_check (spec §7.3), first match wins; excess = pkt_len - (L2 header
    + IP length) mod 2^16, pkt_len as frame_basis makes it. A frame passes if its bytes are what its
    IP length says, 4 more where pkt_length counts the FCS, or a claim below the Ethernet minimum
    padded to it, also one that a bridge tagged after the padding (802.1Q: 64 bytes, 68 with FCS,
    tagged frames only); anything else is dropped. The fcs key is frame_basis's: FCS_EITHER (not
    measured) passes what FCS_COUNTED and FCS_NOT_COUNTED pass, as a ternary 0 under their masks."""
    t = p4names.FRAME_CHECK
    ok = t.action("frame_ok").name
    any_len = Ternary(0, 0)
    any_tag = Ternary(0, 0)
    tagged = Ternary(1, 1)
    # each entry's bases: FCS_EITHER and the one it belongs to (bit 0 clear: not counted; bit 1: counted)
    without_fcs = Ternary(constants.FCS_EITHER, constants.FCS_COUNTED)
    with_fcs = Ternary(constants.FCS_EITHER, constants.FCS_NOT_COUNTED)
    pad = constants.MIN_FRAME - constants.ETH_HDR_LEN  # the largest padding: an empty L3 claim
    # tagged after padding: claim = 18 + IP length < 64 exactly when the untagged claim was below
    # 60; excess = 64 - claim in [1, 46] (68 - claim in [5, 50] with the FCS), the untagged range
    tagged_min = constants.MIN_FRAME + constants.VLAN_TAG_LEN
    fcs = constants.FCS_LEN

    def entry(excess: Range, pkt_length: Ternary, vlan: Ternary, basis: Ternary) -> TableEntry:
        return TableEntry(t.name, {"excess": excess, "pkt_length": pkt_length, "vlan": vlan, "fcs": basis}, ok)

    return [
        entry(Range(0, 0), any_len, any_tag, without_fcs),
        entry(Range(fcs, fcs), any_len, any_tag, with_fcs),
        entry(Range(1, pad), Ternary(constants.MIN_FRAME, 0xFFFF), any_tag, without_fcs),
        entry(Range(fcs + 1, pad + fcs), Ternary(constants.MIN_FRAME + fcs, 0xFFFF), any_tag, with_fcs),
        entry(Range(fcs + 1, pad + fcs), Ternary(tagged_min + fcs, 0xFFFF), tagged, with_fcs),
        entry(Range(1, pad), Ternary(tagged_min, 0xFFFF), tagged, Ternary(constants.FCS_NOT_COUNTED, 0x3)),
    ]


def frame_basis_update(fcs: int, deparsed: bool) -> Update:
    """FfsEgress.egress_acct.frame_basis's default (spec §7.3), from what the agent measured of the
    egress's pkt_length: whether it counts the FCS (`fcs`, an FCS_* constant) and whether it is the
    frame as the ingress deparser emitted it (`deparsed`) rather than as it arrived."""
    if fcs not in (constants.FCS_EITHER, constants.FCS_COUNTED, constants.FCS_NOT_COUNTED):
        raise ValueError(f"frame_basis: fcs must be FCS_EITHER, FCS_COUNTED or FCS_NOT_COUNTED (0..2), not {fcs!r}")
    t = p4names.FRAME_BASIS
    action = t.action("basis_deparsed" if deparsed else "basis_arrival").name
    return Update("set_default", TableEntry(t.name, {}, action, {"fcs": fcs}))


def const_entries() -> dict[str, list[TableEntry]]:
    """Every const-entry table of p4src/ with its entries, by table name."""
    return {
        p4names.PORT_LABEL.name: port_label_entries(),
        p4names.IPV4_SHIM_LEN.name: ipv4_shim_len_entries(),
        p4names.RI_CANDIDATE.name: ri_candidate_entries(),
        p4names.FATE.name: fate_entries(),
        p4names.FRAME_CHECK.name: frame_check_entries(),
    }


# the lookup tables static_updates fills: named here so that a reader of the names (the agent's
# checks) need not generate the thousands of entries
GENERATED_TABLES: tuple[str, ...] = tuple(
    sorted(t.name for t in (p4names.LEN_LOG, p4names.WEIGHT, p4names.WEIGHT_RESET, p4names.F_LOG, p4names.GAMMA))
)


@functools.lru_cache(maxsize=4)
def _static_updates(shift: int) -> tuple[Update, ...]:
    entries = (
        len_log_entries() + weight_entries(shift) + weight_reset_entries(shift) + f_log_entries() + gamma_entries()
    )
    return tuple(Update("insert", e) for e in entries)


def static_updates(shift: int = 0) -> list[Update]:
    """Every generated entry of the writable lookup tables, as one batch, for an estimator of
    scale-down `shift` (the weight tables carry it, spec §4); entries are immutable, so each list
    is computed once per process."""
    return list(_static_updates(shift))


# --- unit conversions of the per-pair and per-egress action data (§4, §5.3) -----------------


def lpf_units_per_bps(
    lpf_time_constant_ns: float = constants.LPF_TIME_CONSTANT_NS, lpf_scale_down: int = constants.LPF_SCALE_DOWN
) -> float:
    """F_lpf per (weighted) bit/s: (1/8) · 2^WEIGHT_SHIFT · τ_F / 2^s, whether the weights or the
    filter's output carry the scale-down."""
    return (1 / 8) * (1 << constants.WEIGHT_SHIFT) * (lpf_time_constant_ns * 1e-9) / (1 << lpf_scale_down)


def lpf_scale_down_for(capacity_bps: float, lpf_time_constant_ns: float = constants.LPF_TIME_CONSTANT_NS) -> int:
    """The smallest scale-down s with which a pair's F estimator cannot saturate (spec §4): a stream
    at `capacity_bps` (the ingress line rate) whose every packet carries the smallest admitted
    label 2^-8 weighs len · 2^8 · 2^8 per byte; the RATE filter then holds about rate · τ_F of it,
    and with a factor 2 for bursts that must stay below 2^32 once divided by 2^s. The filter's state
    is a 32-bit register, so the weights carry s (`weight_entries(s)`), not its output."""
    if not (capacity_bps > 0 and math.isfinite(capacity_bps)):
        raise ValueError(f"capacity must be a finite positive rate, got {capacity_bps!r}")
    max_weight_per_byte = (1 << constants.WEIGHT_SHIFT) * 2.0 ** (
        (constants.CODE_ONE - constants.RF_CODE_MIN) / constants.CODE_STEPS_PER_OCTAVE
    )
    peak = 2 * (capacity_bps / 8) * max_weight_per_byte * lpf_time_constant_ns * 1e-9
    s = max(0, math.ceil(math.log2(peak / constants.WEIGHT_MAX))) if peak > constants.WEIGHT_MAX else 0
    if s > 31:
        raise ValueError(f"no 5-bit scale-down keeps the estimator below 2^32 at {capacity_bps:.3g} bit/s; shorten τ_F")
    return s


def lm_code(
    m_bps: float,
    lpf_time_constant_ns: float = constants.LPF_TIME_CONSTANT_NS,
    lpf_scale_down: int = constants.LPF_SCALE_DOWN,
) -> int:
    """The pair's `lm`: round(128 · log2 M_F), M_F = M in LPF output units, clamped to
    0..LM_MAX (a 32-bit F never reads more than 2^32: spec §7.2)."""
    if not (m_bps >= 0 and math.isfinite(m_bps)):
        raise ValueError(f"matrix entry must be a finite non-negative rate, got {m_bps!r}")
    m_f = m_bps * lpf_units_per_bps(lpf_time_constant_ns, lpf_scale_down)
    if m_f <= 1.0:
        return 0
    return min(round_log(m_f), constants.LM_MAX)


def pair_params(pid: int, lm: int) -> dict[str, int]:
    """set_pair action data: nlm = -lm (mod 2^16), because k = rf - lm is an add in the data
    plane (spec §5.3)."""
    if not 0 <= lm <= constants.LM_MAX:
        raise ValueError(f"lm {lm} outside 0..{constants.LM_MAX:#x}")
    return {"pid": pid, "nlm": (-lm) & constants.CODE_MAX}


def f_from_lpf(
    f_lpf: int,
    lpf_time_constant_ns: float = constants.LPF_TIME_CONSTANT_NS,
    lpf_scale_down: int = constants.LPF_SCALE_DOWN,
) -> float:
    """The weighted rate F in bit/s that an F LPF output (or f_est register) stands for."""
    return f_lpf / lpf_units_per_bps(lpf_time_constant_ns, lpf_scale_down)


def lm_of(pair: dict[str, int]) -> int:
    """The lm a set_pair entry's action data stands for (the inverse of pair_params)."""
    return (-pair["nlm"]) & constants.CODE_MAX


def egress_params(tau: float | None, congested: bool, cr_ratio: float | None) -> dict[str, int]:
    """set_egress action data: ltau = code(τ) while congested, LTAU_MAX = code(2^16) otherwise (γ = 1
    all the same: the γ table keys on `congested`; the label leaves at most 2^16, what the next hop
    admits, spec §3.1); ltau_p = ltau - code(1) while congested, 0 (τ = 1) otherwise (spec §5.3);
    lcr = code(T/R*) (0xFFFF when R* = 0 or unknown)."""
    if congested:
        if tau is None or not (tau >= 1.0 and math.isfinite(tau)):
            raise ValueError(f"a congested egress needs a finite tau >= 1, got {tau!r}")
        ltau = min(encode(tau), constants.LTAU_MAX)  # τ <= TAU_MAX = 2^16
        ltau_p = ltau - constants.CODE_ONE
    else:
        ltau, ltau_p = constants.LTAU_MAX, 0
    lcr = constants.CODE_MAX if cr_ratio is None or math.isinf(cr_ratio) else encode(max(cr_ratio, 0.0))
    return {"ltau": ltau, "ltau_p": ltau_p, "congested": int(congested), "lcr": lcr}


def egress_action_params(state: EgressTau, r_star_bps: float, target_bps: float) -> dict[str, int]:
    """The set_egress action data for an egress in this τ state (ffs.core.tau; spec §5.3)."""
    ratio = target_bps / r_star_bps if r_star_bps > 0 else None
    return egress_params(state.tau if state.congested else None, state.congested, ratio)


def egress_params_consistent(params: dict[str, int]) -> str | None:
    """Why set_egress action data breaks spec §5.3's derivation, or None when it holds."""
    ltau, ltau_p, congested = params["ltau"], params["ltau_p"], params["congested"]
    if congested:
        if not constants.CODE_ONE <= ltau <= constants.LTAU_MAX:
            return (
                f"a congested egress needs ltau in [{constants.CODE_ONE:#x}, {constants.LTAU_MAX:#x}] "
                f"(tau in [1, 2^16]), got {ltau:#x}"
            )
        if ltau_p != ltau - constants.CODE_ONE:
            return f"ltau_p must be ltau - 0x8000 = {ltau - constants.CODE_ONE:#x}, got {ltau_p:#x}"
    elif ltau_p != 0:
        return f"an uncongested egress needs ltau_p = 0, got {ltau_p:#x}"
    return None


# --- the queue guard (§5.3, §7.7) --------------------------------------------------------------

# a port's queue when its buffer is not configured: 10 ms of its line rate, and room for at least
# 64 frames of its MTU, at most 2 MiB (a Tofino 1 shares 22 MB among its ports). At critical load
# (FFS-C100 admits the port's speed) the queue's tail drops grow with the variance of the arrivals
# over the buffer: a buffer of 14 jumbo frames lost 2 % of a 100 Mb/s port (docs/results.md)
DEFAULT_BUFFER_S = 0.010
MIN_BUFFER_FRAMES = 64
MAX_BUFFER = 2 << 20


def default_buffer(speed_bps: float, mtu: int = 1500) -> int:
    frame = wire_len(max_frame_len(mtu))
    return int(min(max(speed_bps * DEFAULT_BUFFER_S / 8, MIN_BUFFER_FRAMES * frame), MAX_BUFFER))


def guard_threshold(speed_bps: float, buffer_bytes: int | None, mtu: int = 1500) -> int:
    """set_queue's qhi for a port (spec §5.3): GUARD_QUEUE_FRACTION of its queue, the topology's
    `buffer` or `default_buffer`."""
    queue = buffer_bytes if buffer_bytes is not None else default_buffer(speed_bps, mtu)
    return min(round(constants.GUARD_QUEUE_FRACTION * queue), constants.QHI_OFF - 1)


def timer_drain(speed_bps: float, period_ns: int) -> int:
    """set_drain's drain for a port (spec §5.3): the line-rate bytes it sends in one timer period."""
    return min(round(speed_bps * period_ns * 1e-9 / 8), 0xFFFFFFFF)


def guard_entries(ports: list[tuple[int, float, int | None, int]], period_ns: int) -> list[TableEntry]:
    """The guard's entries for the egress ports (port, speed, buffer, MTU) it watches: each one's
    threshold, and timer packet k (packet_id k) draining the k-th port (spec §5.3, §7.7)."""
    q, t = p4names.EGRESS_QUEUE, p4names.TIMER_PORTS
    out = []
    for k, (port, speed, buffer_bytes, mtu) in enumerate(sorted(ports)):
        out.append(
            TableEntry(
                q.name,
                {"egress_port": Exact(port)},
                q.action("set_queue").name,
                {"qhi": guard_threshold(speed, buffer_bytes, mtu)},
            )
        )
        out.append(
            TableEntry(
                t.name,
                {"packet_id": Exact(k)},
                t.action("set_drain").name,
                {"port": port, "drain": timer_drain(speed, period_ns)},
            )
        )
    return out
