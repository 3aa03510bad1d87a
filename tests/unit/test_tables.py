# SPDX-License-Identifier: Apache-2.0
"""The generated tables of docs/spec.md §5 and the precision budget of §10."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

from ffs.core import constants, p4names, tables
from ffs.core.entries import Ternary
from ffs.core.labels import encode


def _arrays(buckets):
    return (np.array([b[0] for b in buckets], dtype=np.uint64), np.array([b[1] for b in buckets], dtype=np.uint64))


def _pairwise_disjoint(values, masks) -> bool:
    """Ternary entries (v1, m1), (v2, m2) overlap iff (v1 ^ v2) & m1 & m2 == 0."""
    for k in range(len(values)):
        overlap = ((values[k] ^ values[k + 1 :]) & masks[k] & masks[k + 1 :]) == 0
        if overlap.any():
            return False
    return True


def _matched_ranges(entries, width):
    """The inputs each ternary (value, mask) matches, as [lo, hi] ranges: exact for masks whose ones
    are a prefix (top bits down to some bit), which the test asserts first."""
    out = []
    full = (1 << width) - 1
    for value, mask in entries:
        free = full & ~mask
        assert free & (free + 1) == 0, f"mask {mask:#x} is not a prefix mask"
        out.append((value & mask, (value & mask) | free))
    return sorted(out)


def _hits_per_input(ranges, n):
    """How many ranges contain each input 0..n-1 (a difference array: O(entries + n))."""
    diff = np.zeros(n + 1, dtype=np.int64)
    for lo, hi in ranges:
        if lo < n:
            diff[lo] += 1
            diff[min(hi, n - 1) + 1] -= 1
    return np.cumsum(diff[:-1])


@pytest.mark.parametrize("width, table", [(16, p4names.LEN_LOG), (32, p4names.F_LOG)])
def test_log_tables_disjoint_and_cover_every_nonzero_input(width, table):
    buckets = tables.log_buckets(width)
    values, masks = _arrays(buckets)
    assert _pairwise_disjoint(values, masks)
    # disjoint entries cover sum(2^(free bits)) inputs; all 2^W - 1 non-zero ones means full coverage
    free = [width - bin(int(m)).count("1") for m in masks]
    assert sum(1 << f for f in free) == (1 << width) - 1
    assert not np.any((np.uint64(0) & masks) == values)  # input 0 misses: the default action handles it
    for value, mask, lo, hi in buckets:  # each entry's [lo, hi] is exactly the set it matches
        assert value & ~mask == 0 and lo == value and hi == value | (~mask & ((1 << width) - 1))
    entries = tables.len_log_entries() if width == 16 else tables.f_log_entries()
    # len_log: one set per header class, each with length 0 (an empty IPv6 payload) added
    assert len(entries) == (len(tables.LEN_CLASSES) * (len(buckets) + 1) if width == 16 else len(buckets)) <= table.size
    assert {e.table for e in entries} == {table.name}
    acts = {a.name for a in table.actions[:2]} if width == 16 else {table.actions[0].name}
    assert {e.action for e in entries} == acts


@pytest.mark.parametrize("width", [16, 32])
def test_log_tables_every_input_hits_exactly_one_entry(width):
    ranges = _matched_ranges([(v, m) for v, m, _, _ in tables.log_buckets(width)], width)
    # sorted ranges that abut without gaps or overlaps, from 1 to 2^W - 1: every non-zero input
    # matches exactly one entry and 0 matches none (all 2^32 inputs of f_log, without enumerating)
    assert ranges[0][0] == 1 and ranges[-1][1] == (1 << width) - 1
    assert all(b[0] == a[1] + 1 for a, b in zip(ranges, ranges[1:], strict=False))
    if width == 16:  # and, for len_log, the count per input directly
        hits = _hits_per_input(ranges, 1 << 16)
        assert hits[0] == 0 and np.all(hits[1:] == 1)


def _exact_log_units(lo: int, hi: int) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 40
        return (Decimal(lo * hi).ln() / Decimal(2).ln()) * 64


def test_log_table_outputs_and_error_bound():
    # every output is the exactly rounded log of its bucket's geometric middle, and every input is
    # within half a bucket plus half a code step of it (spec §10)
    worst = 0.0
    for _value, _mask, lo, hi in tables.log_buckets(32):
        out = tables.bucket_log(lo, hi)
        assert abs(Decimal(out) - _exact_log_units(lo, hi)) < Decimal("0.5")
        worst = max(worst, abs(out / 128 - math.log2(lo)), abs(out / 128 - math.log2(hi)))
    bound = math.log2(1 + 2**-7) / 2 + 0.5 / 128
    assert worst <= bound + 1e-12
    assert worst > 0.9 * bound  # the bound is attained, not loose


def test_exact_small_values():
    e = {lo: tables.bucket_log(lo, hi) for _, _, lo, hi in tables.log_buckets(16) if lo == hi}
    assert len(e) == 255
    assert e[1] == 0 and e[2] == 128 and e[128] == 7 * 128 and e[255] == round(128 * math.log2(255))
    assert e[3] == round(128 * math.log2(3))


def _len_log_lookup(ipv6: int, vlan: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(llen, runt, hits) for every 16-bit IP length of one header class, by matching the entries."""
    llen = np.zeros(1 << 16, dtype=np.int64)
    runt = np.zeros(1 << 16, dtype=np.int64)
    hits = np.zeros(1 << 16, dtype=np.int64)
    x = np.arange(1 << 16, dtype=np.int64)
    for e in tables.len_log_entries():
        if (e.key["ipv6"].value, e.key["vlan"].value) != (ipv6, vlan):
            continue
        m = (x & e.key["l3_len"].mask) == e.key["l3_len"].value
        hits += m
        llen[m] = e.params["llen"]
        runt[m] = e.action.endswith("set_lw_runt")
    return llen, runt, hits


@pytest.mark.parametrize("ipv6, vlan", tables.LEN_CLASSES)
def test_len_log_weighs_the_claimed_frame_of_every_ip_length(ipv6, vlan):
    """spec §4, §5.1: every IP length of every header class hits one entry, whose llen is the log
    of what the frame the headers claim costs the port (L2 header + IP length + FCS, saturating; a
    claim below the Ethernet minimum padded to 64 bytes; plus preamble, start delimiter and
    inter-frame gap, 8 + 12 bytes in IEEE 802.3) within half a bucket plus half a code step, and
    whose runt flag says the claim may have arrived padded: below 64 bytes, or below 68 with an
    802.1Q tag (Ethernet pads to 60 bytes before FCS, and a bridge that tags the padded frame makes
    it 64, 68 with FCS)."""
    llen, runt, hits = _len_log_lookup(ipv6, vlan)
    assert np.all(hits == 1)
    x = np.arange(1 << 16)
    frame = np.array([tables.claimed_frame_len(int(n), bool(ipv6), bool(vlan)) for n in x])
    assert np.array_equal(runt, frame < (68 if vlan else 64))
    charged = np.maximum(frame, 64) + 8 + 12
    err = np.abs((llen - tables.LLEN_OFFSET) / 128 - np.log2(charged))
    assert err.max() <= math.log2(1 + 2**-7) / 2 + 0.5 / 128 + 1e-12
    # IP lengths below 256 are buckets of one: their llen is the exactly rounded log of the claim
    for n in (0, 20, 40, 46, 100, 255):
        assert llen[n] == round(128 * math.log2(max(int(frame[n]), 64) + 20)) + tables.LLEN_OFFSET
    assert llen.max() <= 0xFFFF


def test_len_log_action_data():
    llen, _, _ = _len_log_lookup(0, 0)  # IPv4 without 802.1Q: frame = IP length + 18, on the wire + 20 more
    assert (
        llen[128 - 38] == 7 * 128 + tables.LLEN_OFFSET == 7 * 128 + 128 * constants.WEIGHT_SHIFT + constants.CODE_BIAS
    )
    assert llen[256 - 38] == 8 * 128 + tables.LLEN_OFFSET
    # spec §4: a frame shorter than the Ethernet minimum (60 bytes + FCS) weighs as a minimum frame
    assert llen[64 - 18] == round(128 * math.log2(84)) + tables.LLEN_OFFSET
    assert all(llen[v] == llen[64 - 18] for v in range(0, 64 - 18))
    assert llen[65 - 18] == round(128 * math.log2(85)) + tables.LLEN_OFFSET
    v6, _, _ = _len_log_lookup(1, 1)  # IPv6 with 802.1Q: frame = payload length + 62
    assert v6[2] == llen[46] and v6[1250 - 82] == round(128 * math.log2(1250)) + tables.LLEN_OFFSET


def test_weight_reset_is_weight_with_the_label_one():
    """spec §5.2: a resetting port weighs by rf = 1.0: w = 2^((llen - code(1))/128), for every llen
    len_log produces (weight_reset is keyed on llen, the trusting ports' weight on lw = llen - rf)."""
    reset = {e.key["llen"].value: e.params["w"] for e in tables.weight_reset_entries()}
    assert len(reset) <= p4names.WEIGHT_RESET.size
    assert reset.keys() == {e.params["llen"] for e in tables.len_log_entries()}
    weight = {e.key["lw"].value: e.params["w"] for e in tables.weight_entries()}
    assert all(w == weight[max(llen - constants.CODE_ONE, 0)] for llen, w in reset.items())


@pytest.mark.parametrize(
    "l3_len, ipv6, vlan, frame",
    [
        (1250, False, False, 1268),
        (1250, False, True, 1272),
        (1210, True, False, 1268),
        (1210, True, True, 1272),
        (20, False, False, 38),
        (0xFFFF, False, False, 0xFFFF),
        (0xFFF0, True, False, 0xFFFF),
    ],
)
def test_claimed_frame_len_adds_the_headers_and_saturates(l3_len, ipv6, vlan, frame):
    """spec §4: L2 header + IP length (+40 for IPv6) + FCS, at most 65535 (the P4 `|+|`)."""
    assert tables.claimed_frame_len(l3_len, ipv6, vlan) == frame


def test_frame_check_entries():
    """spec §5.5, §7.3: which (excess, pkt_length, vlan, fcs basis) pass, first match wins."""
    from ffs.core.entries import Range

    either, counted, not_counted = constants.FCS_EITHER, constants.FCS_COUNTED, constants.FCS_NOT_COUNTED

    def passes(excess: int, pkt_length: int, vlan: int = 0, fcs: int = either) -> bool:
        for e in tables.frame_check_entries():
            r, t, v, b = e.key["excess"], e.key["pkt_length"], e.key["vlan"], e.key["fcs"]
            assert isinstance(r, Range)
            keys = pkt_length & t.mask == t.value and vlan & v.mask == v.value and fcs & b.mask == b.value
            if r.low <= excess <= r.high and keys:
                return e.action.endswith("frame_ok")
        return False  # the default: frame_lies

    assert passes(0, 1268) and passes(4, 1272)  # exact, and with an FCS
    assert passes(60 - 34, 60) and passes(64 - 34, 64)  # a 34-byte claim padded, without and with FCS
    assert passes(60 - 14, 60) and not passes(60 - 13, 60)  # the largest padding: an empty claim
    assert not passes(1, 1269) and not passes(3, 1271) and not passes(5, 1273)  # bytes beyond the claim
    assert not passes((1268 - 1300) & 0xFFFF, 1268)  # a claim beyond the frame
    assert not passes(1230, 1250)  # 1250 bytes claiming 20
    # a measured basis: the FCS's 4 bytes only where pkt_length counts it, and the padding likewise
    assert passes(4, 1272, fcs=counted) and not passes(0, 1268, fcs=counted)
    assert passes(0, 1268, fcs=not_counted) and not passes(4, 1272, fcs=not_counted)
    assert passes(64 - 34, 64, fcs=counted) and not passes(60 - 34, 60, fcs=counted)
    assert passes(60 - 34, 60, fcs=not_counted) and not passes(64 - 34, 64, fcs=not_counted)
    # padded to 60, then tagged: 68 bytes with the FCS, 64 without (tagged frames only)
    assert passes(68 - 52, 68, vlan=1, fcs=counted) and passes(68 - 52, 68, vlan=1)
    assert passes(64 - 18, 64, vlan=1, fcs=not_counted) and not passes(64 - 17, 64, vlan=1, fcs=not_counted)
    assert not passes(64 - 52, 64, vlan=0, fcs=not_counted) and not passes(68 - 52, 68, vlan=1, fcs=not_counted)
    assert not passes(1, 64, vlan=1) and not passes(1, 64, vlan=1, fcs=counted)  # FCS_EITHER: as before
    for e in tables.f_log_entries():
        assert (e.params["lf"] + e.params["nlf"]) & 0xFFFF == 0 and e.params["lf"] <= constants.D_OFFSET


def test_weight_table_ends_and_values():
    entries = tables.weight_entries()
    w = {e.key["lw"].value: e.params["w"] for e in entries}
    assert len(w) == constants.WEIGHT_KEYS == p4names.WEIGHT.size and sorted(w) == list(range(constants.WEIGHT_KEYS))
    assert {e.action for e in entries} == {p4names.WEIGHT.actions[0].name}
    assert w[0] == 1 and w[1] == 1 and w[128] == 2 and w[128 * 10] == 1024 and w[128 * 31] == 2**31
    assert w[4095] == round(2 ** (4095 / 128)) < 2**32  # the last key; lw >= 4096 misses -> weight_max
    assert all(w[k] <= w[k + 1] for k in range(constants.WEIGHT_KEYS - 1))
    for k in (77, 1000, 2345, 4000):
        assert abs(w[k] - 2 ** (k / 128)) <= 0.5 + 1e-6 * w[k]
    # a 1250-byte packet with rf = 1: lw = llen - rf = 128*log2(1250*256)
    llen = tables.llen_code(1250, 1250)
    assert w[llen - encode(1.0)] == pytest.approx(1250 * 256, rel=0.003)


def test_weight_path_error():
    # w = weight[llen |-| rf] against len * 2^8 / rf over every length and rf in [2^-8, 2^8] (spec §10)
    llen = np.zeros(1 << 16, dtype=np.int64)
    for _, _, lo, hi in tables.log_buckets(16):
        llen[lo : hi + 1] = tables.llen_code(lo, hi)
    w = np.array([tables.weight_value(k) for k in range(constants.WEIGHT_KEYS)], dtype=np.float64)
    lens = np.arange(28, 9217, 3)
    rf = np.arange(0x8000 - 1024, 0x8000 + 1025, 5)
    lw = np.maximum(llen[lens][:, None] - rf[None, :], 0)
    assert lw.max() < constants.WEIGHT_KEYS  # no weight_max in this range
    exact = lens[:, None] * 256.0 / 2.0 ** ((rf[None, :] - 0x8000) / 128)
    err = np.abs(w[lw] / exact - 1)
    big = exact >= 128  # where rounding w to an integer hardly matters
    assert err[big].max() <= 2 ** (math.log2(1 + 2**-7) / 2 + 1 / 256) - 1  # len_log's 0.66 % (spec §10)
    assert 0.01 < err.max() <= 0.02  # small weights: + 0.5/w (1.8 % at 28 bytes, rf = 2^8)


def test_gamma_table():
    entries = tables.gamma_entries()
    assert len(entries) == constants.GAMMA_D_MAX + 2 <= p4names.GAMMA.size
    # c_cong = code(τ / rf_norm) = CODE_ONE - d on a congested egress
    thr = {constants.CODE_ONE - e.key["c_cong"].value: e.params["thr"] for e in entries if e.params}
    assert sorted(thr) == list(range(1, constants.GAMMA_D_MAX + 1))
    assert all(e.key["congested"] == Ternary(1, 1) for e in entries if e.params)
    assert thr[128] == 32768  # one octave: gamma = 1/2
    assert thr[1] == round(65536 * 2 ** (-1 / 128)) == 65182
    assert thr[constants.GAMMA_D_MAX] == 1  # 2^-16 rounds to 1: the last entry still forwards 1 in 65536
    assert thr[1024] == 256 and thr[1920] == 2  # gamma = 2^-8, 2^-15
    assert all(thr[d] >= thr[d + 1] for d in range(1, constants.GAMMA_D_MAX))
    for d in (1, 37, 128, 500, 1024):  # thresholds within half a unit of 65536 * gamma
        assert abs(thr[d] - 65536 * 2 ** (-d / 128)) <= 0.5
    # γ = 1: any uncongested egress, and d <= 0 (c_cong >= CODE_ONE) on a congested one
    one = [(e.key["congested"], e.key["c_cong"]) for e in entries if e.action.endswith("gamma_one")]
    assert one == [(Ternary(0, 1), Ternary(0, 0)), (Ternary(1, 1), Ternary(constants.CODE_ONE, constants.CODE_ONE))]
    # every (congested, c_cong) of 17 bits hits at most one entry, exactly one where γ > 0
    values = np.array([(e.key["congested"].value << 16) | e.key["c_cong"].value for e in entries], dtype=np.uint64)
    masks = np.array([(e.key["congested"].mask << 16) | e.key["c_cong"].mask for e in entries], dtype=np.uint64)
    assert _pairwise_disjoint(values, masks)
    hits = _hits_per_input(_matched_ranges(zip(values.tolist(), masks.tolist(), strict=False), 17), 1 << 17)
    cong = hits[1 << 16 :]
    assert np.all(hits[: 1 << 16] == 1)  # uncongested
    assert np.all(cong[constants.CODE_ONE - constants.GAMMA_D_MAX :] == 1) and np.all(
        cong[: constants.CODE_ONE - constants.GAMMA_D_MAX] == 0
    )
    assert tables.gamma_of_code_distance(0) == 1.0 and tables.gamma_of_code_distance(-5) == 1.0
    assert tables.gamma_of_code_distance(constants.GAMMA_D_MAX + 1) == 0.0
    with pytest.raises(ValueError):
        tables.gamma_threshold(0)


def test_ri_candidates_cover_requests():
    entries = tables.ri_candidate_entries()
    assert len(entries) <= p4names.RI_CANDIDATE.size and {e.table for e in entries} == {p4names.RI_CANDIDATE.name}
    e = {tuple(v.value for v in x.key.values()): x.action.rsplit(".", 1)[1] for x in entries}
    assert e == {  # (ri_req, rri_ge_one, congested): Algorithm 4's branches, whatever the port's trust (spec §6)
        (1, 1, 0): "candidate_uncongested",
        (1, 1, 1): "candidate_congested",
        (1, 0, 0): "candidate_keep",  # rri < 1 and γ = 1: rri · γ = rri
        (1, 0, 1): "candidate_upstream",
    }
    assert p4names.RI_CANDIDATE.default_action.endswith("candidate_keep")  # not requested, or reset port


def test_static_updates_one_batch_of_inserts():
    ups = tables.static_updates()
    assert {u.entry.table for u in ups} == set(tables.GENERATED_TABLES)  # the names the agent checks by
    assert {u.kind for u in ups} == {"insert"}
    counts = {}
    for u in ups:
        counts[u.entry.table] = counts.get(u.entry.table, 0) + 1
    assert counts == {
        p4names.LEN_LOG.name: len(tables.LEN_CLASSES) * (len(tables.log_buckets(16)) + 1),
        p4names.WEIGHT.name: constants.WEIGHT_KEYS,
        p4names.WEIGHT_RESET.name: len(tables.weight_reset_entries()),
        p4names.F_LOG.name: len(tables.log_buckets(32)),
        p4names.GAMMA.name: constants.GAMMA_D_MAX + 2,
    }
    for t in (p4names.LEN_LOG, p4names.WEIGHT, p4names.WEIGHT_RESET, p4names.F_LOG, p4names.GAMMA):
        assert counts[t.name] <= t.size
    # every entry uses the table's own key names, actions and parameters
    for u in ups:
        t = p4names.table(u.entry.table)
        assert set(u.entry.key) == {k.name for k in t.keys}
        assert set(u.entry.params) == {p for p, _ in t.action(u.entry.action).params}
    assert tables.static_updates() is not tables.static_updates()  # callers may extend their copy


def test_egress_params():
    p = tables.egress_params(4 / 3, True, None)
    assert p == {"ltau": encode(4 / 3), "ltau_p": encode(4 / 3) - 0x8000, "congested": 1, "lcr": constants.CODE_MAX}
    idle = tables.egress_params(None, False, 2.0)
    # uncongested: ltau = 2^16, the largest label a node emits and the next admits (spec §3.1)
    assert idle == {"ltau": constants.LTAU_MAX, "ltau_p": 0, "congested": 0, "lcr": encode(2.0)}
    assert constants.LTAU_MAX == constants.RF_CODE_MAX
    assert tables.egress_params(2.0**20, True, None)["ltau"] == constants.LTAU_MAX  # τ <= 2^16
    assert tables.egress_params_consistent(p) is None and tables.egress_params_consistent(idle) is None
    assert "ltau_p" in tables.egress_params_consistent({**p, "ltau_p": 0})
    assert tables.egress_params(3.0, False, math.inf)["ltau"] == constants.LTAU_MAX  # uncongested: tau ignored
    for bad in (0.5, None, math.inf, math.nan):
        with pytest.raises(ValueError):
            tables.egress_params(bad, True, None)


def test_lm_units():
    # M_F = (M/8) * 2^8 * tau_F / 2^s: 1 Gbps with 1 ms and s = 4 is 2e6 LPF units
    assert tables.lpf_units_per_bps() == pytest.approx(2e-3)
    assert tables.lm_code(1e9) == round(128 * math.log2(2e6))
    assert tables.lm_code(1e9, lpf_time_constant_ns=2e6, lpf_scale_down=5) == tables.lm_code(1e9)
    assert tables.lm_code(0) == 0 and tables.lm_code(1) == 0
    for m in (1e6, 7e9, 100e9):
        lm = tables.lm_code(m)
        assert tables.f_from_lpf(2 ** (lm / 128)) == pytest.approx(m, rel=0.0028)  # half a code step
    for bad in (math.nan, math.inf, -1.0):
        with pytest.raises(ValueError):
            tables.lm_code(bad)


# --- the precision budget (spec §10) -----------------------------------------------------------

_LF = {lo: tables.bucket_log(lo, hi) for _, _, lo, hi in tables.log_buckets(32)}


def _lf(v: int) -> int:
    """f_log's output for a 32-bit input (the bucket of its MSB and the 7 bits below)."""
    shift = max(v.bit_length() - 1 - constants.LOG_TABLE_MANTISSA_BITS, 0)
    return _LF[(v >> shift) << shift]


def test_precision_budget_over_a_grid():
    """Stages 2-5 of spec §7.2 in codes (k = rf |-| lm, rf_norm = k + lf, d = rf_norm - ltau, the γ
    table) against exact γ = min(1, τ·M/(rf·F)) over rf in [2^-8, 2^8], M from 3 Mb/s to 100 Gb/s,
    F/M in [2^-6, 2^6] and τ in [1, 2^8], wherever exact γ is in [2^-8, 1]."""
    units = tables.lpf_units_per_bps()
    thr = np.array([0.0] + [tables.gamma_threshold(d) / 65536 for d in range(1, constants.GAMMA_D_MAX + 1)])
    rf_codes = np.arange(0x8000 - 1024, 0x8000 + 1025, 11)
    rf_exact = 2.0 ** ((rf_codes - 0x8000) / 128)  # a label is a code: its value is exact
    taus = 2.0 ** (np.arange(0, 49) / 6.1)
    ltau = np.array([encode(float(t)) for t in taus])
    worst_gamma = worst_norm = 0.0
    samples = 0
    for m in 10 ** (6.5 + np.arange(0, 45, 2) / 9.7):
        lm = tables.lm_code(m)
        for ratio in 2.0 ** (np.arange(-60, 61, 2) / 10.3):
            f_lpf = int(m * ratio * units)
            if f_lpf >= 1 << 32:  # the LPF output saturates: a range limit (spec §10), not precision
                continue
            f_seen = f_lpf / units  # the estimator's integer output is what the node measures
            rf_norm = np.maximum(rf_codes - lm, 0) + _lf(f_lpf)
            norm_exact = rf_exact * f_seen / m
            worst_norm = max(worst_norm, float(np.max(np.abs(2.0 ** ((rf_norm - 0x8000) / 128) / norm_exact - 1))))
            d = rf_norm[:, None] - ltau[None, :]
            exact = np.minimum(1.0, taus[None, :] / norm_exact[:, None])
            coded = np.where(d <= 0, 1.0, thr[np.clip(d, 0, constants.GAMMA_D_MAX)])
            sel = exact >= 2.0**-8
            samples += int(sel.sum())
            worst_gamma = max(worst_gamma, float(np.max(np.abs(coded / exact - 1)[sel])))
    octaves_norm = 1 / 256 + math.log2(1 + 2**-7) / 2 + 1 / 256  # lm + lf (bucket, rounding)
    assert samples > 1_000_000
    assert 0.006 < worst_norm <= 2**octaves_norm - 1  # 0.93 % bound; the grid reaches 0.85 %
    bound_gamma = 2 ** (octaves_norm + 1 / 256) - 1 + 0.5 / 256  # + ltau, + thr rounding at 2^-8
    assert 0.009 < worst_gamma <= bound_gamma < 0.02  # spec §10: ≤ 1.4 %, within the 2 % requirement


@pytest.mark.parametrize("capacity", [10e6, 1e9, 10e9, 100e9, 400e9])
def test_estimator_sized_for_line_rate_at_the_smallest_label(capacity):
    """spec §4: with the scale-down the agent derives, a stream at line rate whose packets all carry
    rf = 2^-8 (or anything below, clamped) keeps the F LPF below 2^32, with room for a burst of 2;
    one step less would not."""
    s = tables.lpf_scale_down_for(capacity)
    per_s = capacity / 8 * 256 * 256  # weight units per second at rf = 2^-8
    held = per_s * constants.LPF_TIME_CONSTANT_NS * 1e-9  # what the RATE filter holds at a steady rate
    assert 2 * held / 2**s <= constants.WEIGHT_MAX
    if s > 0:
        assert 2 * held / 2 ** (s - 1) > constants.WEIGHT_MAX
