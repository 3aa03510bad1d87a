# SPDX-License-Identifier: Apache-2.0
"""FFS nodes in a chain on tofino-model: each node of a topology file a tofino-model + bf_switchd +
ffs-agent --target tofino in a network namespace of its own, wired by veth as the file's `peer`
links say, with the hosts' ends of the other ports in one more namespace, where PTF and the
differential run.

    ffs-<name>-<node>   (one per node) the node's model, bf_switchd and agent; veth<2m> is the model's
                        side of its m-th port (the node's own port map: only the ports it uses);
                        a `peer` port's veth is wired straight to the peer node's; `mgmt` leads to
                        the hosts' namespace (BF-Runtime at 169.254.45.<4k+2>:50052)
    ffs-<name>-hosts    <node>p<port> for every host port: PTF's device k port N is node k's port N

Every node's bf_switchd listens on its own :50052, :7777 and :9999, and its model on its own
:8001..., each in its namespace, so the nodes never meet on a port (the SDE fixes those numbers).
The runner refuses with one line what it cannot start, and removes everything it made (processes,
namespaces and their veths, the hugepages it raised) on exit, failure and interruption; `down`
removes what a killed run left.

    python -m ffs.lab.chain test  [--chip tofino2]       up, ffs-agent installs every node, PTF across
                                                         the chain, the differential across it, down
    python -m ffs.lab.chain up    [--chip tofino2]       up with the agents running, until Ctrl-C
    python -m ffs.lab.chain run   [--chip ...] -- CMD    up, CMD in the hosts' namespace, down
    python -m ffs.lab.chain down  [--chip ...]           remove what a killed run left
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ffs.core.api_client import ApiError, call
from ffs.core.topology import Topology, TopologyError, load
from ffs.lab.sde import GRPC_PORT, chip_of, sde_missing, stop_process

STATUS_PORT = 7777  # bf_switchd's status server (run_switchd.sh's default)
MGMT_IF = "mgmt"
MGMT_NET = "169.254.45."  # a /30 per node k: .4k+1 the hosts' side, .4k+2 the node's
# two models on two cores: the agent's first reads after its install took over 10 s (its BF-Runtime
# default) while the other node idled; a read here may wait out such a stall (as ffs.lab.differential's)
AGENT_RPC_TIMEOUT_S = 60.0
NODE_MEMORY = 2560 << 20  # a model + bf_switchd hold about 2 GB resident (docs/testing.md)
FIRST_FRONT_PANEL = {"tofino": 0, "tofino2": 8}
CLONE_NEWNET = 0x40000000
ROOT = Path(__file__).resolve().parents[3]


class ChainError(Exception):
    """What the chain cannot start or remove, in one line."""


def _safe(name: str, n: int) -> str:
    return "".join(c for c in name if c.isalnum() or c == "-")[:n] or "x"


@dataclass(frozen=True)
class NodePlan:
    name: str
    index: int  # PTF's device number
    netns: str
    veths: dict[int, str]  # device port -> the model's veth in the node's namespace
    hosts: dict[int, str]  # device port of a host interface -> its other end in the hosts' namespace
    links: dict[int, tuple[str, int]]  # device port -> (peer node, its device port)

    @property
    def mgmt_hosts_side(self) -> str:
        return f"{MGMT_NET}{4 * self.index + 1}"

    @property
    def mgmt_node_side(self) -> str:
        return f"{MGMT_NET}{4 * self.index + 2}"

    @property
    def grpc(self) -> str:
        return f"{self.mgmt_node_side}:{GRPC_PORT}"

    def port_map(self) -> dict[str, list[dict[str, int]]]:
        """The SDE's port map of this node's model: only the ports it uses."""
        return {
            "PortToVeth": [
                {"device_port": p, "veth1": int(v[4:]), "veth2": int(v[4:]) + 1} for p, v in sorted(self.veths.items())
            ]
        }


@dataclass(frozen=True)
class ChainPlan:
    topology: str
    chip: str
    hosts_ns: str
    nodes: tuple[NodePlan, ...]

    def namespaces(self) -> list[str]:
        return [n.netns for n in self.nodes] + [self.hosts_ns]

    def node(self, name: str) -> NodePlan:
        return next(n for n in self.nodes if n.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "topology": self.topology,
            "chip": self.chip,
            "hosts_ns": self.hosts_ns,
            "nodes": [
                {
                    "name": n.name,
                    "index": n.index,
                    "netns": n.netns,
                    "grpc": n.grpc,
                    "veths": {str(p): v for p, v in n.veths.items()},
                    "hosts": {str(p): v for p, v in n.hosts.items()},
                    "links": {str(p): list(v) for p, v in n.links.items()},
                }
                for n in self.nodes
            ],
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> ChainPlan:
        nodes = tuple(
            NodePlan(
                n["name"],
                int(n["index"]),
                n["netns"],
                {int(p): v for p, v in n["veths"].items()},
                {int(p): v for p, v in n["hosts"].items()},
                {int(p): (v[0], int(v[1])) for p, v in n["links"].items()},
            )
            for n in doc["nodes"]
        )
        return cls(doc["topology"], doc["chip"], doc["hosts_ns"], nodes)


def plan(topo: Topology, topology: Path, chip: str) -> ChainPlan:
    """Names, veths and port maps for `topo`'s nodes on `chip`'s model; checks all before anything runs."""
    chip = chip_of(chip)
    if len(topo.nodes) < 2:
        raise ChainError(f"{topology}: a chain needs two nodes or more, the file has {len(topo.nodes)}")
    prefix = f"ffs-{_safe(topo.name, 20)}"
    nodes = []
    for k, name in enumerate(sorted(topo.nodes)):
        node = topo.nodes[name]
        veths, hosts, links = {}, {}, {}
        for m, i in enumerate(sorted(node.interfaces.values(), key=lambda i: i.port)):
            if i.port < FIRST_FRONT_PANEL[chip]:
                raise ChainError(
                    f"{topology}: {name}.{i.name}: device port {i.port} is not a front-panel port of {chip}'s "
                    f"model (they start at {FIRST_FRONT_PANEL[chip]}): use the file for {chip}"
                )
            veths[i.port] = f"veth{2 * m}"
            if i.peer:
                pn, pi = i.peer.split(".")
                links[i.port] = (pn, topo.nodes[pn].interfaces[pi].port)
            else:
                hosts[i.port] = f"{_safe(name, 8)}p{i.port}"
        nodes.append(NodePlan(name, k, f"{prefix}-{_safe(name, 16)}", veths, hosts, links))
    if not any(n.hosts for n in nodes):
        raise ChainError(f"{topology}: no host ports: nothing could send into the chain")
    return ChainPlan(str(topology), chip, f"{prefix}-hosts", tuple(nodes))


# --- namespaces and veths -------------------------------------------------------------------------


def _run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(list(args), capture_output=True, text=True, timeout=60)
    if check and p.returncode != 0:
        raise ChainError(f"{' '.join(args)}: {p.stderr.strip() or p.stdout.strip() or 'failed'}")
    return p


def _ns(ns: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return _run("ip", "netns", "exec", ns, *args, check=check)


def existing(p: ChainPlan) -> list[str]:
    have = {line.split()[0] for line in _run("ip", "netns", "list", check=False).stdout.splitlines() if line.strip()}
    return [ns for ns in p.namespaces() if ns in have]


def _link_up(ns: str, dev: str) -> None:
    """Frames cross the veth as built: no offloads, no IPv6 chatter (router solicitations would be
    stray packets on a model's port)."""
    _ns(ns, "sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1", check=False)
    _ns(ns, "ethtool", "-K", dev, "rx", "off", "tx", "off", "sg", "off", "tso", "off", "gso", "off", "gro", "off",
        check=False)  # fmt: skip
    _ns(ns, "ip", "link", "set", dev, "up")


def wire(p: ChainPlan) -> None:
    """The namespaces, every port's veth, the links between nodes and the management links."""
    for ns in p.namespaces():
        _run("ip", "netns", "add", ns)
        _ns(ns, "ip", "link", "set", "lo", "up")
        _ns(ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
    for n in p.nodes:
        for port, veth in n.veths.items():
            if port in n.hosts:
                pair = (n.netns, veth, p.hosts_ns, n.hosts[port])
            else:
                peer_name, peer_port = n.links[port]
                if (peer_name, peer_port) < (n.name, port):
                    continue  # made from the other end
                peer = p.node(peer_name)
                pair = (n.netns, veth, peer.netns, peer.veths[peer_port])
            _run("ip", "link", "add", pair[1], "netns", pair[0], "type", "veth", "peer", "name", pair[3], "netns",
                 pair[2])  # fmt: skip
            _link_up(pair[0], pair[1])
            _link_up(pair[2], pair[3])
        hosts_side = f"{MGMT_IF}{n.index}"
        _run("ip", "link", "add", MGMT_IF, "netns", n.netns, "type", "veth", "peer", "name", hosts_side, "netns",
             p.hosts_ns)  # fmt: skip
        _ns(n.netns, "ip", "addr", "add", f"{n.mgmt_node_side}/30", "dev", MGMT_IF)
        _ns(p.hosts_ns, "ip", "addr", "add", f"{n.mgmt_hosts_side}/30", "dev", hosts_side)
        _ns(n.netns, "ip", "link", "set", MGMT_IF, "up")
        _ns(p.hosts_ns, "ip", "link", "set", hosts_side, "up")


def unwire(p: ChainPlan) -> list[str]:
    """Every process left in the chain's namespaces killed, the namespaces removed (their veths go
    with them); what was removed. Idempotent."""
    have = existing(p)
    for ns in have:
        for pid in _run("ip", "netns", "pids", ns, check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
    for ns in have:
        for _ in range(50):
            if not _run("ip", "netns", "pids", ns, check=False).stdout.split():
                break
            time.sleep(0.1)
        _run("ip", "netns", "del", ns, check=False)
    return have


def socket_in(netns: str, ifname: str) -> socket.socket:
    """A raw socket on `ifname` of another namespace (a tap on a link between two nodes), made by a
    thread that enters the namespace: setns moves only the calling thread, and the socket stays
    where it was made."""
    out: list[Any] = []

    def make() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            with open(f"/run/netns/{netns}") as f:
                if libc.setns(f.fileno(), CLONE_NEWNET) != 0:
                    raise OSError(ctypes.get_errno(), f"setns into {netns}")
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
            s.bind((ifname, 0))
            out.append(s)
        except OSError as e:
            out.append(e)

    t = threading.Thread(target=make)
    t.start()
    t.join()
    if isinstance(out[0], OSError):
        raise out[0]
    return out[0]  # type: ignore[no-any-return]


# --- the processes ---------------------------------------------------------------------------------


@dataclass
class NodeRun:
    plan: NodePlan
    logs: Path
    model: subprocess.Popen[bytes] | None = None
    switchd: subprocess.Popen[bytes] | None = None
    agent: subprocess.Popen[bytes] | None = None

    @property
    def socket(self) -> Path:
        return self.logs / "agent.sock"


def _spawn(
    ns: str, argv: list[str], log: Path, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """`argv` in namespace `ns`, in a session of its own (a Ctrl-C reaches the runner, which stops
    the nodes in their order)."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            ["ip", "netns", "exec", ns, *argv],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )


def _listening(pid: int, port: int) -> bool:
    """Whether a TCP socket listens on `port` in the namespace of process `pid` (its /proc view)."""
    try:
        rows = Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]
    except OSError:
        return False
    return any(r.split()[1].endswith(f":{port:04X}") and r.split()[3] == "0A" for r in rows)


@dataclass
class Chain:
    """The running chain: start() brings every node up, stop() takes everything down."""

    plan: ChainPlan
    topology: Path
    log_dir: Path
    runs: list[NodeRun] = field(default_factory=list)
    hugepages_before: int | None = None
    started_s: float = 0.0

    def start(self, timeout_s: float = 600.0) -> None:
        t0 = time.monotonic()
        self.hugepages_before = int(Path("/proc/sys/vm/nr_hugepages").read_text())
        wire(self.plan)
        sde = os.environ["SDE"]
        for n in self.plan.nodes:
            logs = self.log_dir / n.name
            shutil.rmtree(logs, ignore_errors=True)
            logs.mkdir(parents=True)
            (logs / "ports.json").write_text(json.dumps(n.port_map(), indent=1) + "\n")
            self.runs.append(NodeRun(n, logs))
        arch = ["-p", "ffs", "--arch", self.plan.chip]
        for r in self.runs:
            r.model = _spawn(
                r.plan.netns,
                [f"{sde}/run_tofino_model.sh", *arch, "-f", str(r.logs / "ports.json"), "--log-dir", str(r.logs)],
                r.logs / "model.out",
                r.logs,
            )
        for r in self.runs:
            r.switchd = _spawn(r.plan.netns, [f"{sde}/run_switchd.sh", *arch], r.logs / "switchd.out", r.logs)
        deadline = time.monotonic() + timeout_s
        # as the SDE's PTF runner waits: BF-Runtime and the status server, which answers once the device is up
        while not all(
            r.switchd is not None and _listening(r.switchd.pid, GRPC_PORT) and _listening(r.switchd.pid, STATUS_PORT)
            for r in self.runs
        ):
            for r in self.runs:
                for what, p in (("tofino-model", r.model), ("bf_switchd", r.switchd)):
                    if p is not None and p.poll() is not None:
                        raise ChainError(f"{r.plan.name}: {what} exited ({p.returncode}): see {r.logs}")
            if time.monotonic() > deadline:
                raise ChainError(f"bf_switchd not serving within {timeout_s:g} s: see {self.log_dir}")
            time.sleep(0.5)
        self.started_s = time.monotonic() - t0

    def start_agents(self, period_ms: float, install_only: bool = False, timeout_s: float = 180.0) -> None:
        """ffs-agent --target tofino on every node (in its namespace, on its own bf_switchd),
        each programming its node from the topology; returns once every one serves. Each reaches
        its switch at the node's own management address: the agent's ownership lock is named
        after the address, and `localhost` would be the same name on every node. `install_only`: no τ
        step or table check before they are stopped (the tests take the tables over; two nodes'
        τ loops at once slow both models past the agents' RPC deadline)."""
        env = dict(os.environ, FFS_RUN_DIR=str(self.log_dir / "run"))  # its switch locks, not the machine's
        for r in self.runs:  # one at a time: two first installs at once slow both models the more
            r.agent = _spawn(
                r.plan.netns,
                [
                    sys.executable, "-m", "ffs.cli.agent", f"--topology={self.topology}", f"--node={r.plan.name}",
                    "--target=tofino", f"--switch={r.plan.grpc}", f"--socket={r.socket}",
                    f"--state-dir={r.logs / 'state'}", f"--rpc-timeout={AGENT_RPC_TIMEOUT_S:g}",
                    # no queue guard: tofino-model has no queues to guard, and its timer would swamp it
                    "--guard-timer-us=0",
                    *(["--period-ms=100000", "--check-period-s=0"] if install_only else [f"--period-ms={period_ms}"]),
                ],
                r.logs / "agent.log",
                ROOT,
                env,
            )  # fmt: skip
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    call(r.socket, {"op": "status"}, timeout_s=1)
                    break
                except (ApiError, OSError, ValueError):
                    if r.agent.poll() is not None or time.monotonic() > deadline:
                        last = ((r.logs / "agent.log").read_text().strip().splitlines() or ["no log"])[-1]
                        raise ChainError(f"{r.plan.name}: ffs-agent did not start: {last}") from None
                    time.sleep(0.3)

    def stop_agents(self) -> None:
        for r in self.runs:
            stop_process(r.agent)
            r.agent = None

    def footprint(self, sample_s: float = 5.0) -> str:
        """Resident memory and CPU (over `sample_s`) of each node's model and bf_switchd, and
        the hugepages in use: what the chain costs the machine."""
        procs = {(r.plan.name, w): p for r in self.runs for w, p in (("model", r.model), ("bf_switchd", r.switchd))}
        cpu0 = {k: _cpu_ticks(p) for k, p in procs.items()}
        time.sleep(sample_s)
        hz = os.sysconf("SC_CLK_TCK")
        parts = [
            f"{node} {what} {_rss_mib(p)} MiB, {100 * (_cpu_ticks(p) - cpu0[(node, what)]) / hz / sample_s:.0f} % CPU"
            for (node, what), p in procs.items()
        ]
        mem = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        used = int(mem["HugePages_Total"].split()[0]) - int(mem["HugePages_Free"].split()[0])
        return "; ".join(parts) + f"; hugepages in use: {used} of 2 MiB"

    def stop(self) -> None:
        """Agents, then each model before its bf_switchd (a SIGTERM to bf_switchd while its model's
        ports are up ends it with SIGSEGV), then whatever is left in the namespaces, then the
        namespaces; the hugepages back to what they were if nothing else holds any."""
        self.stop_agents()
        for r in self.runs:
            stop_process(r.model)
        for r in self.runs:
            stop_process(r.switchd)
        unwire(self.plan)
        if self.hugepages_before is not None:
            _restore_hugepages(self.hugepages_before)


def _cpu_ticks(p: subprocess.Popen[bytes] | None) -> int:
    """User and system time of the process, all its threads, in clock ticks."""
    try:
        fields = Path(f"/proc/{p.pid}/stat").read_text().rsplit(")", 1)[1].split() if p else []
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12]) if fields else 0


def _rss_mib(p: subprocess.Popen[bytes] | None) -> int:
    if p is None:
        return 0
    try:
        for line in Path(f"/proc/{p.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def _restore_hugepages(before: int) -> None:
    mem = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    total, free = int(mem["HugePages_Total"].split()[0]), int(mem["HugePages_Free"].split()[0])
    if total > before and total == free:
        Path("/proc/sys/vm/nr_hugepages").write_text(f"{before}\n")


# --- refusing what cannot start ------------------------------------------------------------------


def why_not(p: ChainPlan, sha256: str | None) -> str | None:
    """Why the chain cannot start here, in one line, or None."""
    if os.geteuid() != 0:
        return "the chain needs root (network namespaces, veths, hugepages for bf_switchd)"
    for tool in ("ip", "ethtool", "ptf"):
        if shutil.which(tool) is None:
            return f"{tool} is missing: make setup (as root) installs iproute2, ethtool and ptf"
    why = sde_missing("ffs", p.chip, sha256, check_grpc_port=False)
    if why:
        return why
    up = existing(p)
    if up:
        return f"a chain of {p.topology} is up (namespaces {' '.join(up)}): python -m ffs.lab.chain down"
    mem = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    avail = int(mem["MemAvailable"].split()[0]) << 10
    if avail < NODE_MEMORY * len(p.nodes):
        return (
            f"{len(p.nodes)} nodes need {NODE_MEMORY * len(p.nodes) >> 20} MiB of free memory "
            f"(a model and bf_switchd each), {avail >> 20} MiB are available"
        )
    return None


# --- what runs on the chain ----------------------------------------------------------------------


def ptf_command(p: ChainPlan, chain_json: Path, log_dir: Path, tests: list[str]) -> list[str]:
    """PTF across the chain, in the hosts' namespace: device k's port N is node k's host port N."""
    ifaces = [f"--interface={n.index}-{port}@{ifname}" for n in p.nodes for port, ifname in sorted(n.hosts.items())]
    return [
        "ip", "netns", "exec", p.hosts_ns, shutil.which("ptf") or "ptf", "--test-dir",
        str(ROOT / "ptf-tests" / "chain"), *ifaces, "--log-file", str(log_dir / "ptf.log"),
        "--qlen", "100000", "--test-params", f"chain='{chain_json}'", *tests,
    ]  # fmt: skip


def differential_command(p: ChainPlan, chain_json: Path, packets: int, seed: int | None) -> list[str]:
    """The differential across the chain, in the hosts' namespace; its reports in differential.json."""
    return [
        "ip", "netns", "exec", p.hosts_ns, sys.executable, "-m", "ffs.lab.chain_differential",
        f"--chain={chain_json}", f"--packets={packets}", f"--report={chain_json.parent / 'differential.json'}",
        *([f"--seed={seed}"] if seed is not None else []),
    ]  # fmt: skip


class _Stopped(Exception):
    """SIGTERM or SIGHUP: unwind through the `finally` that takes the chain down."""


def _on_signal(signum: int, _frame: Any) -> None:
    raise _Stopped(signal.Signals(signum).name)


def run(a: argparse.Namespace, say: Any = print) -> int:
    topo = load(a.topology)
    p = plan(topo, a.topology, a.chip)
    why = why_not(p, a.sha256)
    if why:
        say(f"chain: {why}")
        return 2
    a.log_dir.mkdir(parents=True, exist_ok=True)
    chain = Chain(p, a.topology.resolve(), a.log_dir.resolve())
    chain_json = chain.log_dir / "chain.json"
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _on_signal)
    try:
        say(f"chain: {len(p.nodes)} nodes of {a.topology} on {p.chip}'s model (logs in {a.log_dir})")
        chain.start()
        chain_json.write_text(json.dumps(p.to_json(), indent=1) + "\n")
        say(f"chain: bf_switchd serving on every node {chain.started_s:.0f} s after the start")
        t0 = time.monotonic()
        chain.start_agents(a.period_ms, install_only=a.cmd != "up")
        say(f"chain: ffs-agent programmed every node in {time.monotonic() - t0:.0f} s")
        say(f"chain: {'with the agents running' if a.cmd == 'up' else 'idle'}: {chain.footprint()}")
        return _command(a, chain, chain_json, say)
    except (ChainError, OSError, subprocess.SubprocessError) as e:
        say(f"chain: {e}")
        return 1
    except (KeyboardInterrupt, _Stopped) as e:
        say(f"chain: stopped ({type(e).__name__} {e}), taking the chain down")
        return 130
    finally:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):  # a second signal must not cut the cleanup short
            signal.signal(sig, signal.SIG_IGN)
        chain.stop()


def _command(a: argparse.Namespace, chain: Chain, chain_json: Path, say: Any) -> int:
    p = chain.plan
    if a.cmd == "up":
        say(f"chain: up; the agents' sockets: {' '.join(str(r.socket) for r in chain.runs)}; {chain_json}")
        say(f"chain: commands in the hosts' namespace: ip netns exec {p.hosts_ns} ...; Ctrl-C takes it down")
        while True:
            time.sleep(3600)
    # the tests own the tables from here (the agent's period would rewrite what they set)
    chain.stop_agents()
    env = dict(os.environ, FFS_CHAIN=str(chain_json))
    if a.cmd == "run":
        return subprocess.run(["ip", "netns", "exec", p.hosts_ns, *a.command], env=env).returncode
    rc = 0
    if not a.no_ptf:
        t0 = time.monotonic()
        ptf = subprocess.run(ptf_command(p, chain_json, chain.log_dir, a.ptf_tests), env=env, cwd=ROOT)
        say(f"chain: PTF across the chain exited {ptf.returncode} after {time.monotonic() - t0:.0f} s")
        rc = rc or ptf.returncode
    if a.packets > 0:
        t0 = time.monotonic()
        diff = subprocess.run(differential_command(p, chain_json, a.packets, a.seed), env=env, cwd=ROOT)
        say(f"chain: the differential across the chain exited {diff.returncode} after {time.monotonic() - t0:.0f} s")
        rc = rc or diff.returncode
    return rc


def default_topology(chip: str) -> Path:
    return Path("topologies", "chain-model.yaml" if chip_of(chip) == "tofino" else f"chain-model-{chip_of(chip)}.yaml")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.lab.chain", description=__doc__.split("\n\n")[0])
    ap.add_argument("cmd", choices=("test", "up", "run", "down"))
    ap.add_argument("--chip", type=chip_of, default="tofino")
    ap.add_argument("--topology", type=Path, help="default: topologies/chain-model.yaml (chain-model-tofino2.yaml)")
    ap.add_argument("--sha256", help="the p4src/ hash the installed program must have been compiled from")
    ap.add_argument("--log-dir", type=Path, default=Path("build/chain-model"))
    ap.add_argument("--period-ms", type=float, default=1000.0, help="up: the agents' period (tofino-model is slow)")
    ap.add_argument("--packets", type=int, default=400, help="test: the differential's probes per phase (0: none)")
    ap.add_argument("--seed", type=int, help="test: the differential's seed (default: a new one, printed)")
    ap.add_argument("--no-ptf", action="store_true", help="test: leave out PTF")
    ap.add_argument("--ptf-tests", nargs="*", default=[], help="test: PTF's test names (default: all)")
    argv = sys.argv[1:] if argv is None else argv
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.command = argv[cut + 1 :]  # run: the command for the hosts' namespace
    a.topology = a.topology or default_topology(a.chip)

    def say(s: str) -> None:
        print(s, file=sys.stderr, flush=True)

    try:
        if a.cmd == "down":
            if os.geteuid() != 0:
                say("chain: down needs root")
                return 2
            removed = unwire(plan(load(a.topology), a.topology, a.chip))
            say(f"chain: removed {' '.join(removed)}" if removed else "chain: nothing of it was up")
            return 0
        if a.cmd == "run" and not a.command:
            say("chain: run needs a command: python -m ffs.lab.chain run -- CMD ...")
            return 2
        return run(a, say)
    except (ChainError, TopologyError, ValueError) as e:
        say(f"chain: {e}")
        return 2


if __name__ == "__main__":
    sys.exit(main())
