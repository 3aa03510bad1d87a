"""The generated tables of docs/spec.md §5 and the precision budget of §10."""

import math
import random

import numpy as np
import pytest

from ffs import constants as C
from ffs import p4names as N
from ffs import tables as T
from ffs.labels import decode, encode


def _lookup(buckets, v):
    hits = [(lo, hi) for value, mask, lo, hi in buckets if v & mask == value]
    return hits


def test_len_log_is_disjoint_and_covers_every_length():
    buckets = T.log_buckets(16)
    values = np.array([b[0] for b in buckets], dtype=np.int64)
    masks = np.array([b[1] for b in buckets], dtype=np.int64)
    for v in range(1, 1 << 16):
        assert int(np.count_nonzero((v & masks) == values)) == 1, v
    assert not np.any((0 & masks) == values)  # input 0 misses: the default action handles it
    assert len(buckets) <= N.LEN_LOG.size


def test_f_log_is_disjoint_on_samples_and_fits():
    buckets = T.log_buckets(32)
    assert len(buckets) <= N.F_LOG.size
    values = np.array([b[0] for b in buckets], dtype=np.uint64)
    masks = np.array([b[1] for b in buckets], dtype=np.uint64)
    rng = random.Random(7)
    samples = [1, 2, 255, 256, 257, (1 << 32) - 1, 1 << 31] + [rng.getrandbits(rng.randint(1, 32)) | 1 for _ in range(3000)]
    for v in samples:
        hits = np.nonzero((np.uint64(v) & masks) == values)[0]
        assert len(hits) == 1, v
        lo, hi = buckets[hits[0]][2:]
        assert lo <= v <= hi


def test_log_table_error_bound():
    # every input's log is within half a bucket plus half a code step of the table's output
    worst = 0.0
    for value, mask, lo, hi in T.log_buckets(32):
        out = T.bucket_log(lo, hi) / 128
        worst = max(worst, abs(out - math.log2(lo)), abs(out - math.log2(hi)))
    bound = math.log2(1 + 2**-7) / 2 + 0.5 / 128
    assert worst <= bound + 1e-12
    assert worst > bound / 2  # the bound is tight-ish, not vacuous


def test_exact_small_values():
    e = {lo: T.bucket_log(lo, hi) for _, _, lo, hi in T.log_buckets(16) if lo == hi}
    assert e[1] == 0 and e[2] == 128 and e[128] == 7 * 128
    assert e[3] == round(128 * math.log2(3))


def test_weight_table_ends_and_values():
    w = {e.key["lw"].value: e.params["w"] for e in T.weight_entries()}
    assert len(w) == C.WEIGHT_KEYS == N.WEIGHT.size
    assert w[0] == 1 and w[128] == 2 and w[128 * 10] == 1024
    assert w[4095] == round(2 ** (4095 / 128)) < 2**32
    # a 1250-byte packet with rf = 1: lw = llen - rf = 128*log2(1250*256)
    llen = T.llen_code(1250, 1250)
    assert w[llen - encode(1.0)] == pytest.approx(1250 * 256, rel=0.003)


def test_gamma_table():
    entries = T.gamma_entries()
    assert len(entries) == C.GAMMA_D_MAX + 2 <= N.GAMMA.size
    thr = {e.key["d"].value - C.WIDE_OFFSET: e.params["thr"] for e in entries if e.params}
    assert thr[128] == 32768  # one octave: gamma = 1/2
    assert thr[1] == round(65536 * 2 ** (-1 / 128))
    assert thr[C.GAMMA_D_MAX] == 1
    assert all(thr[d] >= thr[d + 1] for d in range(1, C.GAMMA_D_MAX))
    # the two gamma = 1 entries cover exactly d_w < 0x10000 and d_w == 0x10000
    one = [e.key["d"] for e in entries if e.action.endswith("gamma_one")]
    assert one == [T.Ternary(0, 0xFFFF0000), T.Ternary(0x10000, 0xFFFFFFFF)]


def test_ri_entries_cover_requests():
    e = {tuple(v.value for v in x.key.values()): x.action.rsplit(".", 1)[1] for x in T.ri_entries()}
    assert e == {
        (1, 1, 0): "ri_uncongested",
        (1, 1, 1): "ri_congested",
        (1, 0, 0): "ri_upstream",
        (1, 0, 1): "ri_upstream",
    }


def test_egress_params():
    p = T.egress_params(4 / 3, True, None)
    assert p["ltau"] == encode(4 / 3) and p["ntau"] == 0x10000 - p["ltau"] and p["congested"] == 1
    assert p["lcr"] == C.CODE_MAX
    idle = T.egress_params(None, False, 2.0)
    assert idle["ltau"] == C.CODE_MAX and idle["ntau"] == 1 and idle["lcr"] == encode(2.0)
    with pytest.raises(ValueError):
        T.egress_params(0.5, True, None)


def test_lm_and_f_units_round_trip():
    for m in (1e6, 7e9, 100e9):
        lm = T.lm_code(m)
        f_lpf = 2 ** (lm / 128)
        assert T.f_from_lpf(f_lpf) == pytest.approx(m, rel=0.003)
    with pytest.raises(ValueError):
        T.lm_code(float("nan"))


def _code_pipeline(rf: int, f_lpf: int, lm: int, ltau: int):
    """The stage 2-5 arithmetic of spec §7.2 on integers (reference for the budget test)."""
    lf = next(T.bucket_log(lo, hi) for value, mask, lo, hi in _F_BUCKETS if f_lpf & mask == value)
    k = max(rf - lm, 0)
    rf_norm = k + lf
    d = rf_norm - ltau
    return rf_norm, d


_F_BUCKETS = T.log_buckets(32)


def test_precision_budget_gamma_within_two_percent():
    """γ from the code arithmetic vs exact γ = min(1, τ / (rf·F/M)) over γ in [2^-8, 1] (spec §10)."""
    rng = random.Random(2024)
    worst = 0.0
    n = 0
    while n < 400:
        rf = 2 ** rng.uniform(-6, 6)
        rf_code = encode(rf)
        rf_exact = decode(rf_code)  # the label is a code: its value is exact
        m_bps = 10 ** rng.uniform(7, 11)
        f_bps = m_bps * 2 ** rng.uniform(-4, 4)
        tau = 2 ** rng.uniform(0, 6)
        gamma_exact = min(1.0, tau / (rf_exact * f_bps / m_bps))
        if not (2**-8 <= gamma_exact <= 1):
            continue
        f_lpf = int(f_bps * T.lpf_units_per_bps())
        f_bps_seen = T.f_from_lpf(f_lpf)  # the estimator's integer output, not a quantization error of ours
        gamma_exact = min(1.0, tau / (rf_exact * f_bps_seen / m_bps))
        _, d = _code_pipeline(rf_code, f_lpf, T.lm_code(m_bps), encode(tau))
        gamma_code = T.gamma_of_code_distance(d)
        worst = max(worst, abs(gamma_code / gamma_exact - 1))
        n += 1
    assert worst < 0.02
