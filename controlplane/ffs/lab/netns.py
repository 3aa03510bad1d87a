# SPDX-License-Identifier: Apache-2.0
"""Private network namespaces for a topology's live run: one for the switch, one per host.

For every host, a veth pair joins the host's namespace (`eth0`) to the switch's namespace (named
after the switch interface the host attaches to, e.g. `p1`). Hosts reach each other through the
switch without ARP: each host gets a device route to every other host's prefix and a static
neighbour entry with that host's MAC (the software switch forwards on IP and leaves Ethernet
addresses alone, and it does not answer ARP). Offloads are off on both ends of every veth (GRO,
GSO, TSO and checksum offload would hand the switch aggregates and unfinished checksums), and
hosts get an MTU 8 bytes below the switch's so a port may insert the shim.

Every name this module creates starts with `ffs-<topology>-` (namespaces) or `ffs` + a hash of
that name (the veth ends' names while they briefly live in the caller's namespace), so `down`
removes exactly what `up` made, and both may be repeated.

    python -m ffs.lab.netns up topologies/dumbbell.yaml      (make netns-up TOPO=...)
    python -m ffs.lab.netns down topologies/dumbbell.yaml    (make netns-down TOPO=...)
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
import sys
import zlib
from dataclasses import dataclass

from ffs.core.constants import SHIM_LEN
from ffs.core.topology import Topology, TopologyError, load
from ffs.core.units import format_rate

IFNAMSIZ = 15  # longest Linux interface name
DEFAULT_MTU = 1500


class NetnsError(Exception):
    """Creating or removing the namespaces failed; the message is one line."""


@dataclass(frozen=True)
class HostPlan:
    host: str
    netns: str
    mac: str
    address: str  # CIDR
    switch_if: str  # interface name inside the switch namespace
    port: int

    @property
    def ip(self) -> str:
        return str(ipaddress.ip_interface(self.address).ip)

    @property
    def version(self) -> int:
        return ipaddress.ip_interface(self.address).version

    def temp_names(self) -> tuple[str, str]:
        """The veth ends' names in the caller's namespace, before they move (≤ 15 characters)."""
        tag = f"ffs{zlib.crc32(self.netns.encode()):08x}"
        return f"{tag}h", f"{tag}s"


@dataclass(frozen=True)
class Plan:
    topology: str
    switch_ns: str
    node: str
    hosts: tuple[HostPlan, ...]

    def ports(self) -> dict[int, str]:
        return {h.port: h.switch_if for h in self.hosts}

    def host(self, name: str) -> HostPlan:
        for h in self.hosts:
            if h.host == name:
                return h
        raise NetnsError(f"no host {name!r} in topology {self.topology!r}")

    def namespaces(self) -> list[str]:
        return [self.switch_ns] + [h.netns for h in self.hosts]


def _safe(name: str, n: int) -> str:
    return "".join(c for c in name if c.isalnum())[:n] or "x"


def plan(topo: Topology) -> Plan:
    """Names and addresses for `topo`'s hosts; checks everything before anything is created."""
    if not topo.hosts:
        raise NetnsError(f"{topo.source}: no hosts to create (add a `hosts:` section)")
    nodes = {h.attach.split(".")[0] for h in topo.hosts.values()}
    if len(nodes) != 1:
        raise NetnsError(f"{topo.source}: live runs support hosts on one switch node, got {sorted(nodes)}")
    node = nodes.pop()
    prefix = f"ffs-{_safe(topo.name, 16)}"
    hosts = []
    seen_ns: dict[str, str] = {f"{prefix}-sw": "the switch"}
    seen_if: dict[str, str] = {}
    for k, (name, h) in enumerate(sorted(topo.hosts.items()), start=1):
        iface = topo.nodes[node].interfaces[h.attach.split(".")[1]]
        ns = f"{prefix}-{_safe(name, 16)}"
        if ns in seen_ns:
            raise NetnsError(
                f"{topo.source}: hosts.{name}: its namespace name {ns} is taken by {seen_ns[ns]}; rename the host"
            )
        if iface.name in seen_if:
            raise NetnsError(
                f"{topo.source}: hosts.{name}: interface {node}.{iface.name} already has host {seen_if[iface.name]} "
                "(one host per switch interface)"
            )
        if len(iface.name) > IFNAMSIZ:
            raise NetnsError(f"{topo.source}: interface name {iface.name!r} is longer than Linux allows ({IFNAMSIZ})")
        seen_ns[ns], seen_if[iface.name] = f"host {name}", name
        hosts.append(HostPlan(name, ns, f"02:ff:00:00:{k // 256:02x}:{k % 256:02x}", h.address, iface.name, iface.port))
    return Plan(topo.name, f"{prefix}-sw", node, tuple(hosts))


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    try:
        p = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise NetnsError(f"{args[0]}: command not found (install iproute2 and ethtool: make setup)") from None
    except subprocess.TimeoutExpired:
        raise NetnsError(f"{' '.join(args)}: no answer within 30 s") from None
    if check and p.returncode != 0:
        raise NetnsError(f"{' '.join(args)}: {p.stderr.strip() or p.stdout.strip() or 'failed'}")
    return p


def _ns(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _run("ip", "netns", "exec", ns, *args, check=check)


def _require_root() -> None:
    if os.geteuid() != 0:
        raise NetnsError("network namespaces need root: run as root (or with sudo)")


def _require_tools() -> None:
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            raise NetnsError(
                f"{tool} is missing (iproute2 and ethtool are needed for live runs): run make setup as root"
            )


def offloads_off(ns: str, dev: str) -> None:
    """GRO/GSO/TSO and checksum offloads off, so every frame on the veth is real and complete."""
    p = _ns(ns, "ethtool", "-K", dev, "gro", "off", "gso", "off", "tso", "off", "tx", "off", "rx", "off", check=False)
    if p.returncode not in (0, 80):  # 80: a feature that cannot change on veth (the others changed)
        raise NetnsError(f"ethtool -K {dev} in {ns}: {p.stderr.strip() or p.returncode}")


def up(topo: Topology, mtu: int = DEFAULT_MTU) -> Plan:
    """Create the namespaces, veths, addresses and routes of `topo` (after removing any leftovers)."""
    _require_root()
    _require_tools()
    p = plan(topo)
    for ns in existing(topo):  # leftovers are replaced, but never under a run that is still going
        pids = _run("ip", "netns", "pids", ns, check=False).stdout.split()
        if pids:
            raise NetnsError(
                f"namespace {ns} is in use (pids {' '.join(pids[:5])}): another live run of "
                f"{topo.name!r}? stop it, or remove its namespaces with: python -m ffs.lab.netns down FILE"
            )
    down(topo, quiet=True)
    try:
        _run("ip", "netns", "add", p.switch_ns)
        _ns(p.switch_ns, "ip", "link", "set", "lo", "up")
        for h in p.hosts:
            _run("ip", "netns", "add", h.netns)
            _ns(h.netns, "ip", "link", "set", "lo", "up")
            tmp_host, tmp_sw = h.temp_names()
            _run("ip", "link", "add", tmp_host, "type", "veth", "peer", "name", tmp_sw)
            _run("ip", "link", "set", tmp_host, "netns", h.netns)
            _run("ip", "link", "set", tmp_sw, "netns", p.switch_ns)
            _ns(h.netns, "ip", "link", "set", tmp_host, "name", "eth0")
            _ns(p.switch_ns, "ip", "link", "set", tmp_sw, "name", h.switch_if)
            # no stray IPv6 (router solicitations, DAD) on IPv4 runs: the switch would count them as misses
            if h.version == 4:
                _ns(h.netns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
            _ns(p.switch_ns, "sysctl", "-qw", f"net.ipv6.conf.{h.switch_if}.disable_ipv6=1", check=False)
            # hosts get an MTU 8 bytes smaller: room for the shim a switch port may insert (FFS
            # App. F: the inserting node must have advertised the smaller MTU)
            _ns(h.netns, "ip", "link", "set", "eth0", "address", h.mac, "mtu", str(mtu - SHIM_LEN))
            _ns(p.switch_ns, "ip", "link", "set", h.switch_if, "mtu", str(mtu))
            offloads_off(h.netns, "eth0")
            offloads_off(p.switch_ns, h.switch_if)
            _ns(h.netns, "ip", "link", "set", "eth0", "up")
            _ns(p.switch_ns, "ip", "link", "set", h.switch_if, "up")
            _ns(h.netns, "ip", "addr", "add", h.address, "dev", "eth0", *(("nodad",) if h.version == 6 else ()))
        for h in p.hosts:
            for other in p.hosts:
                if other is h or other.version != h.version:
                    continue
                net = str(ipaddress.ip_interface(other.address).network)
                fam = "-6" if h.version == 6 else "-4"
                _ns(h.netns, "ip", fam, "route", "replace", net, "dev", "eth0")
                _ns(
                    h.netns,
                    "ip",
                    fam,
                    "neigh",
                    "replace",
                    other.ip,
                    "lladdr",
                    other.mac,
                    "dev",
                    "eth0",
                    "nud",
                    "permanent",
                )
    except BaseException:  # also Ctrl-C half-way: leave nothing behind
        down(topo, quiet=True)
        raise
    return p


def down(topo: Topology, quiet: bool = False) -> list[str]:
    """Remove the namespaces of `topo` (their veths go with them) and any half-made veth; idempotent.
    Returns the namespaces it removed (none when nothing was up)."""
    _require_root()
    p = plan(topo)
    errors = []
    removed = []
    for ns in p.namespaces():
        r = _run("ip", "netns", "del", ns, check=False)
        if r.returncode == 0:
            removed.append(ns)
        elif "No such file" not in r.stderr:
            errors.append(f"ip netns del {ns}: {r.stderr.strip()}")
    for h in p.hosts:  # an `up` interrupted between creating a veth and moving it
        for name in h.temp_names():
            _run("ip", "link", "del", name, check=False)  # usually "cannot find device": fine
    if errors and not quiet:
        raise NetnsError("; ".join(errors))
    return removed


def existing(topo: Topology) -> list[str]:
    """The namespaces of `topo` that exist now."""
    p = plan(topo)
    have = set(_run("ip", "netns", "list", check=False).stdout.split())
    return [ns for ns in p.namespaces() if ns in have]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ("up", "down"):
        print("usage: python -m ffs.lab.netns up|down TOPOLOGY", file=sys.stderr)
        return 2
    try:
        topo = load(argv[1])
        if argv[0] == "up":
            p = up(topo)
            print(
                f"switch {p.node}: namespace {p.switch_ns}, ports "
                + " ".join(f"{k}={v}" for k, v in sorted(p.ports().items()))
            )
            for h in p.hosts:
                print(
                    f"host {h.host}: namespace {h.netns}, eth0 {h.address}, mac {h.mac}, switch port {h.port} "
                    f"({h.switch_if})"
                )
            ifs = topo.node(p.node).interfaces.values()
            speed = {i.port: i.speed for i in ifs}
            delays = "".join(
                f" --delay {i.port}={i.delay_s * 1e3:g}ms" for i in sorted(ifs, key=lambda i: i.port) if i.delay_s
            )
            print(
                f"run the switch: ip netns exec {p.switch_ns} ffs-switch run "
                + " ".join(
                    f"--port {k}={v}@{format_rate(speed[k]).replace(' ', '')}" for k, v in sorted(p.ports().items())
                )
                + delays
            )
        else:
            removed = down(topo)
            if removed:
                print(f"removed the namespaces of {topo.name}: {' '.join(removed)}")
            else:
                print(f"nothing to remove: no namespace of {topo.name} was up")
    except (NetnsError, TopologyError) as e:
        print(f"ffs.lab.netns: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
