# SPDX-License-Identifier: Apache-2.0
"""What the agent writes into a switch for one node of a topology: the whole static state.

Everything comes from the topology file and the generators of `ffs.tables`; the result is a list
of BF-Runtime-style updates the agent applies as one batch, so a node is programmed completely or
not at all.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace

from ffs import constants, p4names, tables
from ffs.entries import Exact, LpfSpec, Lpm, TableEntry, Update, UpdateKind
from ffs.topology import Node


@dataclass(frozen=True)
class LpfConfig:
    """The F estimator's time constant and output scale-down. None (the defaults) derives them for a
    node (`for_node`): the time constant from its shares and MTUs (`estimator_time_constant_ns`),
    the scale-down from the time constant and the fastest port, so that no admitted label
    saturates F at line rate (spec §4). Every user -- ffs-agent, virtual time, the laboratory --
    sizes the estimator through here."""

    time_constant_ns: float | None = None
    scale_down: int | None = None

    def for_node(self, node: Node) -> LpfConfig:
        tc = (
            estimator_time_constant_ns(node, self.scale_down)
            if self.time_constant_ns is None
            else self.time_constant_ns
        )
        if self.scale_down is not None:
            return LpfConfig(tc, self.scale_down)
        fastest = max((i.speed for i in node.interfaces.values()), default=0.0)
        return LpfConfig(tc, tables.lpf_scale_down_for(fastest, tc) if fastest > 0 else constants.LPF_SCALE_DOWN)

    def spec(self) -> LpfSpec:
        """The filter's spec: no output scale-down, the weights carry it (`static_updates`): the
        filter's state is a 32-bit register that saturates before any output shift applies."""
        if self.scale_down is None or self.time_constant_ns is None:
            raise ValueError("LpfConfig.spec: size the estimator for a node first (for_node)")
        return LpfSpec("RATE", self.time_constant_ns, self.time_constant_ns, 0)


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
    """The line-rate bits of the largest frame the node's ports carry: its largest IP MTU with an
    802.1Q tag, Ethernet header, FCS, preamble and gap (spec §4)."""
    mtu = max((i.mtu for i in node.interfaces.values()), default=1500)
    return tables.wire_len(constants.ETH_HDR_LEN + constants.VLAN_TAG_LEN + mtu + constants.FCS_LEN) * 8.0


def smallest_share(node: Node, fairness: dict[str, dict[str, float]] | None = None) -> float | None:
    """The smallest non-zero share the data plane enforces (scaled to its egress's target)."""
    n = node if fairness is None else replace(node, fairness=fairness)
    shares = [n.share(i, e) for e, col in n.fairness.items() for i, m in col.items() if m > 0]
    return min(shares) if shares else None


def estimator_time_constant_ns(node: Node, scale_down: int | None = None) -> float:
    """The F estimator's time constant for a node: LPF_PACKETS frames of its largest size at its
    smallest share, at least the 1 ms Tofino default (docs/spec.md §8), at most
    LPF_TIME_CONSTANT_MAX_NS, and, with a fixed scale-down, at most what keeps a pair at the
    fastest port's line rate below half the 32-bit F range (2 units per bit/s per second of time
    constant: 2^WEIGHT_SHIFT/8/2^scale_down, ffs.tables.lpf_units_per_bps)."""
    m = smallest_share(node)
    want = LPF_PACKETS * largest_frame_bits(node) / m if m else 0.0
    fastest = max((i.speed for i in node.interfaces.values()), default=0.0)
    cap = (
        (1 << 31) / (fastest * tables.lpf_units_per_bps(1e9, scale_down))
        if fastest > 0 and scale_down is not None
        else float("inf")
    )
    tc_s = min(max(want, constants.LPF_TIME_CONSTANT_NS * 1e-9), LPF_TIME_CONSTANT_MAX_NS * 1e-9, cap)
    return tc_s * 1e9


def frames_per_time_constant(node: Node, lpf: LpfConfig, fairness: dict[str, dict[str, float]] | None = None) -> float:
    """How many frames of the node's largest size its smallest share carries per time constant:
    the estimator reads a pair at its share high by about 1/this (LPF_PACKETS)."""
    m = smallest_share(node, fairness)
    if not m or lpf.time_constant_ns is None:
        return float("inf")
    return m * lpf.time_constant_ns * 1e-9 / largest_frame_bits(node)


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
    idx = ifindex_of(node)
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


def ifindex_of(node: Node) -> dict[str, int]:
    return {name: k + 1 for k, name in enumerate(sorted(node.interfaces))}


def port_updates(node: Node) -> list[Update]:
    idx = ifindex_of(node)
    out = []
    for name, i in sorted(node.interfaces.items()):
        out.append(
            Update(
                "insert",
                TableEntry(
                    p4names.PORT_METADATA.name,
                    {p4names.PORT_METADATA.key.name: Exact(i.port)},
                    None,
                    {"ifindex": idx[name], "trust": int(i.trust), "insert": int(i.insert)},
                ),
            )
        )
        if i.strip:
            out.append(
                Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(i.port)}, "strip_shim"))
            )
        # no shim inserted where it would take a packet beyond this port's MTU (spec §2)
        out += [Update("insert", e) for e in tables.shim_room_entries(i.port, i.mtu)]
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
    lm = tables.lm_code(m_bps, lpf.time_constant_ns, lpf.scale_down)
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


def node_updates(node: Node, lpf: LpfConfig) -> list[Update]:
    """The complete static state of a node: ports, routes, pairs, egress params, generated tables."""
    lpf = lpf.for_node(node)
    ups = port_updates(node) + route_updates(node)
    ups += [pair_entry(node.share(p.ingress, p.egress), p, lpf) for p in pairs_of(node)]
    idle = tables.egress_params(None, False, None)
    ups += [egress_entry(node.interfaces[e].port, idle) for e in sorted(node.fairness)]
    ups += tables.static_updates(lpf.scale_down or 0)
    return ups
