"""What the agent writes into a switch for one node of a topology: the whole static state.

Everything comes from the topology file and the generators of `ffs.tables`; the result is a list
of BF-Runtime-style updates the agent applies as one batch, so a node is programmed completely or
not at all.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ffs import constants
from ffs import p4names
from ffs import tables
from ffs.entries import Exact, Lpm, LpfSpec, TableEntry, Update, UpdateKind
from ffs.topology import Node


@dataclass(frozen=True)
class LpfConfig:
    """The F estimator's time constant and output scale-down. `scale_down=None` (the default) sizes
    it for the node's fastest port (`for_node`), so that no admitted label saturates F at line
    rate (spec §4)."""

    time_constant_ns: float = constants.LPF_TIME_CONSTANT_NS
    scale_down: int | None = None

    def for_node(self, node: Node) -> "LpfConfig":
        if self.scale_down is not None:
            return self
        fastest = max((i.capacity for i in node.interfaces.values()), default=0.0)
        s = tables.lpf_scale_down_for(fastest, self.time_constant_ns) if fastest > 0 else constants.LPF_SCALE_DOWN
        return LpfConfig(self.time_constant_ns, s)

    def spec(self) -> LpfSpec:
        if self.scale_down is None:
            raise ValueError("LpfConfig.spec: size the scale-down for a node first (for_node)")
        return LpfSpec("RATE", self.time_constant_ns, self.time_constant_ns, self.scale_down)


# packets of the smallest share the F estimator averages over (16 full-size frames): fewer, and F
# of a compliant pair jitters across M(i,j), so it loses packets (Algorithm 3's drop is rf·F/M - 1)
LPF_PACKETS = 16
LPF_FRAME_BITS = 1500 * 8


def derive_lpf_time_constant_ns(node: Node, period_s: float, scale_down: int | None = None) -> float:
    """The F estimator's time constant for a node: long enough to hold LPF_PACKETS full-size frames
    of the smallest non-zero share, at least the 1 ms Tofino default (docs/spec.md §8), at most half
    a control period (τ must see F settle within a period, Appendix A) and at most what keeps a
    pair at the fastest port's line rate below half the 32-bit F range (2 units per bit/s per
    second of time constant: 2^WEIGHT_SHIFT/8/2^scale_down, ffs.tables.lpf_units_per_bps)."""
    shares = [m for col in node.fairness.values() for m in col.values() if m > 0]
    want = LPF_PACKETS * LPF_FRAME_BITS / min(shares) if shares else 0.0
    fastest = max((i.capacity for i in node.interfaces.values()), default=0.0)
    # with a fixed scale-down, F at line rate must stay in range; left to LpfConfig.for_node, the
    # scale-down is sized for the time constant instead (spec §4)
    cap = (1 << 31) / (fastest * tables.lpf_units_per_bps(1e9, scale_down)) if fastest > 0 and scale_down is not None else float("inf")
    tc_s = min(max(want, constants.LPF_TIME_CONSTANT_NS * 1e-9), period_s / 2, cap)
    return tc_s * 1e9


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
        raise ValueError(f"node {node.name}: {n} interfaces need {n * n} pairs, the data plane has {constants.NUM_PAIRS}")
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
            out.append(Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(i.port)}, "strip_shim")))
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
                TableEntry(table.name, {"dst_addr": Lpm(int(net.network_address), net.prefixlen)}, "route", {"port": port}),
            )
        )
    return out


def short_action(action: str | None) -> str | None:
    """An action's own name without its control (targets read entries back fully qualified)."""
    return action.rsplit(".", 1)[-1] if action else None


def pair_entry(m_bps: float, p: Pair, lpf: LpfConfig, kind: UpdateKind = "insert") -> Update:
    if lpf.scale_down is None:
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
    ups += tables.static_updates()
    return ups
