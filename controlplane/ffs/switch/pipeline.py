"""The FFS pipeline of p4src/, as an executable specification (docs/spec.md §7).

One class per P4 control, holding the same tables, counters, registers and LPFs under the same
names (`ffs.p4names`), and one method per P4 action where the action computes something. The order
of operations is the stage order of spec §7.2; integer widths and saturation are the P4 ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffs import constants as C
from ffs import p4names as N
from ffs.switch.packet import (
    ECHO_OFF,  # noqa: F401 — rri_echo is never touched; named for readers
    RF_OFF,
    RRI_OFF,
    ParseError,
    Parsed,
    insert_shim,
    parse,
    shim_get16,
    shim_set16,
    strip_shim,
)
from ffs.switch.tna import Counter, Lpf, MatchTable, Random16, Register, sat_sub

U16 = 0xFFFF


@dataclass(slots=True)
class Meta:
    """Ingress metadata (the P4 `ffs_metadata_t`); widths in spec §7."""

    rf: int = C.CODE_ONE
    rri: int = C.CODE_MAX
    trust: int = 0
    insert: int = 0
    ifindex: int = 0
    egress_port: int = 0
    lw: int = 0
    rnd: int = 0
    pid: int = 0
    lm: int = 0
    ltau: int = C.CODE_MAX
    ntau: int = 1
    congested: int = 0
    lcr: int = C.CODE_MAX
    w: int = 0
    f: int = 0
    k: int = 0
    lf: int = 0
    k2: int = 0
    ik: int = 0
    rf_norm: int = 0
    d_w: int = 0
    c_inv: int = 0
    margin: int = 0
    d16: int = 0
    rf_out: int = 0
    c_cong: int = 0
    c_unc: int = 0
    m_cong: int = 0
    m_unc: int = 0


@dataclass(slots=True)
class Result:
    """What happened to one packet: sent out of `egress_port`, or dropped with `drop_reason`."""

    egress_port: int | None
    frame: bytes | None
    drop_reason: str | None = None
    pid: int | None = None


class Forwarding:
    """`FfsIngress.forwarding`: IPv4/IPv6 LPM to an egress port, with a configurable miss action."""

    def __init__(self) -> None:
        self.ipv4_routes = MatchTable(N.IPV4_ROUTES)
        self.ipv6_routes = MatchTable(N.IPV6_ROUTES)

    def apply(self, p: Parsed, md: Meta) -> bool:
        if p.ip_version == 4:
            action, params = self.ipv4_routes.lookup(p.dst)
        elif p.ip_version == 6:
            action, params = self.ipv6_routes.lookup(p.dst)
        else:
            return False
        if action == "route":
            md.egress_port = params["port"]
            return True
        return False


class PairMap:
    """`FfsIngress.pair_map`: (ingress, egress) -> pair index and log M; egress -> τ and friends."""

    def __init__(self) -> None:
        self.pairs = MatchTable(N.PAIRS)
        self.egress_params = MatchTable(N.EGRESS_PARAMS)

    def apply(self, ingress_port: int, md: Meta) -> bool:
        action, params = self.pairs.lookup(ingress_port, md.egress_port)
        eg_action, ep = self.egress_params.lookup(md.egress_port)
        if eg_action == "set_egress":
            md.ltau, md.ntau, md.congested, md.lcr = ep["ltau"], ep["ntau"], ep["congested"], ep["lcr"]
        else:  # egress_unmanaged
            md.ltau, md.ntau, md.congested, md.lcr = C.CODE_MAX, C.WIDE_OFFSET - C.CODE_MAX, 0, C.CODE_MAX
        if action == "set_pair":
            md.pid, md.lm = params["pid"], params["lm"]
            return True
        return False


class RateEstimation:
    """`FfsIngress.rate_est`: the weight len/rf, the F LPF, its log, and the R_(i,j) counter."""

    def __init__(self) -> None:
        self.len_log = MatchTable(N.LEN_LOG)
        self.weight = MatchTable(N.WEIGHT)
        self.f_log = MatchTable(N.F_LOG)
        self.f_lpf = Lpf(N.F_LPF)
        self.f_est = Register(N.F_EST)
        self.pair_bytes = Counter(N.PAIR_BYTES)

    def stage0_lw(self, l3_len: int, md: Meta) -> None:
        action, params = self.len_log.lookup(l3_len)
        md.lw = sat_sub(params["llen"], md.rf) if action == "set_lw" else 0  # lw_zero

    def stage1_weight(self, md: Meta) -> None:
        action, params = self.weight.lookup(md.lw)
        md.w = params["w"] if action == "set_weight" else C.WEIGHT_MAX  # weight_max

    def stage2_estimate(self, md: Meta, frame_len: int, t_ns: int) -> None:
        md.f = self.f_lpf.execute(md.w, md.pid, t_ns)
        self.pair_bytes.count(md.pid, frame_len)

    def stage3_log(self, md: Meta) -> None:
        action, params = self.f_log.lookup(md.f)
        md.lf = params["lf"] if action == "set_lf" else 0  # lf_zero
        self.f_est.write(md.pid, md.f)


class Normalize:
    """`FfsIngress.normalize`: rf' = rf·F/M, d = rf' - τ, γ by table and Random, drop, rewrite."""

    def __init__(self, seed: int) -> None:
        self.gamma = MatchTable(N.GAMMA)
        self.rng = Random16(seed)
        self.pair_drops = Counter(N.PAIR_DROPS)

    @staticmethod
    def stage2(md: Meta) -> None:
        md.k = sat_sub(md.rf, md.lm)

    @staticmethod
    def stage3(md: Meta) -> None:
        md.k2 = md.k + md.ntau
        md.ik = sat_sub(0x10000, md.k)

    @staticmethod
    def stage4(md: Meta) -> None:
        md.rf_norm = md.k + md.lf
        md.d_w = md.k2 + md.lf
        md.c_inv = sat_sub(md.ik, md.lf)

    def stage5(self, md: Meta) -> None:
        action, params = self.gamma.lookup(md.d_w)
        if action == "gamma_one":
            md.margin, md.d16 = 1, 0
        elif action == "gamma_frac":
            md.margin, md.d16 = sat_sub(params["thr"], md.rnd), params["d16"]
        else:  # gamma_zero
            md.margin, md.d16 = 0, 0
        md.rf_out = min(md.rf_norm, md.ltau)  # label_out


class RiUpdate:
    """`FfsIngress.ri_update`: Algorithm 4 with the pre-γ normalized label (const entries)."""

    def __init__(self) -> None:
        from ffs.tables import ri_entries  # the one generator of the const entries

        self.ri = MatchTable(N.RI)
        for e in ri_entries():
            ident, stored = self.ri.normalize(e)
            self.ri.entries[ident] = stored

    @staticmethod
    def stage5(md: Meta) -> None:  # candidates: Algorithm 4 lines 5 and 7 with the pre-γ label
        md.c_cong = sat_sub(C.CONG_CAND_CONST, md.d_w)
        md.c_unc = max(md.c_inv, md.lcr)

    @staticmethod
    def stage6(md: Meta) -> None:  # limits
        md.m_cong = min(md.rri, md.c_cong)
        md.m_unc = min(md.rri, md.c_unc)

    def stage7(self, frame: bytearray, shim: int, ri_req: int, md: Meta) -> None:
        action, _ = self.ri.lookup(ri_req, (md.rri >> 15) & 1, md.congested)
        if action == "ri_upstream":
            shim_set16(frame, shim, RRI_OFF, sat_sub(shim_get16(frame, shim, RRI_OFF), md.d16))
        elif action == "ri_congested":
            shim_set16(frame, shim, RRI_OFF, md.m_cong & U16)
        elif action == "ri_uncongested":
            shim_set16(frame, shim, RRI_OFF, md.m_unc & U16)


class EgressAccounting:
    """`FfsEgress.egress_acct`: A_j (every packet reaching egress) and the strip port mode."""

    def __init__(self) -> None:
        self.accepted = Counter(N.ACCEPTED)
        self.egress_ports = MatchTable(N.EGRESS_PORTS)

    def apply(self, frame: bytearray, port: int) -> None:
        self.accepted.count(port, len(frame))
        action, _ = self.egress_ports.lookup(port)
        if action == "strip_shim":
            try:
                p = parse(frame)
            except ParseError:
                return
            if p.shim:
                strip_shim(frame, p)


class Pipeline:
    """Ingress parser, ingress controls, (no queue), egress controls; one packet at a time."""

    def __init__(self, seed: int = 1) -> None:
        self.port_metadata: dict[int, tuple[int, int, int]] = {}  # port -> (ifindex, trust, insert)
        self.forwarding = Forwarding()
        self.pair_map = PairMap()
        self.rate_est = RateEstimation()
        self.normalize = Normalize(seed)
        self.ri_update = RiUpdate()
        self.egress_acct = EgressAccounting()
        self.events = Counter(N.EVENTS)
        self.tables: dict[str, MatchTable] = {
            t.spec.name: t
            for t in (
                self.forwarding.ipv4_routes,
                self.forwarding.ipv6_routes,
                self.pair_map.pairs,
                self.pair_map.egress_params,
                self.rate_est.len_log,
                self.rate_est.weight,
                self.rate_est.f_log,
                self.normalize.gamma,
                self.ri_update.ri,
                self.egress_acct.egress_ports,
            )
        }
        self.counters = {
            c.spec.name: c
            for c in (self.rate_est.pair_bytes, self.normalize.pair_drops, self.events, self.egress_acct.accepted)
        }
        self.registers = {self.rate_est.f_est.spec.name: self.rate_est.f_est}
        self.lpfs = {self.rate_est.f_lpf.spec.name: self.rate_est.f_lpf}

    def process(self, frame: bytes | bytearray, ingress_port: int, t_ns: int) -> Result:
        buf = bytearray(frame)
        events = self.events
        # -- parser ---------------------------------------------------------------------------
        try:
            p = parse(buf)
        except ParseError:
            events.count(C.EVENT_PARSE_ERROR, len(buf))
            return Result(None, None, "parse_error")
        md = Meta()
        md.ifindex, md.trust, md.insert = self.port_metadata.get(ingress_port, (0, 0, 0))
        if p.ffs_state == C.FFS_STATE_VALID:
            md.rri = shim_get16(buf, p.shim, RRI_OFF)
            if md.trust:
                md.rf = shim_get16(buf, p.shim, RF_OFF)
        frame_len = len(buf)
        # -- stage 0 --------------------------------------------------------------------------
        if not self.forwarding.apply(p, md):
            events.count(C.EVENT_ROUTE_MISS, frame_len)
            return Result(None, None, "route_miss")
        rate_est, norm = self.rate_est, self.normalize
        rate_est.stage0_lw(p.l3_len, md)
        # -- stage 1 --------------------------------------------------------------------------
        managed = self.pair_map.apply(ingress_port, md)
        rate_est.stage1_weight(md)
        if not managed:
            events.count(C.EVENT_NO_PAIR, frame_len)
            return self._egress(buf, md.egress_port, None)
        md.rnd = norm.rng.get()  # Normalize.draw: only managed packets draw
        # -- stages 2-5 -----------------------------------------------------------------------
        rate_est.stage2_estimate(md, frame_len, t_ns)
        norm.stage2(md)
        rate_est.stage3_log(md)
        norm.stage3(md)
        norm.stage4(md)
        norm.stage5(md)
        ri = self.ri_update
        ri.stage5(md)
        # -- stage 6: the drop decision, the label rewrite ------------------------------------
        if md.margin == 0:
            norm.pair_drops.count(md.pid, frame_len)
            events.count(C.EVENT_FFS_DROP, frame_len)
            return Result(None, None, "ffs_drop", md.pid)
        ri.stage6(md)
        ri_req = 0
        if p.ffs_state == C.FFS_STATE_VALID:
            shim_set16(buf, p.shim, RF_OFF, md.rf_out & U16)
            if not md.trust:
                buf[p.shim] |= C.FLAG_DEFAULTED
            ri_req = 1 if (md.trust and buf[p.shim] & C.FLAG_RI) else 0
        elif p.ffs_state == C.FFS_STATE_NONE and md.insert:
            insert_shim(buf, p, md.rf_out & U16)
        # -- stage 7 --------------------------------------------------------------------------
        if ri_req:
            ri.stage7(buf, p.shim, ri_req, md)
        if p.ffs_state == C.FFS_STATE_OPAQUE:
            events.count(C.EVENT_OPAQUE_SHIM, frame_len)
        return self._egress(buf, md.egress_port, md.pid)

    def _egress(self, buf: bytearray, port: int, pid: int | None) -> Result:
        self.egress_acct.apply(buf, port)
        return Result(port, bytes(buf), None, pid)
