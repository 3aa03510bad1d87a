# SPDX-License-Identifier: Apache-2.0
"""One live FFS node for demos, tests and experiments: the topology's namespaces, `ffs-switch run` on
the switch's veths, optionally `ffs-agent` against it; everything stopped and removed on exit.

    with live_node(topology_file, work_dir) as node:
        node.exec("h1", "python", "-m", "ffs.lab.traffic", "send", ...)
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ffs.core.api_client import ApiError, call
from ffs.core.constants import SHIM_LEN
from ffs.core.topology import Topology, load
from ffs.lab import netns


class LiveError(Exception):
    """A live component did not start; the message names it and the end of its log."""


@dataclass
class LiveNode:
    topology: Topology
    plan: netns.Plan
    work: Path
    procs: list[subprocess.Popen] = field(default_factory=list)
    switch_ready_s: float = 0.0  # time.monotonic() when the switch was ready (the topology's `drain` times from it)

    @property
    def switch_address(self) -> str:
        return f"unix:{self.work}/switch.sock"

    @property
    def agent_socket(self) -> Path:
        return self.work / "agent.sock"

    def exec_args(self, host: str, *args: str) -> list[str]:
        return ["ip", "netns", "exec", self.plan.host(host).netns, *args]

    def spawn(self, args: Sequence[str], log: str | None = None, **kw) -> subprocess.Popen:
        """Start a process that is stopped with the node."""
        if log is not None and "stderr" not in kw:
            kw["stderr"] = open(self.work / log, "w")
        p = subprocess.Popen(list(args), **kw)
        self.procs.append(p)
        return p

    def receive(self, host: str, seconds: float, *extra: str) -> subprocess.Popen:
        """`ffs.lab.traffic recv` on `host` for `seconds`: a JSON line a second (or an --interval)
        on its stdout (text)."""
        argv = self.exec_args(host, sys.executable, "-m", "ffs.lab.traffic", "recv", f"--duration={seconds:g}", *extra)
        return self.spawn(argv, stdout=subprocess.PIPE, text=True)

    def send(
        self, host: str, dst: str, rate: str | float, seconds: float, *extra: str, report: bool = False
    ) -> subprocess.Popen:
        """`ffs.lab.traffic send` from `host` to `dst` at `rate` (bit/s, or "8Mbps") for `seconds`;
        with `report`, its JSON report (what it sent) on its stdout (text)."""
        rate_arg = rate if isinstance(rate, str) else f"{rate:.0f}"
        argv = [sys.executable, "-m", "ffs.lab.traffic", "send", f"--dst={dst}", f"--rate={rate_arg}", *extra]
        argv = self.exec_args(host, *argv, f"--duration={seconds:g}")
        if report:
            return self.spawn(argv, stdout=subprocess.PIPE, text=True)
        return self.spawn(argv, stdout=subprocess.DEVNULL)


def _wait(cond: Callable[[], bool], timeout_s: float, what: str, proc: subprocess.Popen, log: Path) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    tail = " | ".join(log.read_text().strip().splitlines()[-3:]) if log.exists() else ""
    raise LiveError(f"{what} did not start: {tail or 'no output'}")


def agent_ready(sock: Path) -> bool:
    try:
        call(sock, {"op": "status"}, timeout_s=1)
        return True
    except (ApiError, OSError, ValueError):
        return False


def _switch_ports(topo: Topology, plan: netns.Plan) -> list[str]:
    """`ffs-switch run`'s port options: every port at its topology speed (the switch's queues make
    its egresses the bottlenecks), a port's `delay` (its wire after the queue: round-trip times
    without netem) and `drain` (a shaper, a pause)."""
    ifs = sorted(topo.node(plan.node).interfaces.values(), key=lambda i: i.port)
    speed = {i.port: i.speed for i in ifs}
    out = [f"--port={p}={i}@{speed[p]:.0f}" for p, i in sorted(plan.ports().items())]
    out += [f"--delay={i.port}={i.delay_s * 1e3:g}ms" for i in ifs if i.delay_s]
    return out + [f"--drain={i.port}=" + ",".join(f"{t:g}:{f:g}" for t, f in i.drain) for i in ifs if i.drain]


@contextmanager
def live_node(
    topology_file: str | Path,
    work: Path,
    *,
    agent: bool = True,
    period_ms: float = 100.0,
    lpf_time_constant_us: float | None = None,
    switch_args: Sequence[str] = (),
    agent_args: Sequence[str] = (),
    before_switch: Callable[[netns.Plan], None] | None = None,
) -> Iterator[LiveNode]:
    topo = load(topology_file)
    # the veths carry the largest MTU of the topology's node, the hosts' 8 bytes less (netns.up)
    mtu = max((i.mtu for n in topo.nodes.values() for i in n.interfaces.values()), default=1500)
    plan = netns.up(topo, mtu=max(netns.DEFAULT_MTU, mtu + SHIM_LEN))
    node = LiveNode(topo, plan, work)
    py = sys.executable
    try:
        if before_switch is not None:
            before_switch(plan)
        ports = _switch_ports(topo, plan)
        sw = node.spawn(
            [
                "ip",
                "netns",
                "exec",
                plan.switch_ns,
                py,
                "-m",
                "ffs.lab.cli.switch",
                "run",
                *ports,
                *switch_args,
                f"--control={node.switch_address}",
                f"--ready-file={work}/switch.ready",
            ],
            log="switch.log",
            stdout=subprocess.DEVNULL,
        )
        _wait(lambda: (work / "switch.ready").exists(), 30, "ffs-switch", sw, work / "switch.log")
        # the instant the switch was ready on this clock (its drain schedule's zero), from the file's time
        node.switch_ready_s = time.monotonic() - (time.time() - (work / "switch.ready").stat().st_mtime)
        if agent:
            ag = node.spawn(
                [
                    py,
                    "-m",
                    "ffs.cli.agent",
                    f"--topology={topology_file}",
                    f"--node={plan.node}",
                    "--target=model",
                    f"--switch={node.switch_address}",
                    f"--socket={node.agent_socket}",
                    f"--state-dir={work}/state",
                    f"--period-ms={period_ms}",
                    *([] if lpf_time_constant_us is None else [f"--lpf-time-constant-us={lpf_time_constant_us}"]),
                    *agent_args,
                ],
                log="agent.log",
                stdout=subprocess.DEVNULL,
            )
            _wait(lambda: agent_ready(node.agent_socket), 30, "ffs-agent", ag, work / "agent.log")
        yield node
    finally:
        for p in reversed(node.procs):
            if p.poll() is None:
                p.terminate()
        for p in node.procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        (work / "switch.ready").unlink(missing_ok=True)
        netns.down(topo, quiet=True)
