"""Private network namespaces for a topology's live run: one for the switch, one per host.

For every host, a veth pair joins the host's namespace (`eth0`) to the switch's namespace (the
switch interface's name, e.g. `p1`). Hosts reach each other through the switch without ARP: each
host gets a device route to every other host's prefix and a static neighbour entry with that
host's MAC (the software switch forwards on IP and leaves Ethernet addresses alone). All names
start with `ffs-<topology>-`, so `down` removes exactly what `up` made.

    python -m ffs.netns up topologies/dumbbell.yaml
    python -m ffs.netns down topologies/dumbbell.yaml
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from dataclasses import dataclass

from ffs.constants import SHIM_LEN
from ffs.topology import Topology, TopologyError, load


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


@dataclass(frozen=True)
class Plan:
    topology: str
    switch_ns: str
    node: str
    hosts: tuple[HostPlan, ...]

    def ports(self) -> dict[int, str]:
        return {h.port: h.switch_if for h in self.hosts}

    def host(self, name: str) -> HostPlan:
        return next(h for h in self.hosts if h.host == name)


def _short(name: str) -> str:
    return "".join(c for c in name if c.isalnum())[:6]


def plan(topo: Topology) -> Plan:
    if not topo.hosts:
        raise NetnsError(f"{topo.source}: no hosts to create (add a `hosts:` section)")
    nodes = {h.attach.split(".")[0] for h in topo.hosts.values()}
    if len(nodes) != 1:
        raise NetnsError(f"{topo.source}: live runs support hosts on one switch node, got {sorted(nodes)}")
    node = nodes.pop()
    prefix = f"ffs-{_short(topo.name)}"
    hosts = []
    for k, (name, h) in enumerate(sorted(topo.hosts.items()), start=1):
        iface = topo.nodes[node].interfaces[h.attach.split(".")[1]]
        hosts.append(HostPlan(name, f"{prefix}-{_short(name)}", f"02:ff:00:00:{k // 256:02x}:{k % 256:02x}",
                              h.address, iface.name, iface.port))
    return Plan(topo.name, f"{prefix}-sw", node, tuple(hosts))


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    p = subprocess.run(list(args), capture_output=True, text=True)
    if check and p.returncode != 0:
        raise NetnsError(f"{' '.join(args)}: {p.stderr.strip() or p.stdout.strip() or 'failed'}")
    return p


def _ns(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _run("ip", "netns", "exec", ns, *args, check=check)


def _require_root() -> None:
    if os.geteuid() != 0:
        raise NetnsError("network namespaces need root: run as root (or with sudo)")


def up(topo: Topology, mtu: int = 1500) -> Plan:
    _require_root()
    p = plan(topo)
    down(topo, quiet=True)
    try:
        _run("ip", "netns", "add", p.switch_ns)
        _ns(p.switch_ns, "ip", "link", "set", "lo", "up")
        for h in p.hosts:
            _run("ip", "netns", "add", h.netns)
            _ns(h.netns, "ip", "link", "set", "lo", "up")
            tmp_host, tmp_sw = f"{h.netns[-9:]}h", f"{h.netns[-9:]}s"
            _run("ip", "link", "add", tmp_host, "type", "veth", "peer", "name", tmp_sw)
            _run("ip", "link", "set", tmp_host, "netns", h.netns)
            _run("ip", "link", "set", tmp_sw, "netns", p.switch_ns)
            _ns(h.netns, "ip", "link", "set", tmp_host, "name", "eth0")
            _ns(p.switch_ns, "ip", "link", "set", tmp_sw, "name", h.switch_if)
            # hosts get an MTU 8 bytes smaller: room for the shim a switch port may insert (FFS
            # App. F: the inserting node must have advertised the smaller MTU)
            _ns(h.netns, "ip", "link", "set", "eth0", "address", h.mac, "mtu", str(mtu - SHIM_LEN), "up")
            _ns(p.switch_ns, "ip", "link", "set", h.switch_if, "mtu", str(mtu), "up")
            _ns(h.netns, "ip", "addr", "add", h.address, "dev", "eth0")
            for dev_ns, dev in ((h.netns, "eth0"), (p.switch_ns, h.switch_if)):
                _ns(dev_ns, "ethtool", "-K", dev, "gro", "off", "gso", "off", "tso", "off", "tx", "off", "rx", "off", check=False)
            _ns(h.netns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
            _ns(p.switch_ns, "sysctl", "-qw", f"net.ipv6.conf.{h.switch_if}.disable_ipv6=1", check=False)
        for h in p.hosts:
            for other in p.hosts:
                if other is h:
                    continue
                net = ipaddress.ip_interface(other.address).network
                _ns(h.netns, "ip", "route", "replace", str(net), "dev", "eth0")
                addr = str(ipaddress.ip_interface(other.address).ip)
                _ns(h.netns, "ip", "neigh", "replace", addr, "lladdr", other.mac, "dev", "eth0", "nud", "permanent")
    except NetnsError:
        down(topo, quiet=True)
        raise
    return p


def down(topo: Topology, quiet: bool = False) -> None:
    _require_root()
    p = plan(topo)
    for ns in [p.switch_ns] + [h.netns for h in p.hosts]:
        r = _run("ip", "netns", "del", ns, check=False)
        if r.returncode != 0 and not quiet and "No such file" not in r.stderr:
            raise NetnsError(f"ip netns del {ns}: {r.stderr.strip()}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] not in ("up", "down"):
        print("usage: python -m ffs.netns up|down TOPOLOGY", file=sys.stderr)
        return 2
    try:
        topo = load(argv[1])
        if argv[0] == "up":
            p = up(topo)
            print(f"switch namespace {p.switch_ns}: ports " + " ".join(f"{k}={v}" for k, v in sorted(p.ports().items())))
            for h in p.hosts:
                print(f"host {h.host}: namespace {h.netns}, {h.address}, mac {h.mac}")
        else:
            down(topo)
    except (NetnsError, TopologyError) as e:
        print(f"ffs.netns: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
