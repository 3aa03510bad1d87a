# SPDX-License-Identifier: Apache-2.0
"""What the agent writes into a switch for one node of a topology: the whole static state.

Everything comes from the topology file and the generators of `ffs.core.tables`; the result is a list
of BF-Runtime-style updates the agent applies as one batch, so a node is programmed completely or
not at all.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace

from ffs.core import constants, p4names, tables
from ffs.core.entries import Exact, LpfSpec, Lpm, TableEntry, TimerSpec, Update, UpdateKind
from ffs.core.topology import Node


@dataclass(frozen=True)
class LpfConfig:
    """The F estimator's time constants and output scale-down. A time constant given here is every
    pair's; None (the default) sizes one per pair (`for_node`: `pair_time_constant_ns`, spec §4),
    and `time_constant_ns` becomes the node's longest, the smallest share's. The scale-down comes
    from that longest time constant and the fastest port, so that no admitted label saturates F at
    line rate; once sized it is kept, and a matrix change sizes the pairs within it. Every user --
    ffs-agent, virtual time, the laboratory -- sizes the estimator through here."""

    time_constant_ns: float | None = None
    scale_down: int | None = None
    # sized per pair: (pid, τ_F in ns), sorted; None: time_constant_ns for every pair
    pairs: tuple[tuple[int, float], ...] | None = None

    def for_node(self, node: Node) -> LpfConfig:
        """Sized for a node and its matrix (node.fairness)."""
        if self.pairs is None and self.time_constant_ns is not None:  # one time constant, given
            tc = self.time_constant_ns
            return LpfConfig(tc, self.scale_down if self.scale_down is not None else _scale_down(node, tc))
        scale_down = self.scale_down
        if scale_down is None:
            scale_down = _scale_down(node, estimator_time_constant_ns(node))
        old = dict(self.pairs or ())
        sized = {}
        longest = estimator_time_constant_ns(node, scale_down)  # the smallest share's; a pair without one gets it
        for p in pairs_of(node):
            share = node.share(p.ingress, p.egress)
            tc = pair_time_constant_ns(node, share, scale_down) if share > 0 else longest
            was = old.get(p.pid)
            # a pair keeps its time constant within an eighth: a new spec clears its estimator (§8)
            sized[p.pid] = was if was is not None and abs(tc / was - 1) <= RESIZE_TOLERANCE else tc
        return LpfConfig(max(sized.values(), default=longest), scale_down, tuple(sorted(sized.items())))

    def tc(self, pid: int) -> float:
        """The time constant of a pair's estimator (ns)."""
        if self.time_constant_ns is None:
            raise ValueError("LpfConfig: size the estimator for a node first (for_node)")
        if self.pairs is not None:
            return dict(self.pairs).get(pid, self.time_constant_ns)
        return self.time_constant_ns

    def spec(self, pid: int | None = None) -> LpfSpec:
        """The filter's spec for a pair (None: the node's longest): no output scale-down, the
        weights carry it (`static_updates`): the filter's state is a 32-bit register that
        saturates before any output shift applies."""
        if self.scale_down is None or self.time_constant_ns is None:
            raise ValueError("LpfConfig.spec: size the estimator for a node first (for_node)")
        tc = self.time_constant_ns if pid is None else self.tc(pid)
        return LpfSpec("RATE", tc, tc, 0)

    def by_spec(self, pids: list[int]) -> dict[float, list[int]]:
        """The pairs grouped by their time constant (one driver call writes a group)."""
        out: dict[float, list[int]] = {}
        for pid in pids:
            out.setdefault(self.tc(pid), []).append(pid)
        return out


# A pair keeps its estimator's time constant when a matrix change moves its sizing by at most this
# fraction: a new spec clears the index's state, so the pair would restart from F = 0.
RESIZE_TOLERANCE = 1 / 8


def _scale_down(node: Node, tc_ns: float) -> int:
    fastest = max((i.speed for i in node.interfaces.values()), default=0.0)
    return tables.lpf_scale_down_for(fastest, tc_ns) if fastest > 0 else constants.LPF_SCALE_DOWN


# Frames of the node's largest size its smallest share carries per time constant. The LPF's output
# includes the packet that reads it (tofino-model, and the hardware it models, add x before the
# output), so a pair reads F high by one packet's weight in ρ·τ_F (Poisson arrivals; half of it for
# evenly spaced ones): at 64 frames per τ_F, 1.6 % at the smallest share and less for every
# larger one (docs/spec.md §10).
LPF_PACKETS = 64
# Tofino's LPF holds a time constant of up to 2^32 clock cycles (3.4 s on Tofino 1, 4.3 s on Tofino
# 2); beyond, the driver wraps it silently. A share that would need more gets this, and fewer frames.
LPF_TIME_CONSTANT_MAX_NS = 2e9


def largest_frame_bits(node: Node) -> float:
    """The line-rate bits of the largest frame the node's ports carry (`tables.max_frame_len` of
    its largest IP MTU: its ports drop any longer frame, spec §4), with preamble and gap."""
    mtu = max((i.mtu for i in node.interfaces.values()), default=1500)
    return tables.wire_len(tables.max_frame_len(mtu)) * 8.0


def smallest_share(node: Node, fairness: dict[str, dict[str, float]] | None = None) -> float | None:
    """The smallest non-zero share the data plane enforces (scaled to its egress's target)."""
    n = node if fairness is None else replace(node, fairness=fairness)
    shares = [n.share(i, e) for e, col in n.fairness.items() for i, m in col.items() if m > 0]
    return min(shares) if shares else None


def estimator_time_constant_ns(node: Node, scale_down: int | None = None) -> float:
    """The node's longest estimator time constant: its smallest share's (`pair_time_constant_ns`)."""
    return pair_time_constant_ns(node, smallest_share(node) or 0.0, scale_down)


def pair_time_constant_ns(node: Node, share_bps: float, scale_down: int | None = None) -> float:
    """A pair's F estimator time constant (spec §4): LPF_PACKETS frames of the node's largest size
    at the pair's share, at least the 1 ms Tofino default (docs/spec.md §8), at most
    LPF_TIME_CONSTANT_MAX_NS, and, with a fixed scale-down, at most what keeps a pair at the
    fastest port's line rate below half the 32-bit F range (2 units per bit/s per second of time
    constant: 2^WEIGHT_SHIFT/8/2^scale_down, ffs.core.tables.lpf_units_per_bps)."""
    m = share_bps
    want = LPF_PACKETS * largest_frame_bits(node) / m if m > 0 else 0.0
    fastest = max((i.speed for i in node.interfaces.values()), default=0.0)
    cap = (
        (1 << 31) / (fastest * tables.lpf_units_per_bps(1e9, scale_down))
        if fastest > 0 and scale_down is not None
        else float("inf")
    )
    tc_s = min(max(want, constants.LPF_TIME_CONSTANT_NS * 1e-9), LPF_TIME_CONSTANT_MAX_NS * 1e-9, cap)
    return tc_s * 1e9


def frames_per_time_constant(node: Node, lpf: LpfConfig, fairness: dict[str, dict[str, float]] | None = None) -> float:
    """The fewest frames of the node's largest size a pair's share carries per its estimator's time
    constant: the estimator reads that pair at its share high by about 1/this (LPF_PACKETS)."""
    n = node if fairness is None else replace(node, fairness=fairness)
    if lpf.time_constant_ns is None:
        return float("inf")
    counts = [
        share * lpf.tc(p.pid) * 1e-9 / largest_frame_bits(n)
        for p in pairs_of(n)
        if (share := n.share(p.ingress, p.egress)) > 0
    ]
    return min(counts, default=float("inf"))


@dataclass(frozen=True)
class Pair:
    pid: int
    ingress: str
    egress: str
    ingress_port: int
    egress_port: int


def pairs_of(node: Node, fairness: dict[str, dict[str, float]] | None = None) -> list[Pair]:
    """Every (ingress, egress) pair the node manages: all ingresses toward each egress that has a
    fairness column (an ingress without an entry has M = 0). A pair's pid depends only on the two
    interfaces (pid = egress index · n + ingress index), so matrix changes never renumber pairs."""
    fairness = node.fairness if fairness is None else fairness
    idx = interface_index(node)
    n = len(idx)
    if n * n > constants.NUM_PAIRS:
        raise ValueError(
            f"node {node.name}: {n} interfaces need {n * n} pairs, the data plane has {constants.NUM_PAIRS}"
        )
    out = []
    for egress in sorted(fairness):
        for ingress in sorted(node.interfaces):
            pid = (idx[egress] - 1) * n + idx[ingress] - 1
            out.append(Pair(pid, ingress, egress, node.interfaces[ingress].port, node.interfaces[egress].port))
    return out


def interface_index(node: Node) -> dict[str, int]:
    """Each interface's 1-based index in name order: the pairs' numbering."""
    return {name: k + 1 for k, name in enumerate(sorted(node.interfaces))}


def port_updates(node: Node) -> list[Update]:
    out = []
    for _, i in sorted(node.interfaces.items()):
        out.append(
            Update(
                "insert",
                TableEntry(
                    p4names.PORT_METADATA.name,
                    {p4names.PORT_METADATA.key.name: Exact(i.port)},
                    None,
                    {"trust": int(i.trust), "insert": int(i.insert)},
                ),
            )
        )
        if i.strip:
            out.append(
                Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(i.port)}, "strip_shim"))
            )
        # no shim inserted where it would take a packet beyond this port's MTU (spec §2)
        out += [Update("insert", e) for e in tables.shim_room_entries(i.port, i.mtu)]
        # a claim no frame through this port's MAC can make is dropped before the estimator (spec §4)
        out += [Update("insert", e) for e in tables.claim_limit_entries(i.port, i.mtu)]
    return out


def route_updates(node: Node) -> list[Update]:
    out = []
    for r in node.routes:
        net = ipaddress.ip_network(r.prefix)
        table = p4names.IPV4_ROUTES if net.version == 4 else p4names.IPV6_ROUTES
        port = node.interfaces[r.interface].port
        out.append(
            Update(
                "insert",
                TableEntry(
                    table.name, {"dst_addr": Lpm(int(net.network_address), net.prefixlen)}, "route", {"port": port}
                ),
            )
        )
    return out


def pair_entry(m_bps: float, p: Pair, lpf: LpfConfig, kind: UpdateKind = "insert") -> Update:
    if lpf.scale_down is None or lpf.time_constant_ns is None:
        raise ValueError("pair_entry: size the estimator for the node first (LpfConfig.for_node)")
    lm = tables.lm_code(m_bps, lpf.tc(p.pid), lpf.scale_down)
    return Update(
        kind,
        TableEntry(
            p4names.PAIRS.name,
            {"ingress_port": Exact(p.ingress_port), "egress_port": Exact(p.egress_port)},
            "set_pair",
            tables.pair_params(p.pid, lm),
        ),
    )


def egress_entry(port: int, params: dict[str, int], kind: UpdateKind = "insert") -> Update:
    return Update(kind, TableEntry(p4names.EGRESS_PARAMS.name, {"egress_port": Exact(port)}, "set_egress", params))


def guard_updates(node: Node, timer_ns: int | None) -> list[Update]:
    """The queue guard's entries (spec §7.7): a threshold per managed egress and a timer packet
    draining each; none when the guard is off (`timer_ns` None)."""
    if timer_ns is None:
        return []
    ports = [
        (i.port, i.speed, i.buffer_bytes, i.mtu) for e in sorted(node.fairness) if (i := node.interfaces[e]).speed > 0
    ]
    return [Update("insert", e) for e in tables.guard_entries(ports, timer_ns)]


def guard_threshold_of(node: Node, port: int) -> int | None:
    """The guard's threshold (qhi) of a managed egress port of the node."""
    for e in node.fairness:
        i = node.interfaces[e]
        if i.port == port and i.speed > 0:
            return tables.guard_threshold(i.speed, i.buffer_bytes, i.mtu)
    return None


def guard_timer_period_ns(node: Node) -> int:
    """The guard's timer period for a node (spec §7.7): short enough that one drain step is at most
    1/GUARD_TIMER_STEPS of every managed egress's threshold (a port with a small queue for its
    speed needs it often: 2 MiB at 100 Gb/s is 168 µs), at most GUARD_TIMER_NS, at least 1 µs."""
    period = float(constants.GUARD_TIMER_NS)
    for e in node.fairness:
        i = node.interfaces[e]
        if i.speed > 0:
            qhi = tables.guard_threshold(i.speed, i.buffer_bytes, i.mtu)
            period = min(period, qhi * 8 / i.speed * 1e9 / constants.GUARD_TIMER_STEPS)
    return max(1_000, int(period))


def guard_timer(node: Node, timer_ns: int | None) -> TimerSpec | None:
    """The packet generator's timer for the guard: one packet per managed egress every period."""
    n = sum(1 for e in node.fairness if node.interfaces[e].speed > 0)
    return TimerSpec(timer_ns, n, constants.TIMER_APP_ID) if timer_ns is not None and n else None


def node_updates(node: Node, lpf: LpfConfig, guard_timer_ns: int | None = None) -> list[Update]:
    """The complete static state of a node: ports, routes, pairs, egress params, the queue guard's
    entries (with `guard_timer_ns`, its timer's period), generated tables."""
    lpf = lpf.for_node(node)
    ups = port_updates(node) + route_updates(node)
    ups += [pair_entry(node.share(p.ingress, p.egress), p, lpf) for p in pairs_of(node)]
    idle = tables.egress_params(None, False, None)
    ups += [egress_entry(node.interfaces[e].port, idle) for e in sorted(node.fairness)]
    ups += guard_updates(node, guard_timer_ns)
    ups += tables.static_updates(lpf.scale_down or 0)
    return ups
