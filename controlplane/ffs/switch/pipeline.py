"""The FFS pipeline of p4src/, as an executable specification (docs/spec.md §7).

One class per P4 control, holding the same tables, counters, registers and LPFs under the same
names (`ffs.p4names`), and one function per P4 action, named like the action, doing what the
action does at the P4 widths (saturating `|-|`, 32-bit wrap, `[15:0]` slices). Each control's
`apply` runs its actions and tables in the order of the P4 `apply` block; `Pipeline.process`
is `FfsIngressParser` + `FfsIngress.apply` + (no queue) + `FfsEgress.apply`. The stage of spec §7.2
where each action runs is noted beside it.

The compiled fast path (`ffs.switch.fast`, `_fastpath.c`) is a transcription of this file; a
differential test holds the two to identical outputs, counters and drops.
"""

from __future__ import annotations

from dataclasses import dataclass

from ffs import constants as C
from ffs import p4names as N
from ffs.switch.packet import (
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
U32 = 0xFFFFFFFF

# why a packet did not leave (Result.drop_reason)
DROP_PARSE_ERROR = "parse_error"
DROP_ROUTE_MISS = "route_miss"
DROP_FFS = "ffs_drop"


@dataclass(slots=True)
class Meta:
    """Ingress metadata (the P4 `ffs_metadata_t`); widths in spec §7, values held in Python ints
    and kept inside their width by the actions."""

    # port metadata ($PORT_METADATA)
    ifindex: int = 0
    trust: int = 0
    insert: int = 0
    # set by the parser's terminal states
    ffs_state: int = C.FFS_STATE_NONE
    ri_req: int = 0
    rri_ge_one: int = 0
    l3_len: int = 0
    rf: int = C.CODE_ONE
    rri: int = C.CODE_MAX
    # forwarding / pair map
    routed: int = 0
    managed: int = 0
    egress_port: int = 0
    pid: int = 0
    lm: int = 0
    ltau: int = C.CODE_MAX
    ntau: int = C.WIDE_OFFSET - C.CODE_MAX
    congested: int = 0
    lcr: int = C.CODE_MAX
    # stage 0-1
    lw: int = 0
    w: int = 0
    rnd: int = 0
    # stage 2-7
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
    """What happened to one packet: sent out of `egress_port` as `frame`, or dropped with
    `drop_reason` (one of DROP_*). `pid` is the pair index of a managed packet."""

    egress_port: int | None
    frame: bytes | None
    drop_reason: str | None = None
    pid: int | None = None


def ingress_parser_metadata(buf: bytearray, p: Parsed, md: Meta) -> None:
    """The terminal states of `FfsIngressParser` (spec §7.1): ffs_trusted, ffs_reset, ffs_opaque,
    no_shim / non_ip. Each sets the label entering the pipeline exactly once."""
    md.l3_len = p.l3_len
    md.ffs_state = p.ffs_state
    if p.ffs_state == C.FFS_STATE_VALID:
        md.rri = shim_get16(buf, p.shim, RRI_OFF)
        if md.trust:  # ffs_trusted
            md.rf = shim_get16(buf, p.shim, RF_OFF)
            md.ri_req = (buf[p.shim] & C.FLAG_RI) >> 3
            md.rri_ge_one = md.rri >> 15
        # ffs_reset: rf stays CODE_ONE, ri_req 0
    # ffs_opaque / no_shim / non_ip: rf = CODE_ONE, rri = CODE_MAX (the Meta defaults)


class Forwarding:
    """`FfsIngress.forwarding`: IPv4/IPv6 LPM to an egress port, with a configurable miss action."""

    def __init__(self) -> None:
        self.ipv4_routes = MatchTable(N.IPV4_ROUTES)
        self.ipv6_routes = MatchTable(N.IPV6_ROUTES)

    @staticmethod
    def route(md: Meta, port: int) -> None:  # stage 0
        md.egress_port = port
        md.routed = 1

    @staticmethod
    def drop(md: Meta) -> None:  # the miss action: FfsIngress drops and counts
        md.routed = 0

    def apply(self, p: Parsed, md: Meta) -> None:
        if p.ip_version == 4:
            action, params = self.ipv4_routes.lookup(p.dst)
        elif p.ip_version == 6:
            action, params = self.ipv6_routes.lookup(p.dst)
        else:
            return
        if action == "route":
            self.route(md, params["port"])
        else:
            self.drop(md)


class PairMap:
    """`FfsIngress.pair_map`: (ingress, egress) -> pair index and log M; egress -> τ and friends."""

    def __init__(self) -> None:
        self.pairs = MatchTable(N.PAIRS)
        self.egress_params = MatchTable(N.EGRESS_PARAMS)

    @staticmethod
    def set_pair(md: Meta, pid: int, lm: int) -> None:  # stage 1
        md.pid, md.lm, md.managed = pid, lm, 1

    @staticmethod
    def no_pair(md: Meta) -> None:
        md.managed = 0

    @staticmethod
    def set_egress(md: Meta, ltau: int, ntau: int, congested: int, lcr: int) -> None:  # stage 1
        md.ltau, md.ntau, md.congested, md.lcr = ltau, ntau, congested, lcr

    @staticmethod
    def egress_unmanaged(md: Meta) -> None:
        md.ltau, md.ntau, md.congested, md.lcr = C.CODE_MAX, C.WIDE_OFFSET - C.CODE_MAX, 0, C.CODE_MAX

    def apply(self, ingress_port: int, md: Meta) -> None:
        action, params = self.pairs.lookup(ingress_port, md.egress_port)
        if action == "set_pair":
            self.set_pair(md, params["pid"], params["lm"])
        else:
            self.no_pair(md)
        action, params = self.egress_params.lookup(md.egress_port)
        if action == "set_egress":
            self.set_egress(md, params["ltau"], params["ntau"], params["congested"], params["lcr"])
        else:
            self.egress_unmanaged(md)


class RateEstimation:
    """`FfsIngress.rate_est`: the weight len/rf, the F LPF, its log, and the R_(i,j) counter."""

    def __init__(self) -> None:
        self.len_log = MatchTable(N.LEN_LOG)
        self.weight = MatchTable(N.WEIGHT)
        self.f_log = MatchTable(N.F_LOG)
        self.f_lpf = Lpf(N.F_LPF)
        self.f_est = Register(N.F_EST)
        self.pair_bytes = Counter(N.PAIR_BYTES)

    @staticmethod
    def set_lw(md: Meta, llen: int) -> None:  # stage 0: lw = log2(len · 2^8 / rf)
        md.lw = sat_sub(llen, md.rf)

    @staticmethod
    def lw_zero(md: Meta) -> None:
        md.lw = 0

    @staticmethod
    def set_weight(md: Meta, w: int) -> None:  # stage 1
        md.w = w

    @staticmethod
    def weight_max(md: Meta) -> None:
        md.w = U32

    def estimate(self, md: Meta, t_ns: int) -> None:  # stage 2
        md.f = self.f_lpf.execute(md.w, md.pid, t_ns)

    def count_pair(self, md: Meta, frame_len: int) -> None:  # stage 2: R_(i,j)
        self.pair_bytes.count(md.pid, frame_len)

    @staticmethod
    def set_lf(md: Meta, lf: int) -> None:  # stage 3
        md.lf = lf

    @staticmethod
    def lf_zero(md: Meta) -> None:
        md.lf = 0

    def store_f(self, md: Meta) -> None:  # stage 3: f_est[pid] for the agent
        self.f_est.write(md.pid, md.f)

    def apply(self, md: Meta, frame_len: int, t_ns: int) -> None:
        action, params = self.len_log.lookup(md.l3_len)
        if action == "set_lw":
            self.set_lw(md, params["llen"])
        else:
            self.lw_zero(md)
        action, params = self.weight.lookup(md.lw)
        if action == "set_weight":
            self.set_weight(md, params["w"])
        else:
            self.weight_max(md)
        if md.managed:
            self.estimate(md, t_ns)
            self.count_pair(md, frame_len)
            action, params = self.f_log.lookup(md.f)
            if action == "set_lf":
                self.set_lf(md, params["lf"])
            else:
                self.lf_zero(md)
            self.store_f(md)


class Normalize:
    """`FfsIngress.normalize`: rf' = rf·F/M, d = rf' - τ, γ by table and Random, drop, rewrite."""

    def __init__(self, seed: int) -> None:
        self.gamma = MatchTable(N.GAMMA)
        self.rng = Random16(seed)
        self.pair_drops = Counter(N.PAIR_DROPS)

    def draw(self, md: Meta) -> None:  # stage 2 (managed packets only draw)
        md.rnd = self.rng.get()

    @staticmethod
    def norm_k(md: Meta) -> None:  # stage 2
        md.k = sat_sub(md.rf, md.lm)

    @staticmethod
    def norm_k2(md: Meta) -> None:  # stage 3
        md.k2 = (md.k + md.ntau) & U32
        md.ik = sat_sub(C.INV_CONST, md.k)

    @staticmethod
    def norm_d(md: Meta) -> None:  # stage 4
        md.rf_norm = (md.k + md.lf) & U32
        md.d_w = (md.k2 + md.lf) & U32
        md.c_inv = sat_sub(md.ik, md.lf)

    @staticmethod
    def gamma_one(md: Meta) -> None:  # stage 5: d <= 0, γ = 1, no random compare
        md.margin, md.d16 = 1, 0

    @staticmethod
    def gamma_frac(md: Meta, thr: int, d16: int) -> None:  # stage 5: accept iff rnd < thr
        md.margin, md.d16 = sat_sub(thr, md.rnd), d16

    @staticmethod
    def gamma_zero(md: Meta) -> None:  # stage 5: γ < 2^-16, always drop
        md.margin, md.d16 = 0, 0

    @staticmethod
    def label_out(md: Meta) -> None:  # stage 5: rf ← min(rf', τ)
        md.rf_out = min(md.rf_norm, md.ltau)

    def count_drop(self, md: Meta, frame_len: int) -> None:  # stage 6
        self.pair_drops.count(md.pid, frame_len)

    @staticmethod
    def rewrite_label(buf: bytearray, p: Parsed, md: Meta) -> None:  # stage 6
        shim_set16(buf, p.shim, RF_OFF, md.rf_out & U16)

    @staticmethod
    def rewrite_defaulted(buf: bytearray, p: Parsed, md: Meta) -> None:  # stage 6: reset port
        shim_set16(buf, p.shim, RF_OFF, md.rf_out & U16)
        buf[p.shim] |= C.FLAG_DEFAULTED

    @staticmethod
    def insert_shim(buf: bytearray, p: Parsed, md: Meta) -> None:  # insert_shim_v4 / _v6
        insert_shim(buf, p, md.rf_out & U16)

    def apply(self, buf: bytearray, p: Parsed, md: Meta, frame_len: int) -> bool:
        """Returns False when the packet is dropped (drop_ctl = 1)."""
        self.draw(md)
        self.norm_k(md)
        self.norm_k2(md)
        self.norm_d(md)
        action, params = self.gamma.lookup(md.d_w)
        if action == "gamma_one":
            self.gamma_one(md)
        elif action == "gamma_frac":
            self.gamma_frac(md, params["thr"], params["d16"])
        else:
            self.gamma_zero(md)
        self.label_out(md)
        if md.margin == 0:
            self.count_drop(md, frame_len)  # drop_packet: drop_ctl = 1, event FFS_DROP
            return False
        if md.ffs_state == C.FFS_STATE_VALID:
            if md.trust:
                self.rewrite_label(buf, p, md)
            else:
                self.rewrite_defaulted(buf, p, md)
        elif md.ffs_state == C.FFS_STATE_NONE and md.insert:
            self.insert_shim(buf, p, md)
        return True


class RiUpdate:
    """`FfsIngress.ri_update`: Algorithm 4 with the pre-γ normalized label (const entries)."""

    def __init__(self) -> None:
        from ffs.tables import ri_entries  # the one generator of the const entries

        self.ri = MatchTable(N.RI)
        for e in ri_entries():
            ident, stored = self.ri.normalize(e)
            self.ri.entries[ident] = stored

    @staticmethod
    def candidates(md: Meta) -> None:  # stage 5: Algorithm 4 lines 5 and 7 with the pre-γ label
        md.c_cong = sat_sub(C.CONG_CAND_CONST, md.d_w)
        md.c_unc = max(md.c_inv, md.lcr)

    @staticmethod
    def limits(md: Meta) -> None:  # stage 6
        md.m_cong = min(md.rri, md.c_cong)
        md.m_unc = min(md.rri, md.c_unc)

    @staticmethod
    def ri_upstream(buf: bytearray, p: Parsed, md: Meta) -> None:  # stage 7: rri · γ
        shim_set16(buf, p.shim, RRI_OFF, sat_sub(shim_get16(buf, p.shim, RRI_OFF), md.d16))

    @staticmethod
    def ri_congested(buf: bytearray, p: Parsed, md: Meta) -> None:  # stage 7: min(rri, τ/rf')
        shim_set16(buf, p.shim, RRI_OFF, md.m_cong & U16)

    @staticmethod
    def ri_uncongested(buf: bytearray, p: Parsed, md: Meta) -> None:  # stage 7: min(rri, max(1/rf', C/R*))
        shim_set16(buf, p.shim, RRI_OFF, md.m_unc & U16)

    def apply(self, buf: bytearray, p: Parsed, md: Meta) -> None:
        self.candidates(md)
        self.limits(md)
        action, _ = self.ri.lookup(md.ri_req, md.rri_ge_one, md.congested)
        if action == "ri_upstream":
            self.ri_upstream(buf, p, md)
        elif action == "ri_congested":
            self.ri_congested(buf, p, md)
        elif action == "ri_uncongested":
            self.ri_uncongested(buf, p, md)
        # ri_keep


class EgressAccounting:
    """`FfsEgress.egress_acct`: A_j (every packet reaching egress) and the strip port mode."""

    def __init__(self) -> None:
        self.accepted = Counter(N.ACCEPTED)
        self.egress_ports = MatchTable(N.EGRESS_PORTS)

    def count_accepted(self, port: int, frame_len: int) -> None:
        self.accepted.count(port, frame_len)

    @staticmethod
    def strip(buf: bytearray) -> None:  # strip_v4 / strip_v6 after the egress parser
        try:
            p = parse(buf)
        except ParseError:  # the egress parser accepts what it cannot read: nothing to strip
            return
        if p.shim:
            strip_shim(buf, p)

    def apply(self, buf: bytearray, port: int) -> None:
        self.count_accepted(port, len(buf))
        action, _ = self.egress_ports.lookup(port)
        if action == "strip_shim":
            self.strip(buf)


class Pipeline:
    """Ingress parser, ingress controls, (no queue), egress controls; one packet at a time."""

    def __init__(self, seed: int = 1) -> None:
        self.seed = seed
        self.port_metadata: dict[int, tuple[int, int, int]] = {}  # port -> (ifindex, trust, insert)
        self.forwarding = Forwarding()
        self.pair_map = PairMap()
        self.rate_est = RateEstimation()
        self.normalize = Normalize(seed)
        self.ri_update = RiUpdate()
        self.egress_acct = EgressAccounting()
        self.events = Counter(N.EVENTS)
        # in the order of ffs.p4names.TABLES (the fast path compiles them in this order)
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
        """One frame arriving on `ingress_port` at time `t_ns` (the LPF's clock)."""
        if not 0 <= ingress_port < C.NUM_PORTS:
            raise ValueError(f"ingress port {ingress_port} out of range 0..{C.NUM_PORTS - 1}")
        buf = bytearray(frame)
        frame_len = len(buf)
        events = self.events
        md = Meta()
        md.ifindex, md.trust, md.insert = self.port_metadata.get(ingress_port, (0, 0, 0))
        # -- FfsIngressParser --------------------------------------------------------------------
        try:
            p = parse(buf)
        except ParseError:  # parse_drop
            events.count(C.EVENT_PARSE_ERROR, frame_len)
            return Result(None, None, DROP_PARSE_ERROR)
        ingress_parser_metadata(buf, p, md)
        # -- FfsIngress.apply --------------------------------------------------------------------
        self.forwarding.apply(p, md)
        if md.routed:
            self.pair_map.apply(ingress_port, md)
        self.rate_est.apply(md, frame_len, t_ns)
        if not md.routed:  # miss_drop
            events.count(C.EVENT_ROUTE_MISS, frame_len)
            return Result(None, None, DROP_ROUTE_MISS)
        if not md.managed:  # note_no_pair: FFS bypassed
            events.count(C.EVENT_NO_PAIR, frame_len)
            return self._egress(buf, md.egress_port, None)
        if not self.normalize.apply(buf, p, md, frame_len):
            events.count(C.EVENT_FFS_DROP, frame_len)
            return Result(None, None, DROP_FFS, md.pid)
        self.ri_update.apply(buf, p, md)
        if md.ffs_state == C.FFS_STATE_OPAQUE:  # note_opaque
            events.count(C.EVENT_OPAQUE_SHIM, frame_len)
        return self._egress(buf, md.egress_port, md.pid)

    def _egress(self, buf: bytearray, port: int, pid: int | None) -> Result:
        """The TM (no queue: FFS decides before it) and `FfsEgress.apply`."""
        self.egress_acct.apply(buf, port)
        return Result(port, bytes(buf), None, pid)
