# SPDX-License-Identifier: Apache-2.0
"""Topology and scenario files (format: topologies/README.md), loaded and validated.

Every error names the file, the line, the key path and the problem, e.g.
`topologies/x.yaml:12: nodes.n1.fairness.j.i9: unknown interface 'i9'`, and nothing half-loaded
escapes: `load` returns a complete, consistent Topology or raises TopologyError.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from ffs.core import ports as ports_mod
from ffs.core.safeload import LoadError, YamlDoc, read_text
from ffs.core.shares import share_problem
from ffs.core.units import parse_delay, parse_rate


class TopologyError(Exception):
    """A topology file is malformed; the message is one line naming file, line, key and problem."""


@dataclass(frozen=True)
class Interface:
    name: str
    # the line rate FFS manages here, bit/s on the wire (frames with FCS, preamble and gap), the
    # same in both directions: the default target of the egress (spec §9)
    capacity: float
    port: int  # device port on the switch
    # use arriving labels (False: reset them to the default 1.0). The loader's default is True only
    # on links to another FFS node (`peer`): a host could otherwise forge its own label (FFS §XI)
    trust: bool = False
    insert: bool = False  # add the shim to packets arriving without one
    strip: bool = False  # remove the shim from packets leaving here
    peer: str | None = None  # "node.interface" at the other end of a link between FFS nodes
    # a Tofino front-panel port the agent brings up (ffs.core.ports): its name (1/0), FEC and
    # autonegotiation (None: the speed's default); its speed follows from `capacity`
    fp: str | None = None
    fec: str | None = None
    autoneg: str | None = None
    # the port's own line rate (the rate its queue drains, bit/s on the wire); None: the capacity
    speed_bps: float | None = None
    buffer_bytes: int | None = None  # the software switch's queue for this port; None: its default
    mtu: int = 1500  # the largest IP packet the port carries (the F estimator is sized for it, spec §4)
    # the propagation delay of the port's wire, s: the live software switch holds a frame that long
    # after its queue sent it (ffs.switch.delay); the allocator and the Tofino program ignore it
    delay_s: float = 0.0
    # the fraction of its speed the port drains from each time on, in the software switch (a shaper,
    # a lower negotiated rate, 0: a PFC pause; spec §9 item 8): (seconds, factor), by time; () = 1.0
    drain: tuple[tuple[float, float], ...] = ()

    @property
    def local(self) -> bool:
        return self.peer is None

    @property
    def speed(self) -> float:
        return self.capacity if self.speed_bps is None else self.speed_bps


@dataclass(frozen=True)
class Route:
    prefix: str
    interface: str


@dataclass(frozen=True)
class Node:
    name: str
    interfaces: dict[str, Interface]
    fairness: dict[str, dict[str, float]]  # egress -> ingress -> bit/s
    target_factor: float = 1.0
    targets: dict[str, float] = field(default_factory=dict)  # explicit per-egress targets, bit/s
    routes: tuple[Route, ...] = ()

    def target(self, egress: str) -> float:
        """T_j: the explicit target, else target_factor · Σ_i M(i, j) (spec §9)."""
        if egress in self.targets:
            return self.targets[egress]
        return self.target_factor * sum(self.fairness.get(egress, {}).values())

    def share(self, ingress: str, egress: str) -> float:
        """The share the data plane enforces: the matrix column scaled to the egress's target, so
        that Σ_i share = T_j and Lemma 1 (τ ≥ 1) holds. With the defaults (no target, factor 1)
        this is M(i, j) itself; FFS-C85 (factor 0.85) runs every share at 85 % (FFS §VII-A)."""
        col = self.fairness.get(egress, {})
        m = col.get(ingress, 0.0)
        total = sum(col.values())
        return m * self.target(egress) / total if total > 0 else 0.0

    def by_port(self) -> dict[int, Interface]:
        return {i.port: i for i in self.interfaces.values()}


@dataclass(frozen=True)
class Hop:
    node: str
    ingress: str
    egress: str


@dataclass(frozen=True)
class Stream:
    name: str
    path: tuple[Hop, ...]
    demand: float  # bit/s the source sends
    r: float  # initial rate label (bit/s); default: the demand
    f: float  # initial fair-share label (bit/s), f^pre at the first hop; default r (so rf = 1),
    #           or r / rf when the file gives the relative label rf instead
    start: float = 0.0  # s
    stop: float | None = None  # s
    packet_size: int = 1250  # bytes (IP length)
    labelled: bool = True  # False: the source sends without a shim
    ip_len: int | None = None  # the IP length field when it lies (an attack, docs/security.md); None: the truth

    @property
    def rf(self) -> float:
        """The relative label r/f the source puts in the shim (spec §2)."""
        return self.r / self.f


@dataclass(frozen=True)
class Host:
    name: str
    attach: str  # "node.interface": a local interface of an FFS node
    address: str  # CIDR
    gateway: str | None = None

    @property
    def interface(self) -> str:
        return self.attach


@dataclass(frozen=True)
class Topology:
    name: str
    nodes: dict[str, Node]
    streams: tuple[Stream, ...] = ()
    hosts: dict[str, Host] = field(default_factory=dict)
    duration: float | None = None  # scenario length, s
    seed: int = 1
    source: Path | None = None

    def node(self, name: str) -> Node:
        try:
            return self.nodes[name]
        except KeyError:
            raise TopologyError(f"{self.source}: unknown node {name!r} (have: {', '.join(self.nodes)})") from None


# --- loading with line numbers --------------------------------------------------------------


class _Doc(YamlDoc):
    """The file as data with the line of every key path; limits and duplicate keys: ffs.core.safeload."""

    error = TopologyError


def load(path: str | Path) -> Topology:
    path = Path(path)
    try:
        text = read_text(path)
    except LoadError as e:
        raise TopologyError(str(e)) from None
    return _Loader(_Doc(path, text)).topology()


class _Loader:
    def __init__(self, doc: _Doc) -> None:
        self.doc = doc

    def fail(self, path: str, problem: str) -> NoReturn:
        self.doc._fail(path, problem)

    # typed accessors -------------------------------------------------------------------
    def mapping(self, v: Any, path: str) -> dict[str, Any]:
        if not isinstance(v, dict):
            self.fail(path, f"expected a mapping, got {type(v).__name__}")
        return v

    def rate(self, v: Any, path: str) -> float:
        try:
            return parse_rate(v)
        except ValueError as e:
            self.fail(path, str(e))
            raise  # unreachable

    def positive_rate(self, v: Any, path: str) -> float:
        r = self.rate(v, path)
        if r <= 0:
            self.fail(path, f"must be positive, got {v!r}")
        return r

    def number(self, v: Any, path: str, lo: float = -math.inf, hi: float = math.inf) -> float:
        """A finite number in [lo, hi]."""
        x = math.nan
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            try:
                x = float(v)
            except OverflowError:  # an integer beyond the float range
                v = f"an integer of {len(str(abs(v)))} digits"
        if not (math.isfinite(x) and lo <= x <= hi):
            self.fail(path, f"expected a finite number in [{lo:g}, {hi:g}], got {v!r}")
        return x

    def name(self, v: Any, path: str, what: str = "an interface name") -> str:
        """A name written as a YAML scalar: strings, and integers for numbered interfaces ("1")."""
        if isinstance(v, bool) or not isinstance(v, (str, int)):
            self.fail(path, f"expected {what}, got {v!r}")
        return str(v)

    def boolean(self, v: Any, path: str) -> bool:
        if not isinstance(v, bool):
            self.fail(path, f"expected true or false, got {v!r}")
        return v

    def check_keys(
        self, m: dict[str, Any], path: str, allowed: set[str], required: set[str] | frozenset[str] = frozenset()
    ) -> None:
        for k in m:
            if k not in allowed:
                self.fail(f"{path}.{k}" if path else k, f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for k in required:
            if k not in m:
                self.fail(path or k, f"missing key {k!r}")

    # the document ----------------------------------------------------------------------
    def topology(self) -> Topology:
        d = self.mapping(self.doc.data, "")
        self.check_keys(d, "", {"name", "nodes", "streams", "hosts", "duration", "seed"}, {"nodes"})
        nodes_raw = self.mapping(d["nodes"], "nodes")
        if not nodes_raw:
            self.fail("nodes", "no nodes")
        nodes = {n: self.node(n, v, f"nodes.{n}") for n, v in nodes_raw.items()}
        self.check_peers(nodes)
        hosts = {
            h: self.host(h, v, f"hosts.{h}", nodes) for h, v in self.mapping(d.get("hosts", {}) or {}, "hosts").items()
        }
        streams_raw = d.get("streams", []) or []
        if not isinstance(streams_raw, list):
            self.fail("streams", "expected a list")
        streams = tuple(self.stream(v, f"streams[{i}]", nodes) for i, v in enumerate(streams_raw))
        seen: set[str] = set()  # a set, not list.index: linear in the number of streams
        for i, s in enumerate(streams):
            if s.name in seen:
                self.fail(f"streams[{i}].name", f"duplicate stream name {s.name!r}")
            seen.add(s.name)
        duration = self.number(d["duration"], "duration", 0) if "duration" in d else None
        seed = int(self.number(d.get("seed", 1), "seed", 0))
        path = Path(self.doc.path)
        return Topology(str(d.get("name", path.stem)), nodes, streams, hosts, duration, seed, path)

    def node(self, name: str, raw: Any, path: str) -> Node:
        m = self.mapping(raw, path)
        self.check_keys(m, path, {"interfaces", "fairness", "target_factor", "targets", "routes"}, {"interfaces"})
        ifs: dict[str, Interface] = {}
        ports: dict[int, str] = {}
        for iname, iraw in self.mapping(m["interfaces"], f"{path}.interfaces").items():
            ifs[iname] = self.interface(iname, iraw, f"{path}.interfaces.{iname}", ports)
        if not ifs:
            self.fail(f"{path}.interfaces", "no interfaces")
        fairness = self.fairness(m, path, ifs)
        target_factor = self.number(m.get("target_factor", 1.0), f"{path}.target_factor", 0.0, 1.0)
        if target_factor <= 0:
            self.fail(f"{path}.target_factor", "must be above 0 (T_j = factor · Σ_i M(i, j))")
        targets: dict[str, float] = {}
        for ename, rate in self.mapping(m.get("targets", {}) or {}, f"{path}.targets").items():
            if ename not in ifs:
                self.fail(f"{path}.targets.{ename}", f"unknown interface {ename!r}")
            targets[ename] = self.positive_rate(rate, f"{path}.targets.{ename}")
            if targets[ename] > ifs[ename].capacity:
                self.fail(f"{path}.targets.{ename}", "target above the interface capacity")
        self.check_fairness_sums(fairness, path, ifs, targets)
        return Node(name, ifs, fairness, target_factor, targets, self.routes(m, path, ifs))

    def interface(self, iname: str, iraw: Any, ip: str, ports: dict[int, str]) -> Interface:
        """One interface of a node; `ports` (device port -> interface) catches a port used twice."""
        im = self.mapping(iraw, ip)
        self.check_keys(
            im,
            ip,
            {
                "capacity",
                "speed",
                "buffer",
                "delay",
                "drain",
                "mtu",
                "port",
                "trust",
                "insert",
                "strip",
                "peer",
                "fp",
                "fec",
                "autoneg",
            },
            {"capacity", "port"},
        )
        if isinstance(im["port"], bool) or not isinstance(im["port"], int):
            self.fail(f"{ip}.port", f"expected an integer device port, got {im['port']!r}")
        port = int(self.number(im["port"], f"{ip}.port", 0, 511))
        if port in ports:
            self.fail(f"{ip}.port", f"port {port} already used by interface {ports[port]!r}")
        ports[port] = iname
        peer = im.get("peer")
        if peer is not None and (not isinstance(peer, str) or peer.count(".") != 1):
            self.fail(f"{ip}.peer", f"expected 'node.interface', got {peer!r}")
        capacity = self.positive_rate(im["capacity"], f"{ip}.capacity")
        speed = self.positive_rate(im["speed"], f"{ip}.speed") if "speed" in im else None
        if speed is not None and capacity > speed * (1 + 1e-9):
            self.fail(f"{ip}.capacity", f"{capacity:.6g} bit/s is above the port's speed {speed:.6g} bit/s")
        mtu = 1500
        if "mtu" in im:
            if isinstance(im["mtu"], bool) or not isinstance(im["mtu"], int):
                self.fail(f"{ip}.mtu", f"expected an IP MTU in bytes as an integer, got {im['mtu']!r}")
            mtu = int(self.number(im["mtu"], f"{ip}.mtu", 68, 65535))
        buffer = None
        if "buffer" in im:
            if isinstance(im["buffer"], bool) or not isinstance(im["buffer"], int):
                self.fail(f"{ip}.buffer", f"expected bytes as an integer, got {im['buffer']!r}")
            buffer = int(self.number(im["buffer"], f"{ip}.buffer", 1, 1 << 32))
        delay = 0.0
        if "delay" in im:
            try:
                delay = parse_delay(im["delay"])
            except ValueError as e:
                self.fail(f"{ip}.delay", str(e))
        drain = self.drain(im["drain"], f"{ip}.drain") if "drain" in im else ()
        fp, fec, autoneg = im.get("fp"), im.get("fec"), im.get("autoneg")
        self.check_front_panel(ip, port, capacity if speed is None else speed, fp, fec, autoneg, mtu)
        return Interface(
            iname,
            capacity,
            port,
            self.boolean(im.get("trust", peer is not None), f"{ip}.trust"),
            self.boolean(im.get("insert", False), f"{ip}.insert"),
            self.boolean(im.get("strip", False), f"{ip}.strip"),
            peer,
            fp,
            fec,
            autoneg,
            speed,
            buffer,
            mtu,
            delay,
            drain,
        )

    def drain(self, v: Any, path: str) -> tuple[tuple[float, float], ...]:
        """`drain: 0.8` (from the start), or `[{at: 0.3, factor: 0}, {at: 0.5, factor: 1}]`."""
        if not isinstance(v, list):
            return ((0.0, self.number(v, path, 0.0, 1.0)),)
        out = []
        for k, step in enumerate(v):
            m = self.mapping(step, f"{path}[{k}]")
            self.check_keys(m, f"{path}[{k}]", {"at", "factor"}, {"at", "factor"})
            out.append(
                (
                    self.number(m["at"], f"{path}[{k}].at", 0.0),
                    self.number(m["factor"], f"{path}[{k}].factor", 0.0, 1.0),
                )
            )
        if [t for t, _ in out] != sorted({t for t, _ in out}):
            self.fail(path, "the times must increase")
        return tuple(out)

    def check_front_panel(self, ip: str, port: int, speed: float, fp: Any, fec: Any, autoneg: Any, mtu: int) -> None:
        if fp is not None:
            if not isinstance(fp, str) or not ports_mod.valid_fp(fp):
                self.fail(f"{ip}.fp", f"expected a front-panel port such as 1/0, got {fp!r}")
            try:
                ports_mod.spec(port, speed, fec, autoneg, mtu)
            except ports_mod.PortError as e:
                self.fail(ip, str(e))
        elif fec is not None or autoneg is not None:
            self.fail(ip, "fec and autoneg configure a front-panel port: give its name too (fp: 1/0)")

    def fairness(self, m: dict[str, Any], path: str, ifs: dict[str, Interface]) -> dict[str, dict[str, float]]:
        fairness: dict[str, dict[str, float]] = {}
        for ename, col in self.mapping(m.get("fairness", {}) or {}, f"{path}.fairness").items():
            ep = f"{path}.fairness.{ename}"
            if ename not in ifs:
                self.fail(ep, f"unknown interface {ename!r}")
            fairness[ename] = {}
            for iname, rate in self.mapping(col, ep).items():
                if iname not in ifs:
                    self.fail(f"{ep}.{iname}", f"unknown interface {iname!r}")
                fairness[ename][iname] = self.rate(rate, f"{ep}.{iname}")
        return fairness

    def check_fairness_sums(
        self, fairness: dict[str, dict[str, float]], path: str, ifs: dict[str, Interface], targets: dict[str, float]
    ) -> None:
        for ename, col in fairness.items():
            total = sum(col.values())
            for iname, rate in col.items():
                problem = share_problem(iname, ename, rate, total)
                if problem:
                    self.fail(f"{path}.fairness.{ename}.{iname}", problem)
            if total <= 0:
                self.fail(f"{path}.fairness.{ename}", "entries sum to 0: a managed egress needs a positive share")
            limit = targets.get(ename, ifs[ename].capacity)
            if total > limit * (1 + 1e-9):
                what = "target" if ename in targets else "capacity"
                self.fail(
                    f"{path}.fairness.{ename}",
                    f"entries sum to {total:.6g} bit/s, above the egress {what} {limit:.6g} bit/s",
                )

    def routes(self, m: dict[str, Any], path: str, ifs: dict[str, Interface]) -> tuple[Route, ...]:
        routes = []
        raw_routes = m.get("routes", []) or []
        if not isinstance(raw_routes, list):
            self.fail(f"{path}.routes", "expected a list")
        for i, r in enumerate(raw_routes):
            rp = f"{path}.routes[{i}]"
            rm = self.mapping(r, rp)
            self.check_keys(rm, rp, {"prefix", "interface"}, {"prefix", "interface"})
            try:
                ipaddress.ip_network(str(rm["prefix"]), strict=True)
            except ValueError as e:
                self.fail(f"{rp}.prefix", f"bad prefix: {e}")
            iface = self.name(rm["interface"], f"{rp}.interface")
            if iface not in ifs:
                self.fail(f"{rp}.interface", f"unknown interface {iface!r}")
            routes.append(Route(str(rm["prefix"]), iface))
        return tuple(routes)

    def check_peers(self, nodes: dict[str, Node]) -> None:
        for n in nodes.values():
            for i in n.interfaces.values():
                if i.peer is None:
                    continue
                pn, pi = i.peer.split(".")
                p = f"nodes.{n.name}.interfaces.{i.name}.peer"
                if pn not in nodes or pi not in nodes[pn].interfaces:
                    self.fail(p, f"unknown peer {i.peer!r}")
                back = nodes[pn].interfaces[pi].peer
                if back != f"{n.name}.{i.name}":
                    self.fail(p, f"peer {i.peer!r} does not point back (it says {back!r})")

    def host(self, name: str, raw: Any, path: str, nodes: dict[str, Node]) -> Host:
        m = self.mapping(raw, path)
        self.check_keys(m, path, {"attach", "address", "gateway"}, {"attach", "address"})
        attach = str(m["attach"])
        if attach.count(".") != 1:
            self.fail(f"{path}.attach", f"expected 'node.interface', got {attach!r}")
        nn, ii = attach.split(".")
        if nn not in nodes or ii not in nodes[nn].interfaces:
            self.fail(f"{path}.attach", f"unknown interface {attach!r}")
        if nodes[nn].interfaces[ii].peer is not None:
            self.fail(
                f"{path}.attach", f"{attach} links to {nodes[nn].interfaces[ii].peer}: hosts attach to local interfaces"
            )
        try:
            ipaddress.ip_interface(str(m["address"]))
        except ValueError as e:
            self.fail(f"{path}.address", f"bad address: {e}")
        gw = m.get("gateway")
        if gw is not None:
            try:
                ipaddress.ip_address(str(gw))
            except ValueError as e:
                self.fail(f"{path}.gateway", f"bad address: {e}")
        return Host(name, attach, str(m["address"]), None if gw is None else str(gw))

    def stream(self, raw: Any, path: str, nodes: dict[str, Node]) -> Stream:
        m = self.mapping(raw, path)
        self.check_keys(
            m,
            path,
            {"name", "path", "demand", "r", "f", "rf", "start", "stop", "packet_size", "labelled", "ip_len"},
            {"name", "path", "demand"},
        )
        hops = self.hops(m["path"], path, nodes)
        demand = self.positive_rate(m["demand"], f"{path}.demand")
        r = self.positive_rate(m["r"], f"{path}.r") if "r" in m else demand
        if "rf" in m:
            if "f" in m:
                self.fail(f"{path}.rf", "give the fair-share label f or the relative label rf, not both")
            rf = self.number(m["rf"], f"{path}.rf", 0.0)
            if not 0 < rf < math.inf:
                self.fail(f"{path}.rf", f"must be a positive finite ratio, got {m['rf']!r}")
            f = r / rf
        else:
            f = self.positive_rate(m["f"], f"{path}.f") if "f" in m else r
        start = self.number(m.get("start", 0.0), f"{path}.start", 0.0)
        stop = self.number(m["stop"], f"{path}.stop", start) if m.get("stop") is not None else None
        size = int(self.number(m.get("packet_size", 1250), f"{path}.packet_size", 28, 9216))
        labelled = self.boolean(m.get("labelled", True), f"{path}.labelled")
        ip_len = None
        if "ip_len" in m:  # a 16-bit field: IPv4 total length (spec §4)
            v = m["ip_len"]
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 0xFFFF:
                self.fail(
                    f"{path}.ip_len", f"expected an integer in [0, 65535] (the IPv4 total length field), got {v!r}"
                )
            ip_len = v
        if not labelled:
            given = [k for k in ("r", "f", "rf") if k in m]
            if given:  # the source sends no shim: a label here would be silently meaningless
                self.fail(f"{path}.{given[0]}", "a stream with labelled: false carries no labels (drop r, f and rf)")
        name = self.name(m["name"], f"{path}.name", "a stream name")
        return Stream(name, tuple(hops), demand, r, f, start, stop, size, labelled, ip_len)

    def hops(self, raw: Any, path: str, nodes: dict[str, Node]) -> list[Hop]:
        """A stream's path: hops that exist, have a fairness column, and follow each other's links."""
        hops = []
        if not isinstance(raw, list) or not raw:
            self.fail(f"{path}.path", "expected a non-empty list of hops")
        for k, h in enumerate(raw):
            hp = f"{path}.path[{k}]"
            hm = self.mapping(h, hp)
            self.check_keys(hm, hp, {"node", "ingress", "egress"}, {"node", "ingress", "egress"})
            node = nodes.get(self.name(hm["node"], f"{hp}.node", "a node name"))
            if node is None:
                self.fail(f"{hp}.node", f"unknown node {hm['node']!r}")
            ends = {}
            for role in ("ingress", "egress"):
                ends[role] = self.name(hm[role], f"{hp}.{role}")
                if ends[role] not in node.interfaces:
                    self.fail(f"{hp}.{role}", f"unknown interface {ends[role]!r} on node {node.name!r}")
            if ends["egress"] not in node.fairness:
                # the data plane bypasses FFS toward an egress without a column: no FFS allocation
                self.fail(f"{hp}.egress", f"node {node.name!r} has no fairness column for egress {ends['egress']!r}")
            hops.append(Hop(node.name, ends["ingress"], ends["egress"]))
        for k in range(1, len(hops)):
            prev = nodes[hops[k - 1].node].interfaces[hops[k - 1].egress]
            if prev.peer != f"{hops[k].node}.{hops[k].ingress}":
                self.fail(f"{path}.path[{k}]", f"does not follow hop {k - 1}: its egress links to {prev.peer!r}")
        return hops


def wide_text(ports: int, capacity: str = "100Mbps", share: str = "1Mbps") -> str:
    """A topology of one switch `n` with `ports` interfaces (device ports 1..ports) and a fairness
    column for every egress: ports² pairs (64 ports fill a Tofino's 4096). For scale tests and
    benchmarks of the agent."""
    names = [f"p{i}" for i in range(1, ports + 1)]
    lines = ["name: wide", "nodes:", "  n:", "    interfaces:"]
    lines += [f"      {n}: {{capacity: {capacity}, port: {i}}}" for i, n in enumerate(names, 1)]
    lines += ["    fairness:"]
    lines += [f"      {e}: {{{', '.join(f'{i}: {share}' for i in names if i != e)}}}" for e in names]
    lines += ["    routes:"] + [
        f"      - {{prefix: 10.{i // 256}.{i % 256}.0/24, interface: {n}}}" for i, n in enumerate(names, 1)
    ]
    return "\n".join(lines) + "\n"
