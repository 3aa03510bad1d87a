# SPDX-License-Identifier: Apache-2.0
"""The FFS pipeline of p4src/, as an executable specification (docs/spec.md §7).

One class per P4 control, holding the same tables, counters, registers and LPFs under the same
names (`ffs.p4names`), and one function per P4 action, named like the action, doing what the
action does at the P4 widths (saturating `|-|`, 32-bit wrap, `[15:0]` slices). Each control's
`apply` runs its actions and tables in the order of the P4 `apply` block; `Pipeline.process`
is `FfsIngressParser` + `FfsIngress.apply` + the traffic manager (`ffs.switch.tm`, a FIFO per
egress port at its line rate) + `FfsEgress.apply`. The stage of spec §7.2
where each action runs is noted beside it. The ingress controls update their counters, registers
and LPF in the pipe of the ingress port, FfsEgress in the pipe of the egress port (`ffs.switch.tna`).

The compiled fast path (`ffs.switch.fast`, `_fastpath.c`) is a transcription of this file; a
differential test holds the two to identical outputs, counters and drops.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ffs.core import constants, p4names
from ffs.core.tables import claimed_frame_len, wire_len
from ffs.switch.packet import (
    RF_OFF,
    RRI_OFF,
    Parsed,
    ParseError,
    insert_shim,
    parse,
    shim_get16,
    shim_set16,
    strip_shim,
)
from ffs.switch.pktgen import PacketGenerator, is_generator_port, parse_timer
from ffs.switch.tm import TrafficManager
from ffs.switch.tna import (
    PIPE_SHIFT,
    PIPES,
    Counter,
    Lpf,
    MatchTable,
    Random16,
    Register,
    const_table,
    mac_frame,
    mac_output,
    sat_add,
    sat_sub,
)

U16 = 0xFFFF
U32 = 0xFFFFFFFF

# why a packet did not leave (Result.drop_reason)
DROP_PARSE_ERROR = "parse_error"
DROP_ROUTE_MISS = "route_miss"
DROP_FFS = "ffs_drop"
DROP_MALFORMED = "malformed"  # FfsEgress: the frame's bytes disagree with its IP length
DROP_TM = "tm_drop"  # the traffic manager: the egress port's queue was full (tail drop)
DROP_BASELINE = "baseline"  # an evaluation baseline's admission (Pipeline.admission) refused it
DROP_GUARD = "guard_drop"  # the queue guard: a pair over its share while the egress's queue stands (spec §7.7)
DROP_TIMER = "timer"  # a timer packet of the packet generator: it ends in the ingress, as on Tofino
DROP_OVERSIZE = "oversize"  # a port's MAC: the frame exceeds its frame limit (received or sent, spec §4)
DROP_CLAIM = "claim_drop"  # its IP length claims more than the ingress port's MAC admits (claim_limit, spec §4)


@dataclass(slots=True)
class Meta:
    """Ingress metadata (the P4 `ffs_metadata_t`, zero-initialized like @pa_auto_init_metadata);
    widths in spec §7, values held in Python ints and kept inside their width by the actions."""

    # port metadata ($PORT_METADATA)
    trust: int = 0
    insert: int = 0
    # the parser's reading of the packet
    frag: int = 0
    ffs_state: int = constants.FFS_STATE_NONE
    ri_req: int = 0
    rri_ge_one: int = 0
    # the claim
    l3_len: int = 0
    runt: int = 0
    wlen: int = 0  # its line-rate bytes, for the queue guard
    claim_room: int = 0  # its distance below the ingress port's frame limit; 0: a lie (claim_limit)
    # a timer packet of the packet generator (spec §7.1, §7.7)
    timer: int = 0
    timer_id: int = 0
    # forwarding
    routed: int = 0
    egress_port: int = 0
    # the label
    rf_hdr: int = constants.CODE_ONE
    rf: int = 0
    rri_n: int = 0
    # the pair and its egress (PairMap)
    managed: int = 0
    pid: int = 0
    held: int = 0
    rf_over_m: int = 0
    ltau: int = 0
    ltau_p: int = 0
    congested: int = 0
    lcr: int = 0
    room: int = 0
    tau_over_k: int = 0
    # the estimator (RateEstimation)
    lw: int = 0
    llen: int = 0
    pkt_weight: int = 0
    f_rate: int = 0
    rf_norm: int = 0
    c_cong: int = 0
    # gamma (Normalize)
    rnd: int = 0
    admit_margin: int = 0
    # RI (RiUpdate)
    c_ri: int = 0
    # the queue guard (QueueGuard)
    qhi: int = 0
    drain: int = 0
    guard: int = 0


@dataclass(slots=True)
class Result:
    """What happened to one packet: sent out of `egress_port` as `frame`, its last bit on the wire
    at `depart_ns` (the traffic manager's queue), or dropped with `drop_reason` (one of DROP_*).
    `pid` is the pair index of a managed packet."""

    egress_port: int | None
    frame: bytes | None
    drop_reason: str | None = None
    pid: int | None = None
    depart_ns: int = 0


def ingress_parser_metadata(buf: bytearray, p: Parsed, md: Meta) -> None:
    """The terminal states of `FfsIngressParser` (spec §7.1): ffs_valid / ffs_below_min /
    ffs_above_max (the arriving label clamped to [RF_CODE_MIN, RF_CODE_MAX]), ffs_opaque, no_shim."""
    md.l3_len = p.l3_len
    md.ffs_state = p.ffs_state
    md.frag = int(p.frag)  # ipv4_first_fragment / ipv4_later_fragment
    if p.ffs_state == constants.FFS_STATE_VALID:
        md.rf_hdr = min(max(shim_get16(buf, p.shim, RF_OFF), constants.RF_CODE_MIN), constants.RF_CODE_MAX)
        md.ri_req = (buf[p.shim] & constants.FLAG_RI) >> 3
        md.rri_ge_one = shim_get16(buf, p.shim, RRI_OFF) >> 15
    # ffs_opaque / no_shim: rf_hdr = CODE_ONE (the Meta default)


class PortLabel:
    """`FfsIngress.port_label` (const entries, stage 0): the label entering normalization."""

    def __init__(self) -> None:
        from ffs.core.tables import port_label_entries  # the one generator of the const entries

        self.table = const_table(p4names.PORT_LABEL, port_label_entries())

    @staticmethod
    def use_label(md: Meta) -> None:
        md.rf = md.rf_hdr

    @staticmethod
    def use_label_ri(buf: bytearray, p: Parsed, md: Meta) -> None:
        md.rf = md.rf_hdr
        md.rri_n = (constants.CODE_ONE - shim_get16(buf, p.shim, RRI_OFF)) & U16

    @staticmethod
    def reset_label(buf: bytearray, p: Parsed, md: Meta) -> None:  # RI still runs (spec §6)
        md.rf = constants.CODE_ONE
        md.rri_n = (constants.CODE_ONE - shim_get16(buf, p.shim, RRI_OFF)) & U16

    def apply(self, buf: bytearray, p: Parsed, md: Meta) -> None:
        action, _ = self.table.lookup(md.trust, md.ffs_state)
        if action == "use_label_ri":
            self.use_label_ri(buf, p, md)
        elif action == "reset_label":
            self.reset_label(buf, p, md)
        else:
            self.use_label(md)


class Forwarding:
    """`FfsIngress.forwarding`: IPv4/IPv6 LPM to an egress port, with a configurable miss action."""

    def __init__(self) -> None:
        self.ipv4_routes = MatchTable(p4names.IPV4_ROUTES)
        self.ipv6_routes = MatchTable(p4names.IPV6_ROUTES)

    @staticmethod
    def route(md: Meta, port: int) -> None:  # stage 0
        md.egress_port = port
        md.routed = 1

    @staticmethod
    def no_route(md: Meta) -> None:  # the miss action: marks it; FfsIngress.fate drops and counts
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
            self.no_route(md)


class PairMap:
    """`FfsIngress.pair_map`: (ingress, egress) -> pair index and k = rf - lm; egress -> τ and
    friends, and the room an inserted shim has under the egress's MTU; cc = code(τ/k)."""

    def __init__(self) -> None:
        self.pairs = MatchTable(p4names.PAIRS)
        self.egress_params = MatchTable(p4names.EGRESS_PARAMS)
        self.shim_room = MatchTable(p4names.SHIM_ROOM)

    @staticmethod
    def set_pair(md: Meta, pid: int, nlm: int) -> None:  # stage 1: k = nlm + rf never wraps (§7.2)
        md.pid, md.rf_over_m, md.managed = pid, (nlm + md.rf) & U16, 1

    @staticmethod
    def set_held_pair(md: Meta, pid: int, nlm: int) -> None:  # stage 1: a pair held in quarantine (§9)
        md.pid, md.rf_over_m, md.managed, md.held = pid, (nlm + md.rf) & U16, 1, 1

    @staticmethod
    def no_pair(md: Meta) -> None:
        md.managed = 0

    @staticmethod
    def set_egress(md: Meta, ltau: int, ltau_p: int, congested: int, lcr: int) -> None:  # stage 1
        md.ltau, md.ltau_p, md.congested, md.lcr = ltau, ltau_p, congested, lcr

    @staticmethod
    def egress_unmanaged(md: Meta) -> None:
        md.ltau, md.ltau_p, md.congested, md.lcr = constants.LTAU_MAX, 0, 0, constants.CODE_MAX

    @staticmethod
    def set_room(md: Meta, thr: int) -> None:  # stage 1: 0 where no shim fits (spec §2)
        md.room = sat_sub(thr, md.l3_len)

    @staticmethod
    def room_max(md: Meta) -> None:
        md.room = sat_sub(constants.SHIM_ROOM_MAX, md.l3_len)

    def apply(self, ingress_port: int, md: Meta, ipv6: int = 0) -> None:
        action, params = self.pairs.lookup(ingress_port, md.egress_port)
        if action == "set_pair":
            self.set_pair(md, params["pid"], params["nlm"])
        elif action == "set_held_pair":
            self.set_held_pair(md, params["pid"], params["nlm"])
        else:
            self.no_pair(md)
        action, params = self.egress_params.lookup(md.egress_port)
        if action == "set_egress":
            self.set_egress(md, params["ltau"], params["ltau_p"], params["congested"], params["lcr"])
        else:
            self.egress_unmanaged(md)
        action, params = self.shim_room.lookup(md.egress_port, ipv6)
        if action == "set_room":
            self.set_room(md, params["thr"])
        else:
            self.room_max(md)
        if md.held == 1:
            self.norm_cc_held(md)
        else:
            self.norm_cc(md)

    @staticmethod
    def norm_cc(md: Meta) -> None:  # stage 2: 16-bit wrap; never wraps below 0 (§7.2)
        md.tau_over_k = (md.ltau_p - md.rf_over_m) & U16

    @staticmethod
    def norm_cc_held(md: Meta) -> None:  # stage 2: τ = 1 for a held pair, whatever the egress's τ (§9)
        md.tau_over_k = (0 - md.rf_over_m) & U16


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


class Normalize:
    """`FfsIngress.normalize`: the random draw, and γ by (congested, c_cong)."""

    def __init__(self, seed: int) -> None:
        self.gamma = MatchTable(p4names.GAMMA)
        self.rng = Random16(seed)

    def draw(self, md: Meta) -> None:  # stage 3 (managed packets only draw)
        md.rnd = self.rng.get()

    @staticmethod
    def gamma_one(md: Meta) -> None:  # stage 4: d <= 0 or uncongested, γ = 1, no random compare
        md.admit_margin = 1

    @staticmethod
    def gamma_frac(md: Meta, thr: int) -> None:  # stage 4: accept iff rnd < thr
        md.admit_margin = sat_sub(thr, md.rnd)

    @staticmethod
    def gamma_zero(md: Meta) -> None:  # stage 4: γ < 2^-16, always drop
        md.admit_margin = 0

    def apply(self, md: Meta) -> None:
        self.draw(md)
        action, params = self.gamma.lookup(md.congested, md.c_cong)
        if action == "gamma_one":
            self.gamma_one(md)
        elif action == "gamma_frac":
            self.gamma_frac(md, params["thr"])
        else:
            self.gamma_zero(md)


class RiUpdate:
    """`FfsIngress.ri_update`: Algorithm 4's candidate with the pre-γ normalized label (const
    entries), on trusting and resetting ports alike; FfsIngress.fate writes rri = min(rri, c_ri)."""

    def __init__(self) -> None:
        from ffs.core.tables import ri_candidate_entries  # the one generator of the const entries

        self.ri_candidate = const_table(p4names.RI_CANDIDATE, ri_candidate_entries())

    @staticmethod
    def candidate_upstream(md: Meta) -> None:  # stage 4: rri · γ = rri - d
        md.c_ri = sat_sub(md.c_cong, md.rri_n)

    @staticmethod
    def candidate_keep(md: Meta) -> None:
        md.c_ri = constants.CODE_MAX

    @staticmethod
    def candidate_congested(md: Meta) -> None:  # stage 4: τ / rf_norm
        md.c_ri = md.c_cong

    @staticmethod
    def candidate_uncongested(md: Meta) -> None:  # stage 4: max(1/rf_norm, C/R*)
        md.c_ri = max(md.c_cong, md.lcr)

    def apply(self, md: Meta) -> None:
        action, _ = self.ri_candidate.lookup(md.ri_req, md.rri_ge_one, md.congested)
        getattr(self, action)(md)


class QueueGuard:
    """`FfsIngress.guard` (spec §7.7): each egress's virtual queue, filled by what γ admits and
    drained by the packet generator's timer packets; while it stands above `qhi`, a packet of a
    pair reading over GUARD_RF_CODE of its share is dropped before the queue."""

    def __init__(self) -> None:
        self.egress_queue = MatchTable(p4names.EGRESS_QUEUE)
        self.timer_ports = MatchTable(p4names.TIMER_PORTS)
        self.queue = Register(p4names.GUARD_QUEUE)
        self.timers = Counter(p4names.GUARD_TIMERS)

    @staticmethod
    def set_queue(md: Meta, qhi: int) -> None:  # stage 0-1
        md.qhi = qhi

    @staticmethod
    def no_queue(md: Meta) -> None:
        md.qhi = constants.QHI_OFF

    @staticmethod
    def set_drain(md: Meta, port: int, drain: int) -> None:  # a timer packet: the port it drains
        md.egress_port, md.drain = port, drain

    def enqueue(self, md: Meta, pipe: int) -> None:  # stage 5: a managed packet γ admitted
        at = pipe * self.queue.size + md.egress_port
        v = self.queue.cells[at]
        md.guard = int(v > md.qhi and md.rf_norm > constants.GUARD_RF_CODE)
        if not md.guard:
            self.queue.cells[at] = min(v + md.wlen, U32)

    def drain(self, md: Meta, pipe: int, k: int = 1) -> None:  # stage 5: a timer packet (k alike: k of them)
        at = pipe * self.queue.size + md.egress_port
        self.queue.cells[at] = sat_sub(self.queue.cells[at], k * md.drain)

    def apply(self, md: Meta, pipe: int) -> None:
        """A data packet: the threshold of its egress, then (managed and admitted by γ) the queue."""
        action, params = self.egress_queue.lookup(md.egress_port)
        if action == "set_queue":
            self.set_queue(md, params["qhi"])
        else:
            self.no_queue(md)
        if md.managed and md.admit_margin:
            self.enqueue(md, pipe)

    def timer(self, md: Meta, pipe: int, k: int = 1) -> None:
        """A timer packet (`md.timer_id` its packet_id), or k alike: drains its port's queue and
        counts it; a packet_id without a timer_ports entry (no_drain) does nothing. k saturating
        subtractions of one drain are one subtraction of k drains, the counter counts k."""
        action, params = self.timer_ports.lookup(md.timer_id)
        if action != "set_drain":
            return
        self.set_drain(md, params["port"], params["drain"])
        self.drain(md, pipe, k)
        at = pipe * self.timers.size + md.egress_port
        self.timers.packets[at] = (self.timers.packets[at] + k) & 0xFFFFFFFFFFFFFFFF


class EgressAccounting:
    """`FfsEgress.egress_acct`: A_j (every packet reaching egress) and the strip port mode."""

    def __init__(self) -> None:
        from ffs.core.tables import frame_check_entries  # the one generator of the const entries

        self.accepted = Counter(p4names.ACCEPTED)
        self.malformed = Counter(p4names.MALFORMED)
        self.pair_malformed = Counter(p4names.PAIR_MALFORMED)
        self.egress_ports = MatchTable(p4names.EGRESS_PORTS)
        self.frame_check = const_table(p4names.FRAME_CHECK, frame_check_entries())

    def count_accepted(self, port: int, frame_len: int) -> None:
        self.accepted.count(port, frame_len, port >> PIPE_SHIFT)

    def lies(self, buf: bytearray, pkt_length: int, grown: bool) -> bool:
        """frame_check (spec §7.3): do the frame's bytes disagree with its IP length field?
        `pkt_length` is eg_intr_md.pkt_length, the length the packet arrived with, FCS included (on
        tofino-model it does not follow the ingress deparser): a shim the ingress inserted
        (`grown`, bridged) is added to it. FfsEgressParser extracts the shim whatever the IP
        length says, so a length that an inserted shim wrapped (65528..65535 + 8) is checked, not
        passed as unreadable."""
        try:
            p = parse(buf, ingress=False)
        except ParseError:  # the egress parser accepts what it cannot read: not checked
            return False
        if not p.ip_version:
            return False
        pkt_len = pkt_length + (constants.SHIM_LEN if grown else 0)
        excess = (pkt_len - claimed_frame_len(p.l3_len, p.ip_version == 6, p.vlan, fcs=False)) & 0xFFFF
        action, _ = self.frame_check.lookup(excess, pkt_length, int(p.vlan))
        return action == "frame_lies"

    def emitted_len(self, buf: bytearray, port: int) -> int:
        """The length of the frame `apply` lets leave `port`: without the shim where the port strips
        it, what the port drains (spec §4). `apply` is the one that strips and counts."""
        if self.egress_ports.lookup(port)[0] != "strip_shim":
            return len(buf)
        try:
            p = parse(buf, ingress=False)
        except ParseError:
            return len(buf)
        return len(buf) - constants.SHIM_LEN if p.shim and p.ffs_state == constants.FFS_STATE_VALID else len(buf)

    @staticmethod
    def strip(buf: bytearray) -> None:  # strip_v4 / strip_v6 after the egress parser
        try:
            p = parse(buf, ingress=False)
        except ParseError:  # the egress parser accepts what it cannot read: nothing to strip
            return
        if p.shim and p.ffs_state == constants.FFS_STATE_VALID:  # a shim it does not understand stays (spec §6)
            strip_shim(buf, p)

    def apply(self, buf: bytearray, port: int, pkt_length: int, pid: int | None = None, grown: bool = False) -> bool:
        """False: the frame was dropped (drop_malformed), counted in `malformed` and, for a managed
        pair (`pid`, bridged from the ingress), in `pair_malformed`. The counters count the frame
        as the TM holds it (`buf`, FCS included), in the egress port's pipe."""
        if self.lies(buf, pkt_length, grown):
            pipe = port >> PIPE_SHIFT
            self.malformed.count(port, len(buf), pipe)
            if pid is not None:
                self.pair_malformed.count(pid, len(buf), pipe)
            return False
        self.count_accepted(port, len(buf))
        action, _ = self.egress_ports.lookup(port)
        if action == "strip_shim":
            self.strip(buf)
        return True


class Fate:
    """`FfsIngress.fate` (const entries, stage 5): one decision and at most one event per packet;
    `pair_drops` and `admitted` (A_j) beside it."""

    def __init__(self, events: Counter) -> None:
        from ffs.core.tables import fate_entries  # the one generator of the const entries

        self.fate = const_table(p4names.FATE, fate_entries())
        self.events = events
        self.pair_drops = Counter(p4names.PAIR_DROPS)
        self.admitted = Counter(p4names.ADMITTED)

    @staticmethod
    def rewrite_label(buf: bytearray, p: Parsed, md: Meta) -> None:  # Algorithms 3 line 3 and 4
        shim_set16(buf, p.shim, RF_OFF, min(md.rf_norm, md.ltau))
        shim_set16(buf, p.shim, RRI_OFF, min(shim_get16(buf, p.shim, RRI_OFF), md.c_ri))

    @staticmethod
    def rewrite_reset_label(buf: bytearray, p: Parsed, md: Meta) -> None:  # Algorithm 4 with the label set
        shim_set16(buf, p.shim, RF_OFF, min(md.rf_norm, md.ltau))
        shim_set16(buf, p.shim, RRI_OFF, min(shim_get16(buf, p.shim, RRI_OFF), md.c_ri))
        buf[p.shim] |= constants.FLAG_DEFAULTED

    def apply(self, buf: bytearray, p: Parsed, md: Meta, frame_len: int, pipe: int) -> str:
        """The fate's action name; the frame is edited in place. `pipe`: the ingress port's."""
        action, _ = self.fate.lookup(
            0,
            0,
            md.routed,
            md.managed,
            md.admit_margin,
            md.guard,
            md.ffs_state,
            md.trust,
            md.insert,
            int(p.ip_version == 4),
            int(p.ip_version == 6),
            buf[p.l3 + 6] if p.ip_version == 6 else 0,
            md.runt,
            md.frag,
            md.room,
            md.claim_room,
        )
        if md.managed:
            if md.admit_margin == 0 or md.guard:  # count_pair_drop: γ or the queue guard dropped it
                self.pair_drops.count(md.pid, frame_len, pipe)
            else:  # count_admitted: what γ let through toward the egress, before the TM (spec §9)
                self.admitted.count(md.egress_port, frame_len, pipe)
        ev = _EVENT_OF.get(action)
        if ev is not None:
            self.events.count(ev, frame_len, pipe)
        if action == "rewrite_label":
            self.rewrite_label(buf, p, md)
        elif action == "rewrite_reset_label":
            self.rewrite_reset_label(buf, p, md)
        elif action in ("insert_shim_v4", "insert_shim_v6"):
            insert_shim(buf, p, min(md.rf_norm, md.ltau))
        return action


_EVENT_OF = {
    "parse_drop": constants.EVENT_PARSE_ERROR,
    "miss_drop": constants.EVENT_ROUTE_MISS,
    "note_no_pair": constants.EVENT_NO_PAIR,
    "ffs_drop": constants.EVENT_FFS_DROP,
    "guard_drop": constants.EVENT_GUARD_DROP,
    "note_opaque": constants.EVENT_OPAQUE_SHIM,
    "note_not_inserted": constants.EVENT_NOT_INSERTED,
    "claim_drop": constants.EVENT_CLAIM_OVERSIZE,
}


class Pipeline:
    """Ingress parser, ingress controls, the traffic manager, egress controls; one packet at a time."""

    def __init__(self, seed: int = 1) -> None:
        self.seed = seed
        self.tm = TrafficManager()
        # an evaluation baseline that decides before the TM (CSFQ): (egress port, t_ns, the frame as
        # the TM would hold it) -> admit; None for FFS
        self.admission: Callable[[int, int, bytearray], bool] | None = None
        self.port_metadata: dict[int, tuple[int, int]] = {}  # port -> (trust, insert)
        self.port_label = PortLabel()
        self.forwarding = Forwarding()
        self.pair_map = PairMap()
        self.rate_est = RateEstimation()
        self.normalize = Normalize(seed)
        self.ri_update = RiUpdate()
        self.egress_acct = EgressAccounting()
        self.events = Counter(p4names.EVENTS)
        self.fate = Fate(self.events)
        self.guard = QueueGuard()
        self.pktgen = PacketGenerator()
        from ffs.core.tables import ipv4_shim_len_entries

        # every table in the order of ffs.p4names.TABLES (the fast path compiles the writable ones
        # in this order); const-entry tables are read-only.
        self.ipv4_shim_len = const_table(p4names.IPV4_SHIM_LEN, ipv4_shim_len_entries())
        self.claim_limit = MatchTable(p4names.CLAIM_LIMIT)
        self.tables: dict[str, MatchTable] = {
            t.spec.name: t
            for t in (
                self.forwarding.ipv4_routes,
                self.forwarding.ipv6_routes,
                self.pair_map.pairs,
                self.pair_map.egress_params,
                self.rate_est.len_log,
                self.rate_est.weight,
                self.rate_est.weight_reset,
                self.rate_est.f_log,
                self.normalize.gamma,
                self.egress_acct.egress_ports,
                self.pair_map.shim_room,
                self.port_label.table,
                self.ipv4_shim_len,
                self.ri_update.ri_candidate,
                self.fate.fate,
                self.egress_acct.frame_check,
                self.guard.egress_queue,
                self.guard.timer_ports,
                self.claim_limit,
            )
        }
        assert tuple(self.tables) == tuple(t.name for t in p4names.TABLES)
        self.counters = {
            c.spec.name: c
            for c in (
                self.rate_est.pair_bytes,
                self.rate_est.offered,
                self.fate.pair_drops,
                self.fate.admitted,
                self.events,
                self.egress_acct.accepted,
                self.egress_acct.malformed,
                self.egress_acct.pair_malformed,
                self.guard.timers,
            )
        }
        self.registers = {r.spec.name: r for r in (self.rate_est.f_est, self.guard.queue)}
        self.lpfs = {self.rate_est.f_lpf.spec.name: self.rate_est.f_lpf}

    def process(self, frame: bytes | bytearray, ingress_port: int, t_ns: int) -> Result:
        """One frame arriving on `ingress_port` at time `t_ns` (the LPF's clock)."""
        if not 0 <= ingress_port < constants.NUM_PORTS:
            raise ValueError(f"ingress port {ingress_port} out of range 0..{constants.NUM_PORTS - 1}")
        buf = mac_frame(frame)  # padded, with its FCS: what the parser, pkt_length and counters see
        frame_len = len(buf)
        pipe = ingress_port >> PIPE_SHIFT  # the ingress controls' counters, registers and LPF
        self.run_timers(pipe, t_ns)
        if self.tm.oversize_drop(ingress_port, frame_len):  # the receiving MAC: never reaches the parser
            return Result(None, None, DROP_OVERSIZE)
        if is_generator_port(ingress_port) and self._timer_packet(buf, pipe):
            return Result(None, None, DROP_TIMER)
        md = Meta()
        trust, insert = self.port_metadata.get(ingress_port, (0, 0))
        md.trust, md.insert = trust & 1, insert & 1  # byte-wide fields; p4src keys on bit 0 (spec §6)
        # -- FfsIngressParser, and ipv4_shim_len (stage 0): an IPv4 total_len too short for the
        # shim sets parse_error, which only fate reads: parse_drop either way -------------------
        try:
            p = parse(buf)
            if (
                p.ip_version == 4
                and p.shim
                and self.ipv4_shim_len.lookup(p.ihl_bytes // 4, p.l3_len)[0] == "short_shim"
            ):
                raise ParseError("IPv4 total length shorter than header and shim")
        except ParseError:  # fate: parse_drop
            self.events.count(constants.EVENT_PARSE_ERROR, frame_len, pipe)
            return Result(None, None, DROP_PARSE_ERROR)
        ingress_parser_metadata(buf, p, md)
        # -- FfsIngress.apply --------------------------------------------------------------------
        self.port_label.apply(buf, p, md)  # stage 0
        self.apply_claim_limit(ingress_port, md, int(p.ip_version == 6))
        self.forwarding.apply(p, md)
        self.rate_est.weigh(p, md)  # stages 0-1
        if md.routed and md.claim_room:
            self.pair_map.apply(ingress_port, md, int(p.ip_version == 6))  # stages 1-2
        if md.managed:
            self.rate_est.apply(md, frame_len, t_ns, pipe)  # stages 2-3
            self.normalize.apply(md)  # stages 3-4
            self.ri_update.apply(md)
        if md.routed:
            self.guard.apply(md, pipe)  # stage 5 (the threshold in stage 0-1)
        action = self.fate.apply(buf, p, md, frame_len, pipe)  # stage 6
        if action == "miss_drop":
            return Result(None, None, DROP_ROUTE_MISS)
        if action == "ffs_drop":
            return Result(None, None, DROP_FFS, md.pid)
        if action == "guard_drop":
            return Result(None, None, DROP_GUARD, md.pid)
        if action == "parse_drop":
            return Result(None, None, DROP_PARSE_ERROR)
        if action == "claim_drop":
            return Result(None, None, DROP_CLAIM)
        grown = action in ("insert_shim_v4", "insert_shim_v6")
        return self._egress(buf, md.egress_port, frame_len, md.pid if md.managed else None, grown, t_ns)

    def apply_claim_limit(self, ingress_port: int, md: Meta, ipv6: int) -> None:
        """`FfsIngress.claim_limit` (stage 0): claim_room = thr |-| l3_len, 0 where the claim exceeds
        what the ingress port's MAC admits (set_claim_limit); 1 on a port without an entry."""
        action, params = self.claim_limit.lookup(ingress_port, ipv6)
        md.claim_room = sat_sub(params["thr"], md.l3_len) if action == "set_claim_limit" else 1

    def _timer_packet(self, buf: bytearray, pipe: int, k: int = 1) -> bool:
        """FfsIngressParser's timer path and the guard's (spec §7.1, §7.7): a packet on the
        generator's port whose header names the timer application; False: any other, a frame."""
        head = parse_timer(buf)
        if head is None or head[0] != constants.TIMER_APP_ID:
            return False
        md = Meta(timer=1, timer_id=head[1])
        self.guard.timer(md, pipe, k)
        return True

    def run_timers(self, pipe: int, t_ns: int) -> None:
        """The packet generator's batches of `pipe` due by t_ns, before anything at t_ns: each
        packet through the parser and the guard, a packet_id due k times as k of them."""
        if t_ns > self.pktgen.now_ns[0]:
            self.pktgen.now_ns[0] = t_ns
        k = self.pktgen.due(pipe, t_ns)
        if k:
            for frame in self.pktgen.frames(pipe):
                self._timer_packet(mac_frame(frame), pipe, k)

    def settle(self, t_ns: int | None = None) -> None:
        """Every pipe's due timer packets, up to t_ns (a live switch's clock) or else the last
        packet's time (virtual time): what a control-plane read of the guard's state sees on a
        running switch."""
        t = self.pktgen.now_ns[0] if t_ns is None else max(t_ns, self.pktgen.now_ns[0])
        for pipe in range(PIPES):
            self.run_timers(pipe, t)

    def _egress(self, buf: bytearray, port: int, pkt_length: int, pid: int | None, grown: bool, t_ns: int) -> Result:
        """The TM (`ffs.switch.tm`: the egress port's FIFO, at its line rate, tail drop), then
        `FfsEgress.apply` with the bridge, then the port's MAC (its frame limit). The TM drains the
        frame the egress emits (a shim it strips never reaches the wire; a frame above the limit
        leaves truncated to it). FfsEgress runs when the TM admits the frame rather than when it
        leaves: its counters lead the hardware's by the frame's queueing delay."""
        if self.admission is not None and not self.admission(port, t_ns, buf):
            return Result(None, None, DROP_BASELINE, pid)
        depart = self.tm.enqueue(port, t_ns, wire_len(self.tm.sent_len(port, self.egress_acct.emitted_len(buf, port))))
        if depart < 0:
            return Result(None, None, DROP_TM, pid)
        if not self.egress_acct.apply(buf, port, pkt_length, pid, grown):
            return Result(None, None, DROP_MALFORMED, pid, depart)
        if self.tm.oversize_drop(port, len(buf)):
            return Result(None, None, DROP_OVERSIZE, pid, depart)
        return Result(port, mac_output(buf), None, pid, depart)
