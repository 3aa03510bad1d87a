"""Every table the data plane looks up, generated in one place (docs/spec.md §4–§5).

The Tofino agent, the software switch and the tests install exactly these entries; nothing else
computes a log, an exponential or a γ threshold for the data plane.
"""

from __future__ import annotations

import functools
import math
from decimal import Decimal, getcontext
from typing import Callable

from ffs import constants as C
from ffs import p4names as N
from ffs.driver.base import Exact, TableEntry, Ternary, Update
from ffs.labels import encode, round_log

# --- ternary log tables (§5.1) ---------------------------------------------------------------


def log_buckets(width: int, mantissa_bits: int = C.LOG_TABLE_MANTISSA_BITS) -> list[tuple[int, int, int, int]]:
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
    return round_log(lo * hi, C.CODE_STEPS_PER_OCTAVE // 2)


def log_table_entries(
    table: N.Table, width: int, out: Callable[[int, int], int], mantissa_bits: int = C.LOG_TABLE_MANTISSA_BITS
) -> list[TableEntry]:
    """A ternary MSB log table (spec §5.1) for `table`: one entry per bucket of `log_buckets`, keyed
    on the table's (single) key, running its first action with `out(lo, hi)` as the action's one
    parameter. The names come from `ffs.p4names`, so generator and P4 program cannot drift apart."""
    (key,) = table.keys
    if key.match != "ternary" or key.width != width:
        raise ValueError(f"{table.name}: key {key.name} is {key.match}/{key.width}, not ternary/{width}")
    action = table.actions[0]
    (param, _bits), = action.params
    return [
        TableEntry(table.name, {key.name: Ternary(value, mask)}, action.name, {param: out(lo, hi)})
        for value, mask, lo, hi in log_buckets(width, mantissa_bits)
    ]


LLEN_OFFSET = C.CODE_STEPS_PER_OCTAVE * C.WEIGHT_SHIFT + C.CODE_BIAS


def llen_code(lo: int, hi: int) -> int:
    """len_log's action data: the log of the packet length, pre-shifted so that lw = llen - rf."""
    return bucket_log(lo, hi) + LLEN_OFFSET


def len_log_entries() -> list[TableEntry]:
    """len_log (spec §5.1): llen per bucket of the 16-bit IP length; length 0 takes lw_zero."""
    t = N.LEN_LOG
    return log_table_entries(t, 16, llen_code)


def f_log_entries() -> list[TableEntry]:
    """f_log (spec §5.1): the unbiased log of the 32-bit F estimator output; 0 takes lf_zero."""
    t = N.F_LOG
    return log_table_entries(t, 32, bucket_log)


# --- the weight table (§5.2) -----------------------------------------------------------------


def weight_value(lw: int) -> int:
    """w = clamp(round(2^(lw/128)), 1, 2^32 - 1), rounded exactly."""
    getcontext().prec = 50
    exact = (Decimal(lw) / C.CODE_STEPS_PER_OCTAVE * Decimal(2).ln()).exp()
    w = int(exact.to_integral_value(rounding="ROUND_HALF_UP"))
    return min(max(w, 1), C.WEIGHT_MAX)


def weight_entries() -> list[TableEntry]:
    t = N.WEIGHT
    return [
        TableEntry(t.name, {"lw": Exact(lw)}, t.actions[0].name, {"w": weight_value(lw)})
        for lw in range(C.WEIGHT_KEYS)
    ]


# --- the gamma table (§5.4) ------------------------------------------------------------------


def gamma_threshold(d: int) -> int:
    """thr = clamp(round(65536 · 2^(-d/128)), 1, 65535): accept iff a 16-bit random < thr."""
    if d < 1:
        raise ValueError("gamma_threshold is for d >= 1 (d <= 0 is the gamma = 1 bypass)")
    getcontext().prec = 50
    exact = Decimal(1 << C.RANDOM_BITS) * (-Decimal(d) / C.CODE_STEPS_PER_OCTAVE * Decimal(2).ln()).exp()
    thr = int(exact.to_integral_value(rounding="ROUND_HALF_UP"))
    return min(max(thr, 1), (1 << C.RANDOM_BITS) - 1)


def gamma_entries() -> list[TableEntry]:
    t = N.GAMMA
    one, frac = t.action("gamma_one").name, t.action("gamma_frac").name
    entries = [
        TableEntry(t.name, {"d": Ternary(0x00000000, 0xFFFF0000)}, one),
        TableEntry(t.name, {"d": Ternary(C.WIDE_OFFSET, 0xFFFFFFFF)}, one),
    ]
    for d in range(1, C.GAMMA_D_MAX + 1):
        entries.append(
            TableEntry(t.name, {"d": Ternary(C.WIDE_OFFSET + d, 0xFFFFFFFF)}, frac, {"thr": gamma_threshold(d), "d16": d})
        )
    return entries


def gamma_of_code_distance(d: int) -> float:
    """The forwarding probability the table implements for d = rf_norm - ltau (in codes)."""
    if d <= 0:
        return 1.0
    if d > C.GAMMA_D_MAX:
        return 0.0
    return gamma_threshold(d) / (1 << C.RANDOM_BITS)


# --- the RI table's constant entries (§5.5) ---------------------------------------------------


def ri_entries() -> list[TableEntry]:
    """Algorithm 4's branches; `rri_ge_one` is bit 15 of the rri code (1 iff rri >= 1.0)."""
    t = N.RI
    out = []
    for ge_one in (0, 1):
        for cong in (0, 1):
            if not ge_one:
                act = t.action("ri_upstream").name
            else:
                act = t.action("ri_congested" if cong else "ri_uncongested").name
            out.append(
                TableEntry(t.name, {"ri_req": Exact(1), "rri_ge_one": Exact(ge_one), "congested": Exact(cong)}, act)
            )
    return out


@functools.lru_cache(maxsize=1)
def _static_updates() -> tuple[Update, ...]:
    entries = len_log_entries() + weight_entries() + f_log_entries() + gamma_entries()
    return tuple(Update("insert", e) for e in entries)


def static_updates() -> list[Update]:
    """Every generated entry of the writable lookup tables, as one batch (entries are immutable,
    so the generated list is computed once per process)."""
    return list(_static_updates())


# --- unit conversions of the per-pair and per-egress action data (§4, §5.3) -----------------


def lpf_units_per_bps(
    lpf_time_constant_ns: float = C.LPF_TIME_CONSTANT_NS, lpf_scale_down: int = C.LPF_SCALE_DOWN
) -> float:
    """F_lpf per (weighted) bit/s: (1/8) · 2^WEIGHT_SHIFT · τ_F / 2^s."""
    return (1 / 8) * (1 << C.WEIGHT_SHIFT) * (lpf_time_constant_ns * 1e-9) / (1 << lpf_scale_down)


def lm_code(
    m_bps: float, lpf_time_constant_ns: float = C.LPF_TIME_CONSTANT_NS, lpf_scale_down: int = C.LPF_SCALE_DOWN
) -> int:
    """The pair's `lm`: round(128 · log2 M_F), M_F = M in LPF output units, clamped to 0..0xFFFF."""
    if not (m_bps >= 0 and math.isfinite(m_bps)):
        raise ValueError(f"matrix entry must be a finite non-negative rate, got {m_bps!r}")
    m_f = m_bps * lpf_units_per_bps(lpf_time_constant_ns, lpf_scale_down)
    if m_f <= 1.0:
        return 0
    return min(round_log(m_f), C.CODE_MAX)


def f_from_lpf(
    f_lpf: int, lpf_time_constant_ns: float = C.LPF_TIME_CONSTANT_NS, lpf_scale_down: int = C.LPF_SCALE_DOWN
) -> float:
    """The weighted rate F in bit/s that an F LPF output (or f_est register) stands for."""
    return f_lpf / lpf_units_per_bps(lpf_time_constant_ns, lpf_scale_down)


def egress_params(tau: float | None, congested: bool, cr_ratio: float | None) -> dict[str, int]:
    """set_egress action data: ltau = code(τ) while congested, 0xFFFF (∞) otherwise;
    ntau = 0x10000 - ltau; lcr = code(T/R*) (0xFFFF when R* = 0 or unknown)."""
    if congested:
        if tau is None or not (tau >= 1.0 and math.isfinite(tau)):
            raise ValueError(f"a congested egress needs a finite tau >= 1, got {tau!r}")
        ltau = encode(tau)
    else:
        ltau = C.CODE_MAX
    lcr = C.CODE_MAX if cr_ratio is None or math.isinf(cr_ratio) else encode(max(cr_ratio, 0.0))
    return {"ltau": ltau, "ntau": C.WIDE_OFFSET - ltau, "congested": int(congested), "lcr": lcr}
