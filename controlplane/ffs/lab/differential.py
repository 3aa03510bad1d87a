# SPDX-License-Identifier: Apache-2.0
"""The differential run: the same packets, with the same table state, through a Tofino
(tofino-model + bf_switchd, programmed by ffs-agent from a topology) and through the software
switch (docs/spec.md §8, design decision D4). Every deterministic output must agree exactly.

    ffs-agent installs the node  ->  the Tofino's tables are read back  ->  the same state is loaded
    into a software switch  ->  each phase sets its egress states on both  ->  seeded probes go
    out of the PTF-side veths (tagged in the source MAC), come back on any port, and are compared
    with what the software switch emits for them

Phase "exact": every egress uncongested with C/R* set (Algorithm 4 lines 7-8, γ = 1). Phase
"congested": the egresses congested at τ = 1 and 2 (γ < 1 for many probes); a probe a random draw
decides in the software switch takes the Tofino's decision (forwarded or not), and its probes never
lie about their length or end inside the shim, and any the egress would drop whatever γ decides
(`hides_gamma`) are left out, so that nothing after γ hides that decision.
Phases "gamma d=...": one packet kind at γ = 1/2, 0.7 and 1/3, forwarded by each target within
the ±4σ band of n·γ (n from ffs.lab.binomial: γ 20 % off fails in 99.9 % of runs). In every phase each
probe's fate and output bytes and every counter's delta (R, drops, events, R*, A, accepted,
malformed, per pair and per port) must agree. The seed is new each run unless given, and printed.

The F estimator forgets between packets on both (LPF time constant 1 ns), so F is the packet's own
weight and nothing depends on the two targets' clocks.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ffs.core import constants, p4names, tables
from ffs.core.api_client import ApiError, call
from ffs.core.constants import NUM_PAIRS, NUM_PORTS
from ffs.core.entries import CounterValue, Exact, LpfSpec, TableEntry, Update, counter_delta
from ffs.core.frames import ipv4_frame, ipv6_frame, shim
from ffs.core.program import pairs_of
from ffs.core.topology import Node, Topology, load
from ffs.driver.base import Driver
from ffs.driver.bfrt import BfrtDriver
from ffs.lab import binomial
from ffs.lab.sde import CHIPS, Sde, chip_of, default_port_map, sde_missing, stop_process
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import DROP_MALFORMED, Pipeline, Result

FORGETFUL = LpfSpec("RATE", 1.0, 1.0, constants.LPF_SCALE_DOWN)
TAG = b"\x02\xff"  # source MAC = 02:ff:<probe number, 32 bits>
ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SOL_PACKET, PACKET_AUXDATA = 263, 8
TP_STATUS_VLAN_VALID, TP_STATUS_VLAN_TPID_VALID = 0x10, 0x40


# --- probes --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Probe:
    seq: int
    port: int  # device port it enters
    frame: bytes
    kind: str  # what the generator meant it to exercise


def _tagged(frame: bytes, seq: int) -> bytes:
    return frame[:6] + TAG + struct.pack("!I", seq) + frame[12:]


def _vlan(frame: bytes, vid: int) -> bytes:
    return frame[:12] + struct.pack("!HH", 0x8100, vid) + frame[12:]


IPV6_EXTENSIONS = (0, 43, 44, 60)  # Hop-by-Hop, Routing, Fragment, Destination Options


def _payload(f: bytes, at: int, data: bytes) -> bytes:
    """`f` with `data` written over its bytes from `at` (the frame's length unchanged)."""
    data = data[: max(0, len(f) - at)]
    return f[:at] + data + f[at + len(data) :]


def generate(
    seed: int, n: int, ports: tuple[int, ...], prefixes4: list[str], prefixes6: list[str], malformed: bool = True
) -> list[Probe]:
    """`n` seeded probes over the ingress `ports`: IPv4 with and without options, IPv6, 802.1Q and
    QinQ, shim absent / valid (labels over the whole code range) / opaque / cut short, IPv4
    fragments (first, middle, last and shorter than a shim, of shim datagrams and others, their
    payload starting like a shim), IPv6 extension headers (Hop-by-Hop, Routing, Fragment,
    Destination Options, a shim behind them or not), payloads of random bytes, runts, destinations
    routed and not, non-IP frames; with `malformed`, also IP lengths that lie and shims cut short
    (whose fate the egress decides after γ)."""
    maker = _ProbeMaker(random.Random(seed), prefixes4, prefixes6, malformed)
    return [maker.probe(seq, ports) for seq in range(n)]


class _ProbeMaker:
    """generate's seeded draws, one method per part of a probe (the draws in the same order)."""

    def __init__(self, rng: random.Random, prefixes4: list[str], prefixes6: list[str], malformed: bool) -> None:
        self.rng, self.prefixes4, self.prefixes6, self.malformed = rng, prefixes4, prefixes6, malformed

    def host4(self, routed: bool) -> str:
        rng = self.rng
        return (
            f"{rng.choice(self.prefixes4).rsplit('.', 1)[0]}.{rng.randint(1, 254)}"
            if routed
            else f"192.0.2.{rng.randint(1, 254)}"
        )

    def host6(self, routed: bool) -> str:
        rng = self.rng
        return (
            f"{rng.choice(self.prefixes6).split('::')[0]}::{rng.randint(1, 0xFFFF):x}"
            if routed
            else f"2001:db8::{rng.randint(1, 0xFFFF):x}"
        )

    def label(self) -> int:
        rng = self.rng
        r = rng.random()
        if r < 0.15:
            return rng.choice(
                [0, 1, constants.RF_CODE_MIN - 1, constants.RF_CODE_MAX + 1, 0xFFFF]
            )  # clamped on arrival
        if r < 0.3:
            return rng.choice([constants.RF_CODE_MIN, constants.CODE_ONE, constants.RF_CODE_MAX])
        return rng.randint(constants.RF_CODE_MIN, constants.RF_CODE_MAX)

    def probe(self, seq: int, ports: tuple[int, ...]) -> Probe:
        rng = self.rng
        port = rng.choice(ports)
        routed = rng.random() < 0.9
        v6 = rng.random() < 0.35
        payload = rng.choice([0, 6, 26, 100, 500, 1000, 1400]) if rng.random() < 0.8 else rng.randint(0, 1400)
        kind, sh = self.shim()
        random_bytes = rng.random() < 0.5  # the payload's bytes: random, or zeros
        if v6:
            f, body, kind, extra = self.ipv6(routed, payload, kind, sh)
        else:
            f, body, kind, extra = self.ipv4(routed, payload, kind, sh)
        if random_bytes:
            f = _payload(f, body, rng.randbytes(max(0, len(f) - body)))
        vlan = rng.random() < 0.15
        if vlan:
            f = _vlan(f, rng.randint(1, 4094))
            if rng.random() < 0.25:  # QinQ: two tags, 802.1ad or 802.1Q outside (not IP to the parser)
                f = f[:12] + struct.pack("!HH", rng.choice([0x88A8, 0x8100]), rng.randint(1, 4094)) + f[12:]
                extra += " qinq"
        what = f"{'ipv6' if v6 else 'ipv4'}{' vlan' if vlan else ''} shim={kind}{extra}"
        what += " random-payload" if random_bytes else ""
        f, what = self.damage(f, constants.ETH_HDR_LEN + (constants.VLAN_TAG_LEN if vlan else 0), v6, kind, extra, what)
        return Probe(seq, port, _tagged(f, seq), what)

    def shim(self) -> tuple[str, bytes | None]:
        """The shim's kind (none, valid, opaque or, with malformed, cut) and its bytes."""
        rng = self.rng
        r = rng.random()
        kind = "none" if r < 0.3 else "valid" if r < 0.75 else "opaque" if r < 0.85 or not self.malformed else "cut"
        flags = rng.choice(
            [
                0,
                constants.FLAG_RI,
                constants.FLAG_RI | constants.FLAG_ECHO,
                constants.FLAG_DEFAULTED,
                constants.FLAG_RI | constants.FLAG_DEFAULTED,
            ]
        )
        rri = rng.choice([constants.CODE_MAX, constants.CODE_ONE, rng.randint(0, 0xFFFF)])
        version = constants.SHIM_VERSION
        if kind == "opaque":
            version, flags = (
                (2, flags) if rng.random() < 0.5 else (constants.SHIM_VERSION, flags | constants.FLAG_RESERVED)
            )
        sh = shim(self.label(), flags, 17, rri, rng.randint(0, 0xFFFF), version) if kind != "none" else None
        return kind, sh

    def ipv6(self, routed: bool, payload: int, kind: str, sh: bytes | None) -> tuple[bytes, int, str, str]:
        """(frame, where its payload starts, the shim's kind as the parser sees it, notes)."""
        rng = self.rng
        extra = ""
        ext = rng.choice(IPV6_EXTENSIONS) if rng.random() < 0.2 else None
        if ext is None:
            f = ipv6_frame("fd00:9::1", self.host6(routed), payload + (constants.SHIM_LEN if sh else 0), sh)
            body = constants.ETH_HDR_LEN + 40 + (constants.SHIM_LEN if sh else 0)
        else:  # an 8-byte extension header first; a shim behind it is not parsed (spec §2)
            behind = constants.IP_PROTO_FFS if sh and kind == "valid" and rng.random() < 0.5 else 17
            f = ipv6_frame("fd00:9::1", self.host6(routed), 8 + payload, None, proto=ext)
            eh = bytes([behind, 0]) + (
                struct.pack("!HI", rng.choice([0, 1, 8 * 185, 8 * 185 + 1]), rng.getrandbits(32))
                if ext == 44
                else bytes([1, 4, 0, 0, 0, 0])
            )
            f = _payload(f, constants.ETH_HDR_LEN + 40, eh + (sh if behind == constants.IP_PROTO_FFS and sh else b""))
            body = constants.ETH_HDR_LEN + 48 + (constants.SHIM_LEN if behind == constants.IP_PROTO_FFS else 0)
            extra = f" ext={ext}{'+shim' if behind == constants.IP_PROTO_FFS else ''}"
            kind = "none"
        return f, body, kind, extra

    def ipv4(self, routed: bool, payload: int, kind: str, sh: bytes | None) -> tuple[bytes, int, str, str]:
        """(frame, where its payload starts, the shim's kind as the parser sees it, notes)."""
        rng = self.rng
        extra = ""
        words = rng.choice([0, 0, 0, 1, 3, 10])
        frag = 0
        if rng.random() < 0.15:  # a fragment: first (MF), middle, last, last and short
            frag = rng.choice([constants.IPV4_MF, constants.IPV4_MF | 185, 185, 370])
            if frag & 0x1FFF:
                payload = rng.choice([0, 1, 4, 7, payload])
        ip_len = 20 + 4 * words + payload + (constants.SHIM_LEN if sh and not frag & 0x1FFF else 0)
        if frag & 0x1FFF:  # a non-first fragment of a shim datagram or not; its data may read as a shim
            proto = rng.choice([constants.IP_PROTO_FFS, 17])
            f = ipv4_frame(
                "10.0.9.1", self.host4(routed), ip_len, None, proto=proto, options=b"\x01" * (4 * words), frag=frag
            )
            body = constants.ETH_HDR_LEN + 20 + 4 * words
            if sh is not None:
                f = _payload(f, body, sh)
                body += constants.SHIM_LEN
            kind = "none"
        else:
            f = ipv4_frame("10.0.9.1", self.host4(routed), ip_len, sh, options=b"\x01" * (4 * words), frag=frag)
            body = constants.ETH_HDR_LEN + 20 + 4 * words + (constants.SHIM_LEN if sh else 0)
        if frag:
            extra = f" frag={frag:#06x}"
        return f, body, kind, extra

    def damage(self, f: bytes, l3: int, v6: bool, kind: str, extra: str, what: str) -> tuple[bytes, str]:
        """A cut shim, an IP length that lies (with malformed) or a frame that is not IP at all."""
        rng = self.rng
        if "qinq" in extra:
            pass
        elif kind == "cut":  # the frame ends inside the shim
            shim_at = l3 + (40 if v6 else (f[l3] & 0xF) * 4)
            f = f[: shim_at + rng.randint(0, constants.SHIM_LEN - 1)]
        elif self.malformed and rng.random() < 0.12:  # the IP length lies
            claim = rng.choice([0, 20, 65535, rng.randint(0, 65535)])
            lied = bytearray(f)
            lied[l3 + (4 if v6 else 2) : l3 + (6 if v6 else 4)] = struct.pack("!H", claim)
            f = bytes(lied)
            what += f" lying-length={claim}"
        if rng.random() < 0.03:  # not IP
            f = f[:12] + b"\x08\x06" + bytes(28)
            what = "arp"
        return f, what


def tag_of(frame: bytes) -> int | None:
    return struct.unpack("!I", frame[8:12])[0] if len(frame) >= 14 and frame[6:8] == TAG else None


# --- the two targets' state ---------------------------------------------------------------------


def read_state(driver: Driver) -> list[Update]:
    """Every writable table's entries and default action, and the port metadata, as updates that
    load them into another target."""
    ups: list[Update] = []
    for t in p4names.TABLES:
        if t.const_entries:
            continue
        ups += [Update("insert", e) for e in driver.read_table(t.name)]
        d = driver.read_default(t.name)
        ups.append(Update("set_default", TableEntry(t.name, {}, d.action, dict(d.params))))
    ups += [Update("insert", e) for e in driver.read_table(p4names.PORT_METADATA.name)]
    return ups


EgressState = tuple[float | None, bool, float | None]  # τ (None: ∞), congested, C/R* (None: R* = 0)


def egress_updates(node: Node, states: dict[str, EgressState]) -> list[Update]:
    """set_egress for each egress: τ, congested and C/R*."""
    out = []
    for e, (tau, congested, cr) in sorted(states.items()):
        params = tables.egress_params(tau, congested, cr)
        out.append(
            Update(
                "modify",
                TableEntry(
                    p4names.EGRESS_PARAMS.name, {"egress_port": Exact(node.interfaces[e].port)}, "set_egress", params
                ),
            )
        )
    return out


COUNTERS = p4names.COUNTERS


def counters(driver: Driver) -> dict[str, dict[int, tuple[int, int]]]:
    return {c.name: {i: (v.packets, v.bytes) for i, v in driver.read_counters(c.name).items()} for c in COUNTERS}


def drained(
    driver: Driver,
    settle_s: float,
    limit_s: float = 60.0,
    read: Callable[[Driver], dict[str, dict[int, tuple[int, int]]]] = counters,
    poll_s: float = 1.0,
    quiet_s: Callable[[], float] | None = None,
) -> dict[str, dict[int, tuple[int, int]]]:
    """The counters (`read`) once the target has worked off its backlog: tofino-model forwards a
    few hundred packets a second and may still be processing probes when the last one is sent.
    Read again every `poll_s` after `settle_s` until two reads agree and, where `quiet_s` tells
    how long the wire has been silent, nothing has left the target for QUIET_S: a backlog leaves
    frames on the wire while it drains, so a target that pauses with probes still queued is not
    taken for drained."""
    time.sleep(settle_s)
    last, end = read(driver), time.monotonic() + limit_s
    while time.monotonic() < end:
        time.sleep(poll_s)
        now = read(driver)
        if now == last and (quiet_s is None or quiet_s() >= QUIET_S):
            return now
        last = now
    return last


QUIET_S = 1.5  # the wire's silence that tells a drained target from one that paused (drained)


class Cells:
    """The counter cells a node's packets can move, read from the Tofino by index: its pairs' pids
    for the per-pair counters (a packet is counted at the pid its pairs entry gives, or not at all),
    its own device ports for the per-port ones (a packet leaves by a route, and routes name the
    node's ports), every events cell. Reading these few cells from the device takes a fraction of a
    second; a whole 4096-cell counter is a Sync of the table, seconds each on a loaded model. The
    software switch's counters are read whole, so a cell it moves outside these shows as a
    difference."""

    def __init__(self, topo: Topology, states: dict[str, list[Update]]) -> None:
        self.by_driver: dict[int, dict[str, list[int]]] = {}
        self.topo, self.states = topo, states

    def bind(self, name: str, driver: Driver) -> None:
        pids = sorted(
            {
                int(u.entry.params["pid"])
                for u in self.states[name]
                if u.entry.table == p4names.PAIRS.name and u.kind == "insert"
            }
        )
        ports = sorted(i.port for i in self.topo.node(name).interfaces.values())
        self.by_driver[id(driver)] = {
            c.name: pids if c.size == NUM_PAIRS else ports if c.size == NUM_PORTS else list(range(c.size))
            for c in p4names.COUNTERS
        }

    def read(self, driver: Driver) -> dict[str, dict[int, tuple[int, int]]]:
        return {
            name: {i: (v.packets, v.bytes) for i, v in driver.read_counters(name, idx).items()}
            for name, idx in self.by_driver[id(driver)].items()
        }


def counters_moved(after: dict, before: dict) -> dict[str, dict[int, tuple[int, int]]]:
    """Per counter, the cells that moved between two reads (`counters`), by how much: wrap-safe,
    as the agent takes them (ffs.core.entries.counter_delta)."""
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for name, cells in after.items():
        d = {}
        for i, (p, b) in cells.items():
            p0, b0 = before.get(name, {}).get(i, (0, 0))
            moved = counter_delta(CounterValue(p, b), CounterValue(p0, b0))
            if (moved.packets, moved.bytes) != (0, 0):
                d[i] = (moved.packets, moved.bytes)
        out[name] = d
    return out


# --- the wire ------------------------------------------------------------------------------------


class Wire:
    """Raw sockets on the test side of each device port (the port map's veth2): send a frame into
    a port, collect every frame the target emits, keyed by the probe tag in its source MAC."""

    def __init__(self, port_map: dict[int, str]) -> None:
        self.socks: dict[int, socket.socket] = {}
        for port, ifname in port_map.items():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 << 20)
            s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)  # the kernel takes 802.1Q tags off: get them back
            s.bind((ifname, 0))
            self.socks[port] = s
        self.got: dict[int, list[tuple[int, bytes]]] = {}
        self.other = 0  # frames without a probe tag (the kernel's own, or a target's)
        self.last_s = time.monotonic()  # when the last frame arrived
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._collect, daemon=True)
        self._thread.start()

    def _collect(self) -> None:
        by_fd = {s.fileno(): (p, s) for p, s in self.socks.items()}
        while not self._stop.is_set():
            ready, _, _ = select.select(list(by_fd), [], [], 0.1)
            for fd in ready:
                port, s = by_fd[fd]
                frame, anc, _, addr = s.recvmsg(65535, socket.CMSG_SPACE(20))
                if addr[2] == PACKET_OUTGOING:
                    continue
                self.last_s = time.monotonic()
                for level, kind, data in anc:
                    if (level, kind) == (SOL_PACKET, PACKET_AUXDATA) and len(data) >= 20:
                        status, _, _, _, _, tci, tpid = struct.unpack("=IIIHHHH", data[:20])
                        if status & TP_STATUS_VLAN_VALID:
                            tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID and tpid else 0x8100
                            frame = frame[:12] + struct.pack("!HH", tpid, tci) + frame[12:]
                seq = tag_of(frame)
                if seq is None:
                    self.other += 1
                else:
                    self.got.setdefault(seq, []).append((port, frame))

    def send(self, port: int, frame: bytes) -> None:
        self.socks[port].send(frame)

    def quiet_s(self) -> float:
        """Seconds since the last frame arrived."""
        return time.monotonic() - self.last_s

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        for s in self.socks.values():
            s.close()


def port_map_veths(path: Path) -> dict[int, str]:
    """device port -> the veth PTF and this run use (veth2 of the SDE's port map)."""
    doc = json.loads(path.read_text())
    return {int(p["device_port"]): f"veth{int(p['veth2'])}" for p in doc["PortToVeth"]}


# --- comparing ------------------------------------------------------------------------------------


@dataclass
class Report:
    phase: str
    probes: int = 0
    random: int = 0  # 0 < γ < 1 in the software switch: the draw decides
    mismatches: list[str] = field(default_factory=list)
    counters_equal: bool | None = None
    notes: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not self.mismatches and self.counters_equal is not False

    def line(self) -> str:
        c = {None: "not compared", True: "equal", False: "DIFFER"}[self.counters_equal]
        return (
            f"{self.phase}: {self.probes} probes ({self.random} decided by a random draw), "
            f"{len(self.mismatches)} mismatches, counters {c}" + "".join(f"; {n}" for n in self.notes)
        )


def software_run(
    pipeline: Pipeline, probes: list[Probe], replay: dict[int, bool] | None = None
) -> list[tuple[Result, bool]]:
    """Each probe through the software switch: (Result, decided by a random draw). With `replay`
    (probe -> the Tofino forwarded it), a probe that a random draw decides takes the Tofino's
    decision instead of the software switch's own draw, so that every counter can be compared."""
    drawn = [False]
    frac = pipeline.normalize.gamma_frac
    current = [0]

    def gamma_frac(md, thr):
        drawn[0] = True
        frac(md, thr)
        if replay is not None:
            md.admit_margin = 1 if replay.get(current[0], False) else 0

    pipeline.normalize.gamma_frac = gamma_frac  # type: ignore[method-assign]
    out = []
    t_ns = 0
    for p in probes:
        drawn[0], current[0] = False, p.seq
        t_ns += 1_000_000
        out.append((pipeline.process(p.frame, p.port, t_ns), drawn[0]))
    pipeline.normalize.gamma_frac = frac  # type: ignore[method-assign]
    return out


def hides_gamma(pipeline: Pipeline, uncongested: dict[str, EgressState], node: Node, probe: Probe) -> bool:
    """Whether the egress drops `probe` whatever γ decides (a frame check that finds its bytes
    disagreeing with its IP length, a runt padded on the wire among them): not forwarded, it does
    not say whether γ admitted it, so a phase that replays γ from the Tofino's forwarding leaves it
    out. Run at γ = 1 on a software switch loaded with the Tofino's tables (`hidden_from_gamma`)."""
    return probe.seq in hidden_from_gamma(pipeline, uncongested, node, [probe])


def hidden_from_gamma(
    pipeline: Pipeline, uncongested: dict[str, EgressState], node: Node, probes: list[Probe]
) -> set[int]:
    """The probes (by seq) that `hides_gamma`, all on one software switch: the frame check reads
    only the frame and the tables, and what a probe leaves behind cannot change another's fate at
    γ = 1 (F forgets between probes, FORGETFUL), but for the guard's virtual queues, which no
    timer drains here: the guard is off on this switch, as it is idle on a fresh one (loading a
    switch per probe costs the whole table state each time)."""
    d = LocalDriver(pipeline)
    guard = [
        Update("delete", TableEntry(p4names.EGRESS_QUEUE.name, e.key)) for e in d.read_table(p4names.EGRESS_QUEUE.name)
    ]
    d.write(egress_updates(node, uncongested) + guard)
    return {p.seq for p in probes if pipeline.process(p.frame, p.port, 1_000_000).drop_reason == DROP_MALFORMED}


def compare(
    phase: str,
    probes: list[Probe],
    soft: list[tuple[Result, bool]],
    got: dict[int, list[tuple[int, bytes]]],
    limit: int = 20,
    replayed: bool = False,
) -> Report:
    rep = Report(phase, len(probes))
    for p, (res, drawn) in zip(probes, soft, strict=False):
        seen = got.get(p.seq, [])
        want = [] if res.egress_port is None or res.frame is None else [(res.egress_port, res.frame)]
        if drawn:
            rep.random += 1
            if not replayed and not (seen and want):  # one target's draw dropped it: nothing to compare
                continue
        if seen != want:
            if len(rep.mismatches) < limit:
                rep.mismatches.append(
                    f"probe {p.seq} ({p.kind}) into port {p.port}: {_short(p.frame)}\n"
                    f"  tofino: {_outs(seen)}\n  software switch: "
                    f"{_outs(want) if want else 'dropped (' + str(res.drop_reason) + ')'}"
                    + _first_difference(seen, want)
                )
            else:
                rep.mismatches.append(f"probe {p.seq}")
    return rep


def _short(frame: bytes, n: int = 48) -> str:
    return f"{len(frame)} bytes {frame[:n].hex()}{'...' if len(frame) > n else ''}"


def _outs(outs: list[tuple[int, bytes]]) -> str:
    return ", ".join(f"port {port}: {_short(f)}" for port, f in outs) if outs else "dropped"


def _first_difference(a: list[tuple[int, bytes]], b: list[tuple[int, bytes]]) -> str:
    if len(a) == len(b) == 1 and a[0][0] == b[0][0]:
        x, y = a[0][1], b[0][1]
        at = next((i for i, (u, v) in enumerate(zip(x, y, strict=False)) if u != v), min(len(x), len(y)))
        return f"\n  first difference at byte {at}: tofino {x[at : at + 8].hex()} software {y[at : at + 8].hex()}"
    return ""


# --- the run --------------------------------------------------------------------------------------


@dataclass
class Setup:
    topology: Path
    node: str
    port_map: Path
    switch: str = "localhost:50052"
    seed: int = 1
    packets: int = 3000
    gamma_packets: int | None = None  # per γ; None: enough to tell γ from 1.2 γ and 0.8 γ (ffs.lab.binomial)
    gap_s: float = 0.005
    settle_s: float = 1.0  # at least this long after the last probe, then until the counters and the wire stop moving
    log: Callable[[str], None] = print


def run_agent_install(setup: Setup, work: Path) -> None:
    """ffs-agent --target tofino programs the node from the topology; stopped once it serves."""
    sock = work / "agent.sock"
    log = open(work / "agent.log", "w")
    agent = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ffs.cli.agent",
            f"--topology={setup.topology}",
            f"--node={setup.node}",
            "--target=tofino",
            f"--switch={setup.switch}",
            f"--socket={sock}",
            f"--state-dir={work}/state",
            "--period-ms=100000",
            "--check-period-s=0",
            "--guard-timer-us=0",  # no timer on either target: the model's would run on its own clock
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if agent.poll() is not None:
                raise RuntimeError(f"ffs-agent exited {agent.returncode}: {(work / 'agent.log').read_text()[-600:]}")
            try:
                call(sock, {"op": "status"}, timeout_s=1)
                return
            except (ApiError, OSError, ValueError):
                time.sleep(0.3)
        raise RuntimeError("ffs-agent did not serve within 180 s")
    finally:
        stop_process(agent)
        log.close()


def drained_whole(tofino: Driver, cells: Cells, settle_s: float, wire: Wire) -> dict[str, dict[int, tuple[int, int]]]:
    """Every cell of every counter, once the cells the probes move (`cells`, read by index: a fraction
    of a second) and the wire have stopped moving (`drained`): a whole read is a Sync of each table,
    about 2 s on tofino-model, and the comparison needs it once, not at every poll."""
    drained(tofino, settle_s, read=cells.read, poll_s=0.5, quiet_s=wire.quiet_s)
    return counters(tofino)


def run(setup: Setup) -> list[Report]:
    topo = load(setup.topology)
    node = topo.node(setup.node)
    veths = port_map_veths(setup.port_map)
    ports = tuple(sorted(i.port for i in node.interfaces.values() if i.port in veths))
    with tempfile.TemporaryDirectory(prefix="ffs-differential-") as tmp:
        setup.log(f"differential: ffs-agent installs node {setup.node} from {setup.topology}")
        run_agent_install(setup, Path(tmp))
    # tofino-model stalls for seconds at times (it shares the cores with bf_switchd): a read here is
    # not a control loop, so it may wait out a stall rather than fail the run (one did, at 10 s).
    # sync_always=(): the cells of Cells come from the device one by one (a whole read still Syncs)
    tofino = BfrtDriver(setup.switch, rpc_timeout_s=60.0, sync_always=())
    tofino.connect(timeout_s=60)
    wire = Wire({p: veths[p] for p in ports})
    try:
        state = read_state(tofino)
        cells = Cells(topo, {setup.node: state})
        cells.bind(setup.node, tofino)
        pids = sorted(p.pid for p in pairs_of(node))
        setup.log(f"differential: read back {len(state)} entries; {len(pids)} pairs; probes into ports {list(ports)}")
        tofino.set_lpf_spec(p4names.F_LPF.name, range(p4names.F_LPF.size), FORGETFUL)
        prefixes4 = [r.prefix for r in node.routes if ":" not in r.prefix]
        prefixes6 = [r.prefix for r in node.routes if ":" in r.prefix]

        def fresh() -> tuple[Pipeline, LocalDriver]:
            pipe = Pipeline(setup.seed)
            d = LocalDriver(pipe)
            d.write(state)
            d.set_lpf_spec(p4names.F_LPF.name, range(p4names.F_LPF.size), FORGETFUL)
            return pipe, d

        reports: list[Report] = []
        egresses = sorted(node.fairness)
        # exact: every egress uncongested with C/R* known (Algorithm 4 lines 7-8); congested: τ
        # low enough that γ < 1 for many probes, each random draw replayed from the Tofino's
        # outcome, so that every counter is compared (its probes never lie about their length, so
        # nothing after γ hides the Tofino's decision)
        phases: list[tuple[str, dict[str, EgressState], int]] = [
            ("exact", {e: (None, False, 1.25 + i) for i, e in enumerate(egresses)}, setup.packets),
            ("congested", {e: (1.0 + i, True, None) for i, e in enumerate(egresses)}, max(setup.packets // 3, 50)),
        ]
        for name, states, n in phases:
            ups = egress_updates(node, states)
            tofino.write(ups)
            pipe, soft = fresh()
            soft.write(ups)
            probes = generate(
                setup.seed * 1000 + len(reports), n, ports, prefixes4, prefixes6, malformed=name == "exact"
            )
            if name != "exact":
                hidden = hidden_from_gamma(fresh()[0], phases[0][1], node, probes)
                probes = [p for p in probes if p.seq not in hidden]
            setup.log(f"differential: phase {name}: {n} probes, {setup.gap_s * 1e3:g} ms apart")
            before = counters(tofino)
            wire.got.clear()
            for p in probes:
                wire.send(p.port, p.frame)
                time.sleep(setup.gap_s)
            after = drained_whole(tofino, cells, setup.settle_s, wire)
            replay = {p.seq: bool(wire.got.get(p.seq)) for p in probes} if name != "exact" else None
            soft_out = software_run(pipe, probes, replay)
            rep = compare(name, probes, soft_out, wire.got, replayed=replay is not None)
            dt, ds = counters_moved(after, before), counters_moved(counters(soft), {})
            rep.counters_equal = dt == ds
            for c in dt:
                if dt[c] != ds[c]:
                    rep.notes.append(f"{c.rsplit('.', 1)[-1]}: tofino {dt[c]} software {ds[c]}")
            rep.notes.append(f"seed {setup.seed}")
            if wire.other:
                rep.notes.append(f"{wire.other} untagged frames seen")
            setup.log("differential: " + rep.line())
            reports.append(rep)
        for d in GAMMA_DISTANCES:
            reports.append(gamma_phase(setup, node, tofino, cells, wire, fresh, ports, d))
            setup.log("differential: " + reports[-1].line())
        return reports
    finally:
        wire.close()
        tofino.close()


# γ = 2^(-d/128) at d = 128 (1/2: bit 15 of the draw decides), 66 (0.70, threshold 0xB312) and 203
# (1/3, 0x5547): thresholds with low bits set, so that every bit of the draw decides
GAMMA_DISTANCES = (128, 66, 203)


def gamma_phase(
    setup: Setup, node: Node, tofino: Driver, cells: Cells, wire: Wire, fresh, ports: tuple[int, ...], d: int = 128
) -> Report:
    """One managed pair at γ = 2^(-d/128): its egress congested at τ = 1, the pair's lm chosen so
    that the packet's normalized label is 2^(d/128) (spec §5.4). Each target forwards within the
    ±4σ band of n·γ, n large enough that γ 20 % off leaves it in 99.9 % of runs (ffs.lab.binomial); every
    packet both forward leaves with the same bytes, and with the Tofino's draws replayed, every
    counter agrees."""
    pair = next(
        p
        for p in pairs_of(node)
        if node.interfaces[p.ingress].port in ports
        and node.interfaces[p.egress].port in ports
        and node.interfaces[p.ingress].trust
    )
    ing, egr = node.interfaces[pair.ingress], node.interfaces[pair.egress]
    dst = next(r.prefix for r in node.routes if r.interface == pair.egress and ":" not in r.prefix)
    frame = _tagged(
        ipv4_frame(
            "10.0.9.1", dst.rsplit(".", 1)[0] + ".7", 1000, shim(constants.CODE_ONE, 0, 17, constants.CODE_MAX, 0)
        ),
        0,
    )
    key = {"ingress_port": Exact(ing.port), "egress_port": Exact(egr.port)}

    def set_lm(lm: int) -> Update:
        return Update("modify", TableEntry(p4names.PAIRS.name, key, "set_pair", tables.pair_params(pair.pid, lm)))

    # with lm = 0 and the egress uncongested, the label leaves as rf' = rf + log F: the lm that
    # makes it 2 follows (the estimator forgets, so every copy of the packet reads the same F)
    pipe, soft = fresh()
    soft.write([set_lm(0)] + egress_updates(node, {pair.egress: (None, False, None)}))
    res = pipe.process(frame, ing.port, 1_000_000)
    rf0 = struct.unpack("!H", res.frame[constants.ETH_HDR_LEN + 20 + 2 : constants.ETH_HDR_LEN + 20 + 4])[0]
    gamma = 2.0 ** (-d / constants.CODE_STEPS_PER_OCTAVE)
    ups = [set_lm(rf0 - (constants.CODE_ONE + d))]
    ups += egress_updates(node, {pair.egress: (1.0, True, None)})
    tofino.write(ups)
    pipe, soft = fresh()
    soft.write(ups)
    n = setup.gamma_packets or binomial.packets_to_tell(gamma)
    probes = [Probe(10_000_000 + i, ing.port, _tagged(frame, 10_000_000 + i), f"gamma {gamma:.4f}") for i in range(n)]
    wire.got.clear()
    before = counters(tofino)
    for p in probes:
        wire.send(p.port, p.frame)
        time.sleep(setup.gap_s)
    after = drained_whole(tofino, cells, setup.settle_s, wire)
    soft_out = software_run(pipe, probes)
    rep = compare(f"gamma d={d}", probes, soft_out, wire.got)
    k_t = sum(1 for p in probes if wire.got.get(p.seq))
    k_s = sum(1 for r, _ in soft_out if r.egress_port is not None)
    lo, hi = binomial.bounds(n, gamma)
    rep.notes.append(f"forwarded at γ = {gamma:.4f}: tofino {k_t}, software {k_s} of {n} (4σ: {lo:.0f}..{hi:.0f})")
    for who, k in (("tofino", k_t), ("software switch", k_s)):
        if not lo <= k <= hi:
            rep.mismatches.append(f"{who} forwarded {k} of {n} at γ = {gamma:.4f}, outside {lo:.0f}..{hi:.0f}")
    # the Tofino's draws replayed on a fresh software switch: every counter equal
    pipe, soft = fresh()
    soft.write(ups)
    software_run(pipe, probes, {p.seq: bool(wire.got.get(p.seq)) for p in probes})
    dt, ds = counters_moved(after, before), counters_moved(counters(soft), {})
    rep.counters_equal = dt == ds
    for c in dt:
        if dt[c] != ds[c]:
            rep.notes.append(f"{c.rsplit('.', 1)[-1]}: tofino {dt[c]} software {ds[c]}")
    return rep


def default_topology(chip: str) -> Path:
    """The node on the chip's model ports (Tofino 2's front-panel device ports start at 8)."""
    return Path(
        "topologies", "differential.yaml" if chip_of(chip) == "tofino" else f"differential-{chip_of(chip)}.yaml"
    )


def main(argv: Iterable[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.lab.differential", description=__doc__.split("\n\n")[0])
    ap.add_argument("--chip", type=chip_of, default="tofino", help=f"the model's chip: {' or '.join(CHIPS)}")
    ap.add_argument(
        "--topology", type=Path, help="default: topologies/differential.yaml, on tofino2 differential-tofino2.yaml"
    )
    ap.add_argument("--node", default="dut")
    ap.add_argument("--port-map", type=Path, help="default: the chip's, ptf-tests/port_maps/<chip>-model.json")
    ap.add_argument("--switch", default="localhost:50052", help="bf_switchd's BF-Runtime address")
    ap.add_argument("--packets", type=int, default=3000)
    ap.add_argument(
        "--gamma-packets",
        type=int,
        default=None,
        help="per γ (default: enough that γ 20 %% off fails in 99.9 %% of runs)",
    )
    ap.add_argument("--seed", type=int, default=None, help="default: a new one each run, printed (this reproduces it)")
    ap.add_argument(
        "--gap-ms", type=float, default=5.0, help="between probes (tofino-model forwards a few hundred a second)"
    )
    ap.add_argument("--start-sde", action="store_true", help="start tofino-model and bf_switchd with the SDE's scripts")
    ap.add_argument("--log-dir", type=Path, default=Path("build/differential-logs"))
    ap.add_argument("--json", action="store_true", help="print the reports as JSON")
    a = ap.parse_args(list(argv) if argv is not None else None)
    a.topology = a.topology or default_topology(a.chip)
    a.port_map = a.port_map or default_port_map(a.chip)
    if a.seed is None:
        a.seed = random.SystemRandom().randrange(1, 1 << 31)
    print(f"differential: seed {a.seed} (--seed {a.seed} reproduces this run)", file=sys.stderr, flush=True)
    setup = Setup(
        a.topology,
        a.node,
        a.port_map,
        a.switch,
        a.seed,
        a.packets,
        a.gamma_packets,
        a.gap_ms / 1e3,
        log=lambda s: print(s, file=sys.stderr, flush=True),
    )
    sde = None
    try:
        if a.start_sde:
            why = sde_missing("ffs", a.chip)
            if why:
                print(f"differential: {why}", file=sys.stderr)
                return 2
            veths = 1 + max(
                max(int(p["veth1"]), int(p["veth2"])) for p in json.loads(a.port_map.read_text())["PortToVeth"]
            )
            setup_veths = Path(os.environ["SDE_INSTALL"], "bin", "veth_setup.sh")
            subprocess.run([str(setup_veths), str(veths + veths % 2)], check=True, capture_output=True)
            setup.log(f"differential: starting tofino-model and bf_switchd (logs in {a.log_dir})")
            sde = Sde("ffs", a.log_dir, a.chip, port_map=a.port_map.resolve())
            sde.start()
        reports = run(setup)
    except Exception as e:  # noqa: BLE001 - one line for the operator, the logs hold the rest
        print(f"differential: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    finally:
        if sde is not None:
            sde.stop()
    if a.json:
        print(json.dumps([r.__dict__ for r in reports], indent=1))
    else:
        for r in reports:
            print(r.line())
            for m in r.mismatches:
                print("  " + m)
    return 0 if all(r.ok() for r in reports) else 1


if __name__ == "__main__":
    sys.exit(main())
