# SPDX-License-Identifier: Apache-2.0
"""A share of a few percent against a flood: the F estimator at few packets per time constant
(docs/results.md, "Small shares"; docs/spec.md §10).

One node, one 100 Mb/s egress at its own speed (FFS-C100): ingress p1 has the share under test and
sends 2.5 times it (an overloaded pair: F measures its arrivals, so the estimator's error is the
pair's error), p2 has the rest of the egress and floods at 200 Mb/s. Both send `size`-byte IP
packets through ports of one MTU as deployed (1500 bytes by default, 9000 jumbo; the packets fit
it), and ffs-agent sizes the estimators for that MTU (spec §4). Exact FFS (Eq. 1-2): p1 gets its
share, p2 the rest. `measure` takes the steady state, `measure_onset` the share kept in windows
after each of a train of flood onsets.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ffs.core.program import LpfConfig, pairs_of
from ffs.core.tables import wire_len
from ffs.lab.attacks import loads
from ffs.lab.experiments import run_scenario

CAPACITY = 100e6
FLOOD = 200e6
OVERLOAD = 2.5  # the small pair sends this times its share
MIN_PACKETS = 15_000  # of the small pair in the measured half: its admitted count's sampling error ~1 %
LOOP_BIAS = 0.005  # spec §10.1: the τ update's bias, about 1/(2 · 100 admitted frames), either way
SIGMAS = 3  # the sampling error allowed each cell, in standard deviations of its admitted count
SETTLE = 5  # time constants after which an estimator is taken as settled (e^-5: 0.7 %)
DRAIN_AIM = 1 / 32  # spec §9: τ aims this far below the target while the queue stands


MTU = 1500  # the interfaces' default MTU (IP bytes)
ONSET_WINDOWS = ((0.0, 0.05), (0.05, 1.0), (1.0, 3.0))  # s after a flood's onset
FLOOD_ON_S = 3.0  # each flood of an onset train lasts this ...
FLOOD_OFF_S = 1.0  # ... then pauses this long (the flood's estimator decays to nothing)
ONSET_BIN_S = 0.05  # the bins the windows are made of


def topology(
    share_fraction: float,
    size: int,
    duration: float,
    mtu: int = MTU,
    floods: tuple[tuple[float, float | None], ...] = ((0.0, None),),
) -> str:
    """The node and its streams; `floods`: (start, stop) of each of the flood's streams (stop None:
    to the end), named flood, flood1, ..."""
    if not 0 < size <= mtu:
        raise ValueError(f"packet size {size} does not fit the MTU {mtu}")
    share = share_fraction * CAPACITY
    hop = "path: [{node: s1, ingress: %s, egress: p3}]"
    streams = [f"{{name: small, {hop % 'p1'}, demand: {OVERLOAD * share:.0f}, packet_size: {size}}}"]
    for k, (a, b) in enumerate(floods):
        stop = "" if b is None else f", stop: {b}"
        streams.append(
            f"{{name: flood{k or ''}, {hop % 'p2'}, demand: {FLOOD:.0f}, packet_size: {size}, start: {a}{stop}}}"
        )
    lines = "".join(f"\n  - {x}" for x in streams)
    return f"""
name: small-share
duration: {duration}
nodes:
  s1:
    interfaces:
      p1: {{capacity: {CAPACITY:.0f}, port: 1, mtu: {mtu}}}
      p2: {{capacity: {FLOOD:.0f}, port: 2, mtu: {mtu}}}
      p3: {{capacity: {CAPACITY:.0f}, port: 3, mtu: {mtu}}}
    fairness:
      p3: {{p1: {share:.0f}, p2: {CAPACITY - share:.0f}}}
    routes:
      - {{prefix: 10.0.3.0/24, interface: p3}}
streams:{lines}
"""


def frame_bits(size: int) -> int:
    """What a packet of `size` IP bytes costs the wire, in bits (Ethernet header and FCS, preamble
    and gap: spec §4)."""
    return wire_len(size + 18) * 8


def share_packets_per_s(share_fraction: float, size: int) -> float:
    """The packets per second the share carries (frames of `size` IP bytes at line rate)."""
    return share_fraction * CAPACITY / frame_bits(size)


def duration_for(share_fraction: float, size: int, packets: int = MIN_PACKETS, mtu: int = MTU) -> float:
    """Long enough for `packets` of the small pair in the measured second half, at least 4 s, and
    the half starting once its estimator has settled (SETTLE time constants)."""
    arrivals = OVERLOAD * share_packets_per_s(share_fraction, size)
    return max(4.0, 2 * packets / arrivals, 2 * SETTLE * small_tau_f_s(share_fraction, size, mtu))


def small_tau_f_s(share_fraction: float, size: int, mtu: int = MTU) -> float:
    """The small pair's estimator time constant as ffs-agent sizes it for the node (spec §4)."""
    node = loads(topology(share_fraction, size, 1.0, mtu)).node("s1")
    small = next(p.pid for p in pairs_of(node) if p.ingress == "p1")
    return LpfConfig().for_node(node).tc(small) * 1e-9


@dataclass(frozen=True)
class Cell:
    share_fraction: float
    size: int
    mtu: int
    arrivals: str  # "constant" or "poisson"
    period_s: float
    duration_s: float
    exact_bps: float
    measured_bps: float
    flood_bps: float
    flood_exact_bps: float
    tau_f_ns: float  # the time constant of the small pair's F estimator, as its agent wrote it

    @property
    def error(self) -> float:
        return (self.measured_bps - self.exact_bps) / self.exact_bps

    @property
    def frames_per_tau_f(self) -> float:
        """The frames the small pair's share carries per time constant of its estimator."""
        return share_packets_per_s(self.share_fraction, self.size) * self.tau_f_ns * 1e-9

    @property
    def sampling_error(self) -> float:
        """The relative standard deviation of the small pair's admitted count in the measured half:
        binomial, its arrivals each admitted with γ = 1/OVERLOAD."""
        arrivals = OVERLOAD * share_packets_per_s(self.share_fraction, self.size) * self.duration_s / 2
        return math.sqrt((OVERLOAD - 1) / arrivals)

    @property
    def bound(self) -> tuple[float, float]:
        """The error docs/spec.md §10.1 allows the small pair: its estimator reads it high by at most
        1/n (n frames per time constant, each packet reads F with itself in it), so it loses at most
        that fraction of its share; the τ loop's bias either way; SIGMAS of its sampling error."""
        spread = LOOP_BIAS + SIGMAS * self.sampling_error
        return -(1 / self.frames_per_tau_f + spread), spread

    @property
    def flood_bound(self) -> float:
        """The flood takes what the small pair leaves of the egress: its error is the small pair's
        largest, weighed by the shares' ratio, plus the τ loop's bias and SIGMAS of its own
        sampling error (binomial, like the small pair's)."""
        share = self.share_fraction
        gamma = (1 - share) * CAPACITY / FLOOD
        arrivals = FLOOD / frame_bits(self.size) * self.duration_s / 2
        sampling = math.sqrt((1 - gamma) / (gamma * arrivals))
        return LOOP_BIAS + SIGMAS * sampling + max(map(abs, self.bound)) * share / (1 - share)


def measure(
    share_fraction: float,
    size: int,
    arrivals: str = "constant",
    period_s: float = 0.005,
    duration_s: float | None = None,
    packets: int = MIN_PACKETS,
    mtu: int = MTU,
    **kw: object,
) -> Cell:
    """One cell; the run lasts `duration_s`, or long enough for `packets` of the small pair's
    arrivals in the measured half (the sampling error of its admitted count is about
    sqrt(0.6 / (0.4 · packets)): 1 % at 15,000, 0.5 % at 60,000)."""
    d = duration_s or duration_for(share_fraction, size, packets, mtu)
    res = run_scenario(
        loads(topology(share_fraction, size, d, mtu)),
        "ffs",
        duration_s=d,
        period_s=period_s,
        arrivals=arrivals,
        bin_s=0.05,
        **kw,  # type: ignore[arg-type]
    )
    got = {s["stream"]: s for s in res.streams}
    return Cell(
        share_fraction,
        size,
        mtu,
        arrivals,
        period_s,
        d,
        got["small"]["exact"],
        got["small"]["measured"],
        got["flood"]["measured"],
        got["flood"]["exact"],
        got["small"]["tau_f_ns"],
    )


@dataclass(frozen=True)
class Onset:
    """What the small pair kept of its share in each window after the onsets of a flood train
    (its delivered rate over the window in every onset, over its share)."""

    share_fraction: float
    size: int
    mtu: int
    arrivals: str
    period_s: float
    onsets: tuple[float, ...]  # s: when each flood started
    windows: tuple[tuple[float, float], ...]  # s after each onset
    kept: tuple[float, ...]  # per window
    tau_f_ns: float  # the small pair's estimator time constant, as its agent wrote it
    flood_tau_f_ns: float  # the flood's

    @property
    def small_arrivals(self) -> tuple[float, ...]:
        """The small pair's arrivals expected in each window, over every onset."""
        pps = OVERLOAD * share_packets_per_s(self.share_fraction, self.size)
        return tuple(pps * (b - a) * len(self.onsets) for a, b in self.windows)

    @property
    def bounds(self) -> tuple[float, ...]:
        """The least share each window may keep: the flood's estimator reads r(t) = 1 - e^(-t/τ_F)
        of its arrivals t after the onset, and while the queue stands what enters it of the two
        pairs (both above their shares) is in proportion to what γ admits of each, τ·M and
        τ·M_f/r(t), so the small pair keeps at least r(t), averaged over the window; less the 1/32
        τ aims below the target while the queue drains (spec §9), the small pair's 1/n, the loop's
        bias and SIGMAS of its admitted count's sampling error (spec §10.1)."""
        tau = self.flood_tau_f_ns * 1e-9
        n = share_packets_per_s(self.share_fraction, self.size) * self.tau_f_ns * 1e-9
        out = []
        for (a, b), arrivals in zip(self.windows, self.small_arrivals, strict=True):
            rise = 1 - tau / (b - a) * (math.exp(-a / tau) - math.exp(-b / tau))
            out.append(rise - DRAIN_AIM - 1 / n - LOOP_BIAS - SIGMAS * math.sqrt((OVERLOAD - 1) / arrivals))
        return tuple(out)


def onset_times(settle_s: float, count: int) -> tuple[float, ...]:
    """`count` floods, the first after `settle_s` (on a bin), one every FLOOD_ON_S + FLOOD_OFF_S."""
    first = math.ceil(settle_s / ONSET_BIN_S) * ONSET_BIN_S
    return tuple(round(first + k * (FLOOD_ON_S + FLOOD_OFF_S), 9) for k in range(count))


def measure_onset(
    share_fraction: float,
    size: int,
    mtu: int = MTU,
    arrivals: str = "poisson",
    period_s: float = 0.1,
    count: int = 4,
    windows: tuple[tuple[float, float], ...] = ONSET_WINDOWS,
    **kw: object,
) -> Onset:
    """The small pair sends from 0; the flood starts `count` times (FLOOD_ON_S on, FLOOD_OFF_S
    off), the first once the small pair's estimator has settled (5 of its time constants, as
    ffs-agent sizes it for this MTU)."""
    onsets = onset_times(SETTLE * small_tau_f_s(share_fraction, size, mtu), count)
    d = onsets[-1] + FLOOD_ON_S
    topo = loads(topology(share_fraction, size, d, mtu, tuple((t, t + FLOOD_ON_S) for t in onsets)))
    res = run_scenario(
        topo,
        "ffs",
        duration_s=d,
        period_s=period_s,
        arrivals=arrivals,
        bin_s=ONSET_BIN_S,
        **kw,  # type: ignore[arg-type]
    )
    rates = res.rates["small"]
    kept = []
    for a, b in windows:
        bins = [rates[round((t + x) / ONSET_BIN_S)] for t in onsets for x in _steps(a, b)]
        kept.append(sum(bins) / len(bins) / (share_fraction * CAPACITY))
    got = {s["stream"]: s for s in res.streams}
    return Onset(
        share_fraction,
        size,
        mtu,
        arrivals,
        period_s,
        onsets,
        windows,
        tuple(kept),
        got["small"]["tau_f_ns"],
        got["flood"]["tau_f_ns"],
    )


def _steps(a: float, b: float) -> list[float]:
    """The starts of the bins that make up [a, b) (on ONSET_BIN_S)."""
    n0, n1 = round(a / ONSET_BIN_S), round(b / ONSET_BIN_S)
    return [k * ONSET_BIN_S for k in range(n0, n1)]
