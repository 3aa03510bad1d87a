# SPDX-License-Identifier: Apache-2.0
"""The FFS pipeline of p4src/, as an executable specification (docs/spec.md §7).

One class per P4 control, holding the same tables, counters, registers and LPFs under the same
names (`ffs.core.p4names`), and one function per P4 action, named like the action, doing what the
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
from ffs.core.tables import wire_len
from ffs.switch.control.egress_accounting import EgressAccounting
from ffs.switch.control.ffs_core import ClaimLimit, Fate, PortLabel, ShimCount
from ffs.switch.control.forwarding import Forwarding
from ffs.switch.control.normalize import Normalize
from ffs.switch.control.pair_map import PairMap
from ffs.switch.control.queue_guard import QueueGuard
from ffs.switch.control.rate_estimation import RateEstimation
from ffs.switch.control.ri_update import RiUpdate
from ffs.switch.header import Meta
from ffs.switch.host_vlan import HostVlan
from ffs.switch.packet import (
    RF_OFF,
    RRI_OFF,
    Parsed,
    ParseError,
    parse,
    shim_get16,
)
from ffs.switch.pktgen import PacketGenerator, is_generator_port, parse_timer
from ffs.switch.tm import TrafficManager
from ffs.switch.tna import (
    PIPE_SHIFT,
    PIPES,
    Counter,
    MatchTable,
    PktLength,
    const_table,
    mac_frame,
    mac_output,
)

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


class Pipeline:
    """Ingress parser, ingress controls, the traffic manager, egress controls; one packet at a time."""

    def __init__(self, seed: int = 1) -> None:
        self.seed = seed
        self.tm = TrafficManager()
        # an evaluation baseline that decides before the TM (CSFQ): (egress port, t_ns, the frame as
        # the TM would hold it) -> admit; None for FFS
        self.admission: Callable[[int, int, bytearray], bool] | None = None
        self.port_metadata: dict[int, tuple[int, int]] = {}  # port -> (trust, insert)
        self.pkt_length_model = PktLength()  # what the chip makes the egress's pkt_length (tofino-model's)
        self.host_vlan = HostVlan()  # a host program that pops or pushes 802.1Q tags (none: ffs.p4)
        self.port_label = PortLabel()
        self.forwarding = Forwarding()
        self.pair_map = PairMap()
        self.rate_est = RateEstimation()
        self.normalize = Normalize(seed)
        self.ri_update = RiUpdate()
        self.egress_acct = EgressAccounting()
        self.events = Counter(p4names.EVENTS)
        self.shims = ShimCount()
        self.fate = Fate(self.events, self.shims)
        self.guard = QueueGuard()
        self.pktgen = PacketGenerator()
        from ffs.core.tables import ipv4_shim_len_entries

        # every table in the order of ffs.core.p4names.TABLES, sorted by P4 name (the fast path compiles
        # the writable ones in this order); const-entry tables are read-only.
        self.ipv4_shim_len = const_table(p4names.IPV4_SHIM_LEN, ipv4_shim_len_entries())
        self.claim_limit = ClaimLimit()
        self.tables: dict[str, MatchTable] = {
            t.spec.name: t
            for t in (
                self.egress_acct.egress_ports,
                self.egress_acct.frame_basis,
                self.egress_acct.frame_check,
                self.claim_limit.table,
                self.fate.fate,
                self.forwarding.ipv4_routes,
                self.forwarding.ipv6_routes,
                self.guard.egress_queue,
                self.guard.timer_ports,
                self.ipv4_shim_len,
                self.normalize.gamma,
                self.pair_map.egress_params,
                self.pair_map.pairs,
                self.pair_map.shim_room,
                self.port_label.table,
                self.rate_est.f_log,
                self.rate_est.len_log,
                self.rate_est.weight,
                self.rate_est.weight_reset,
                self.ri_update.ri_candidate,
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
                self.egress_acct.stripped,
                self.egress_acct.tag_changed,
                self.guard.timers,
                self.shims.offered_shims,
                self.shims.admitted_shims,
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
        self.claim_limit.apply(ingress_port, md, int(p.ip_version == 6))  # stage 0
        self.forwarding.apply(p, md)
        self.rate_est.weigh(p, md)  # stages 0-1
        if md.routed and md.claim_room:
            self.pair_map.apply(ingress_port, md, int(p.ip_version == 6))  # stages 1-2
        if md.managed:
            self.rate_est.apply(md, frame_len, t_ns, pipe)  # stages 2-3
            self.normalize.apply(md)  # stages 3-4
            self.ri_update.apply(md)
            self.shims.apply(buf, p, md, pipe)  # stages 2-3: will fate insert a shim?
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
        l2_change = self.host_vlan.change(ingress_port, md.egress_port, bool(p.vlan))
        self.host_vlan.apply(buf, l2_change, md.egress_port)  # the host's deparser
        pkt_length = self.pkt_length_model.of(frame_len, grown, l2_change)
        pid = md.pid if md.managed else None
        return self._egress(buf, md.egress_port, pkt_length, pid, grown, l2_change, t_ns)

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

    def _egress(
        self, buf: bytearray, port: int, pkt_length: int, pid: int | None, grown: bool, l2_change: int, t_ns: int
    ) -> Result:
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
        if not self.egress_acct.apply(buf, port, pkt_length, pid, grown, l2_change):
            return Result(None, None, DROP_MALFORMED, pid, depart)
        if self.tm.oversize_drop(port, len(buf)):
            return Result(None, None, DROP_OVERSIZE, pid, depart)
        return Result(port, mac_output(buf), None, pid, depart)
