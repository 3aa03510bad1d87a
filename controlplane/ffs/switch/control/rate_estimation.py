# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/control/rate_estimation.p4`: the weighted-bytes estimator F and the R
counters; its C twin in `_fastpath.c`: rate_estimation_weigh, rate_estimation_apply."""

from __future__ import annotations

from ffs.core import p4names
from ffs.switch.header import Meta
from ffs.switch.packet import (
    Parsed,
)
from ffs.switch.tna import (
    U16,
    U32,
    Counter,
    Lpf,
    MatchTable,
    Register,
    sat_add,
    sat_sub,
)


class RateEstimation:
    """`FfsIngress.rate_est`: the weight len/rf, the F LPF, its log applied to k and cc, and the
    R_(i,j) counter."""

    def __init__(self) -> None:
        self.len_log = MatchTable(p4names.LEN_LOG)
        self.weight = MatchTable(p4names.WEIGHT)
        self.weight_reset = MatchTable(p4names.WEIGHT_RESET)
        self.f_log = MatchTable(p4names.F_LOG)
        self.f_lpf = Lpf(p4names.F_LPF)
        self.f_est = Register(p4names.F_EST)
        self.pair_bytes = Counter(p4names.PAIR_BYTES)
        self.offered = Counter(p4names.OFFERED)

    @staticmethod
    def set_lw(md: Meta, llen: int, wadd: int) -> None:  # stage 0: lw = log2(len · 2^8 / rf), wlen
        md.lw = sat_sub(llen, md.rf_hdr)
        md.llen = llen
        md.wlen = sat_add(md.l3_len, wadd, U16)

    @staticmethod
    def set_lw_runt(md: Meta, llen: int, wlen: int) -> None:  # stage 0: the same, for a claim below 64 bytes
        md.lw = sat_sub(llen, md.rf_hdr)
        md.llen = llen
        md.runt = 1
        md.wlen = wlen

    @staticmethod
    def lw_zero(md: Meta) -> None:
        md.lw = 0
        md.llen = 0
        md.wlen = 0

    @staticmethod
    def set_weight(md: Meta, w: int) -> None:  # stage 1
        md.pkt_weight = w

    @staticmethod
    def weight_max(md: Meta) -> None:
        md.pkt_weight = U32

    def estimate(self, md: Meta, t_ns: int, pipe: int) -> None:  # stage 2
        md.f_rate = self.f_lpf.execute(md.pkt_weight, md.pid, t_ns, pipe)

    def count_pair(self, md: Meta, frame_len: int, pipe: int) -> None:  # stage 2: R_(i,j)
        self.pair_bytes.count(md.pid, frame_len, pipe)

    def count_offered(self, md: Meta, frame_len: int, pipe: int) -> None:  # stage 2: R*_j
        self.offered.count(md.egress_port, frame_len, pipe)

    @staticmethod
    def set_lf(md: Meta, lf: int, nlf: int) -> None:  # stage 3: rf_norm = k + lf, c_cong = cc - lf
        md.rf_norm = (lf + md.rf_over_m) & U16
        md.c_cong = (nlf + md.tau_over_k) & U16

    @staticmethod
    def lf_zero(md: Meta) -> None:
        md.rf_norm, md.c_cong = md.rf_over_m, md.tau_over_k

    def store_f(self, md: Meta, pipe: int) -> None:  # stage 3: f_est[pid] for the agent
        self.f_est.write(md.pid, md.f_rate, pipe)

    def weigh(self, p: Parsed, md: Meta) -> None:
        """len_log and weight (weight_reset on a resetting port): every packet, stages 0-1."""
        action, params = self.len_log.lookup(int(p.ip_version == 6), int(p.vlan), md.l3_len)
        if action == "set_lw":
            self.set_lw(md, params["llen"], params["wadd"])
        elif action == "set_lw_runt":
            self.set_lw_runt(md, params["llen"], params["wlen"])
        else:
            self.lw_zero(md)
        if md.trust:
            action, params = self.weight.lookup(md.lw)
        else:
            action, params = self.weight_reset.lookup(md.llen)
        if action == "set_weight":
            self.set_weight(md, params["w"])
        else:
            self.weight_max(md)

    def apply(self, md: Meta, frame_len: int, t_ns: int, pipe: int) -> None:
        """The managed part, stages 2-3 (needs Normalize's cc), in the ingress port's `pipe`."""
        self.estimate(md, t_ns, pipe)
        self.count_pair(md, frame_len, pipe)
        self.count_offered(md, frame_len, pipe)
        action, params = self.f_log.lookup(md.f_rate)
        if action == "set_lf":
            self.set_lf(md, params["lf"], params["nlf"])
        else:
            self.lf_zero(md)
        self.store_f(md, pipe)
