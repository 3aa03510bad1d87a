# SPDX-License-Identifier: Apache-2.0
"""Baselines the evaluation sets beside FFS (the FFS paper's Table III compares with them):

- FIFO: FFS off; the software switch's traffic manager (`ffs.switch.tm`) tail-drops at each egress.
- CSFQ (Stoica, Shenker, Zhang; papers/001): per-flow rate labels at the edge (Eq. 3), and at every
  egress the fair share alpha estimated as in Figure 3 (with the nesting corrected so that it is well defined), drop
  probability max(0, 1 - alpha/label) while the link is congested, relabel min(label, alpha),
  alpha cut 1 % on buffer overflow. It decides where FFS would, before the traffic manager
  (`Pipeline.admission`), in trace and live mode, not in P4.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RateEstimator:
    """CSFQ Eq. 3 / Eq. 5: r <- (1 - e^(-T/K)) l/T + e^(-T/K) r."""

    k_s: float
    rate: float = 0.0
    last: float | None = None

    def update(self, t: float, size_bits: float) -> float:
        if self.last is None:
            self.last = t
            return self.rate
        dt = t - self.last
        self.last = t
        if dt <= 0:
            return self.rate
        w = math.exp(-dt / self.k_s)
        self.rate = (1 - w) * size_bits / dt + w * self.rate
        return self.rate


@dataclass
class CsfqCore:
    """One output link: alpha (the fair share), A and F estimates, the congestion window."""

    capacity_bps: float
    k_alpha_s: float
    k_c_s: float
    alpha: float = 0.0
    congested: bool = False
    start: float = 0.0
    tmp_alpha: float = 0.0
    last_cut: float = -math.inf
    arrival: RateEstimator = field(init=False)
    forwarded: RateEstimator = field(init=False)

    def __post_init__(self) -> None:
        self.arrival = RateEstimator(self.k_alpha_s)
        self.forwarded = RateEstimator(self.k_alpha_s)
        self.alpha = self.capacity_bps  # start permissive

    def decide(self, t: float, size_bits: float, label: float, rng: random.Random) -> float | None:
        """Forward (returning the new label) or drop (None) one packet."""
        # Drop only while the link is congested: the literal Figure 2 also drops while uncongested,
        # where alpha is the largest label of the last window -- after an idle period (a few probe
        # packets) that starves every new flow, including its SYNs (an edge case the CSFQ paper leaves open).
        prob = max(0.0, 1.0 - self.alpha / label) if label > 0 and self.congested else 0.0
        dropped = prob > rng.random()
        self._estimate(t, size_bits, label, dropped)
        if dropped:
            return None
        return min(label, self.alpha) if prob > 0 else label

    def overflow(self, t: float) -> None:
        """Buffer heuristic: an overflow cuts alpha by 1 % -- once per overflow episode (here: at
        most every K_c/20), not once per dropped packet, which at Gb/s would zero alpha."""
        if t - self.last_cut >= self.k_c_s / 20:
            self.alpha *= 0.99
            self.last_cut = t

    def _estimate(self, t: float, size_bits: float, label: float, dropped: bool) -> None:
        a = self.arrival.update(t, size_bits)
        # a dropped packet adds nothing to the forwarded rate, but time passes for it: F decays, so
        # alpha = alpha * C / F can recover after the link dropped everything
        f = self.forwarded.update(t, 0.0 if dropped else size_bits)
        if a >= self.capacity_bps:
            if not self.congested:
                self.congested, self.start = True, t
            elif t > self.start + self.k_c_s and f > 0:
                self.alpha = max(self.alpha * self.capacity_bps / f, 0.75 * self.alpha)  # at most -25 %
                self.start = t
        else:
            if self.congested:
                self.congested, self.start, self.tmp_alpha = False, t, 0.0
            elif t < self.start + self.k_c_s:
                self.tmp_alpha = max(self.tmp_alpha, label)
            else:
                self.alpha, self.start, self.tmp_alpha = max(self.tmp_alpha, 1.0), t, 0.0


class Csfq:
    """CSFQ over a topology: edge labels per stream, one core per (node, egress port)."""

    def __init__(
        self,
        k_s: float = 0.02,
        k_alpha_s: float = 0.02,
        k_c_s: float = 0.02,
        seed: int = 1,
        lies: dict[str, float] | None = None,
    ) -> None:
        self.k_s, self.k_alpha_s, self.k_c_s = k_s, k_alpha_s, k_c_s
        self.edges: dict[str, RateEstimator] = {}
        self.cores: dict[tuple[str, int], CsfqCore] = {}
        self.rng = random.Random(seed)
        # stream -> factor its edge multiplies the label by: the label manipulation FFS §VII-A says
        # fools (H)CSFQ (a core trusts every label; claiming a lower rate lowers the drop probability)
        self.lies = lies or {}

    def label(self, stream: str, t: float, size_bits: float) -> float:
        est = self.edges.setdefault(stream, RateEstimator(self.k_s))
        # 0 until the flow's second packet: never dropped for it
        return est.update(t, size_bits) * self.lies.get(stream, 1.0)

    def core(self, node: str, port: int, capacity_bps: float) -> CsfqCore:
        key = (node, port)
        if key not in self.cores:
            self.cores[key] = CsfqCore(capacity_bps, self.k_alpha_s, self.k_c_s)
        return self.cores[key]

    # -- in the software switch: `Pipeline.admission` of every node, before its traffic manager ----
    # A trace names each packet's stream and carries its label from hop to hop (`begin`, `label_now`);
    # live, every frame's flow is its IPv4 address pair and each node labels it at once (`live`).
    def attach(self, pipelines: dict[str, Any], start_s: float = 0.0, live: bool = False) -> None:
        self.start_s, self.live = start_s, live
        self.current_label, self.bits = 0.0, 0.0
        self._last: tuple[CsfqCore, float] | None = None
        for node, pipe in pipelines.items():
            pipe.admission = functools.partial(self._admit, node, pipe)

    def begin(self, stream: str, t: float, size_bits: float) -> None:
        """A stream's packet enters its first node at `t`: its edge label."""
        self.bits = size_bits
        self.current_label = self.label(stream, t, size_bits)

    def carry(self, label: float, size_bits: float) -> None:
        """A packet enters a later node with the label the last one gave it."""
        self.current_label, self.bits = label, size_bits

    def _admit(self, node: str, pipe: Any, port: int, t_ns: int, frame: bytearray) -> bool:
        speed = pipe.tm.speed[port]
        if speed <= 0:  # an unpaced port is no bottleneck: nothing to share
            return True
        t = t_ns / 1e9 - self.start_s
        if self.live:
            self.bits = (len(frame) + 20) * 8
            self.current_label = self.label(bytes(frame[26:34]).hex(), t, self.bits)
        core = self.core(node, port, speed)
        self._last = (core, t)
        label = core.decide(t, self.bits, self.current_label, self.rng)
        if label is None:
            return False
        self.current_label = label
        return True

    def tm_overflow(self) -> None:
        """The traffic manager dropped the packet just admitted: the buffer heuristic."""
        if self._last is not None:
            core, t = self._last
            core.overflow(t)
