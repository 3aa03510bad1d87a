# SPDX-License-Identifier: Apache-2.0
"""The main job: FFS isolating a well-behaved sender from a flood, live, on the software switch.

Brings up the topology's hosts and switch in private network namespaces, starts `ffs-switch run`
on the switch's veths and `ffs-agent` against it, sends paced UDP from each host a stream starts
at, and prints every second what the receiver gets from each sender, with A, R* and τ of the
bottleneck egress from the agent (its control API: what `ffsctl status --json` shows). Ends with a
verdict and tears everything down, also on Ctrl-C, SIGTERM or a failure.

Verdict: every well-behaved sender (demand within its share) keeps ≥ 90 % of min(demand, share)
while the egress as a whole is held near its target (≤ 110 %): without FFS the flood would simply
take the veth's spare capacity, and "isolation" would mean nothing.

    python -m ffs.lab.demo [TOPOLOGY] [--duration S]        (as root; `make demo`, DURATION=S)
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from ffs.core.allocator import allocate
from ffs.core.api_client import ApiError, call
from ffs.core.topology import Topology, TopologyError, load
from ffs.core.units import format_rate
from ffs.lab import netns
from ffs.lab.liverun import LiveError, LiveNode, live_node

console = Console(highlight=False, soft_wrap=True)
KEEP = 0.90  # a well-behaved sender keeps at least this part of min(demand, share)
HOLD = 1.10  # the bottleneck egress carries at most this part of its target


class DemoError(Exception):
    pass


@dataclass(frozen=True)
class Sender:
    stream: str
    host: str
    address: str
    demand: float  # bit/s
    size: int  # bytes
    egress: str
    share: float  # the share the data plane enforces at the egress (bit/s)
    exact: float  # the exact FFS allocation (Eq. 1-2)

    @property
    def well_behaved(self) -> bool:
        return self.demand <= self.share


def senders(topo: Topology) -> list[Sender]:
    """Every stream that starts at a host and crosses one node, with its share and exact rate."""
    exact = {s.name: s.rate for s in allocate(topo).streams}
    out = []
    for s in topo.streams:
        hop = s.path[0]
        host = next((h for h in topo.hosts.values() if h.attach == f"{hop.node}.{hop.ingress}"), None)
        if host is None:
            continue
        share = topo.nodes[hop.node].share(hop.ingress, hop.egress)
        out.append(
            Sender(
                s.name,
                host.name,
                str(ipaddress.ip_interface(host.address).ip),
                s.demand,
                s.packet_size,
                hop.egress,
                share,
                exact[s.name],
            )
        )
    if not out:
        raise DemoError(f"{topo.source}: no stream starts at a host")
    return out


def receiver(topo: Topology) -> tuple[str, str]:
    last = topo.streams[0].path[-1]
    host = next((h for h in topo.hosts.values() if h.attach == f"{last.node}.{last.egress}"), None)
    if host is None:
        raise DemoError(f"{topo.source}: no host at {last.node}.{last.egress}, where the first stream ends")
    if any((s.path[-1].node, s.path[-1].egress) != (last.node, last.egress) for s in topo.streams):
        raise DemoError(f"{topo.source}: the demo wants every stream to end at {host.name}")
    return host.name, str(ipaddress.ip_interface(host.address).ip)


def _check_alive(node: LiveNode) -> None:
    for name, p in zip(("ffs-switch", "ffs-agent"), node.procs[:2], strict=False):
        if p.poll() is not None:
            log = node.work / ("switch.log" if name == "ffs-switch" else "agent.log")
            tail = " | ".join(log.read_text().strip().splitlines()[-2:]) if log.exists() else ""
            raise DemoError(f"{name} exited with status {p.returncode}: {tail or 'no output'}")


def _egress_status(sock: Path, egress: str) -> dict | None:
    try:
        st = call(sock, {"op": "status"}, timeout_s=2)
    except (ApiError, OSError, ValueError):
        return None
    return next((e for e in st["egresses"] if e["egress"] == egress), None)


def run(topology: str, duration_s: float, period_ms: float) -> bool:
    topo = load(topology)
    tx = senders(topo)
    rx_host, rx_addr = receiver(topo)
    work = Path(tempfile.mkdtemp(prefix="ffs-demo-"))
    exe = [sys.executable, "-m"]
    console.print(f"[bold]FFS demo[/bold]: {topo.name} on the software switch, live, for {duration_s:g} s")
    try:
        with live_node(topology, work, period_ms=period_ms) as node:
            console.print(
                f"namespaces: switch {node.plan.switch_ns} (ports "
                + ", ".join(f"{p}={i}" for p, i in sorted(node.plan.ports().items()))
                + "), hosts "
                + ", ".join(f"{h.host}={h.netns}" for h in node.plan.hosts)
            )
            console.print(f"ffs-switch run and ffs-agent (node {node.plan.node}, τ every {period_ms:g} ms) are up")
            rx = node.spawn(
                node.exec_args(rx_host, *exe, "ffs.lab.traffic", "recv", f"--duration={duration_s + 1}"),
                stdout=subprocess.PIPE,
                text=True,
            )
            time.sleep(0.3)
            for s in tx:
                node.spawn(
                    node.exec_args(
                        s.host,
                        *exe,
                        "ffs.lab.traffic",
                        "send",
                        f"--dst={rx_addr}",
                        f"--rate={s.demand}",
                        f"--size={s.size}",
                        f"--duration={duration_s}",
                    ),
                    stdout=subprocess.DEVNULL,
                )
            return report(topo, node, tx, rx, rx_host, duration_s)
    finally:
        console.print(f"torn down: namespaces and processes removed (logs in {work})")


def report(
    topo: Topology, node: LiveNode, tx: list[Sender], rx: subprocess.Popen, rx_host: str, duration_s: float
) -> bool:
    egress = tx[0].egress
    node_name = node.plan.node
    capacity = topo.nodes[node_name].interfaces[egress].capacity
    target = topo.nodes[node_name].target(egress)
    console.print(
        "senders: "
        + "; ".join(f"{s.stream} from {s.host} at {format_rate(s.demand)} (share {format_rate(s.share)})" for s in tx)
        + f"; receiver {rx_host}"
    )
    console.print(f"bottleneck: {node_name}.{egress}, capacity {format_rate(capacity)}, target {format_rate(target)}\n")
    header = (
        "   t  " + "".join(f"{s.stream[:14]:>15}" for s in tx) + f"{'total':>13}{'A (agent)':>13}{'R*':>13}{'tau':>8}"
    )
    console.print(f"[bold]{header}[/bold]")
    series, totals = _live_rows(node, rx, tx, egress, duration_s)
    _check_alive(node)
    if not totals:
        raise DemoError("the receiver reported nothing")
    return _steady_state(tx, series, totals, egress, target)


def _live_rows(
    node: LiveNode, rx: subprocess.Popen, tx: list[Sender], egress: str, duration_s: float
) -> tuple[dict[str, list[float]], list[float]]:
    """One printed row a second from the receiver's report and the agent's status; each sender's
    series of rates and the totals."""
    series: dict[str, list[float]] = {s.stream: [] for s in tx}
    totals: list[float] = []
    assert rx.stdout is not None  # started with stdout=PIPE
    for line in rx.stdout:
        _check_alive(node)
        rec = json.loads(line)
        if rec["t"] > duration_s:
            break
        eg = _egress_status(node.agent_socket, egress)
        row = f"{rec['t']:4.0f} s"
        total = 0.0
        for s in tx:
            v = rec["rates_bps"].get(s.address, 0.0)
            series[s.stream].append(v)
            total += v
            row += f"{format_rate(v):>15}"
        totals.append(total)
        row += f"{format_rate(total):>13}"
        if eg:
            tau = f"{eg['tau']:.3f}" if eg["congested"] and eg["tau"] is not None else "inf"
            row += f"{format_rate(eg['accepted_bps']):>13}{format_rate(eg['offered_bps']):>13}{tau:>8}"
        console.print(row)
    return series, totals


def _steady_state(
    tx: list[Sender], series: dict[str, list[float]], totals: list[float], egress: str, target: float
) -> bool:
    """The verdict over the second half: each well-behaved sender kept its share, the egress held."""
    half = len(totals) // 2  # steady state: the second half

    def mean(xs: list[float]) -> float:
        tail = xs[half:]
        return sum(tail) / max(1, len(tail))

    console.print(f"\n[bold]steady state[/bold] (mean of the last {len(totals) - half} s):")
    ok = True
    for s in tx:
        got = mean(series[s.stream])
        line = (
            f"  {s.stream:<14} sends {format_rate(s.demand):>10}, share {format_rate(s.share):>10}, "
            f"gets {format_rate(got):>10} (exact FFS {format_rate(s.exact)})"
        )
        if s.well_behaved:
            need = KEEP * min(s.demand, s.share)
            good = got >= need
            ok &= good
            line += (
                "  [green]kept[/green]"
                if good
                else f"  [red]below {100 * KEEP:.0f} % of {format_rate(min(s.demand, s.share))}[/red]"
            )
        else:
            line += f"  cut to {100 * got / s.demand:.0f} % of its demand"
        console.print(line)
    total = mean(totals)
    held = total <= HOLD * target
    ok &= held
    console.print(
        f"  egress {egress:<9} carries {format_rate(total):>10} of its target {format_rate(target)}  "
        + ("[green]held[/green]" if held else f"[red]over {100 * HOLD:.0f} %: FFS did not hold the bottleneck[/red]")
    )
    if not any(s.well_behaved for s in tx):
        console.print("[yellow]no sender stays within its share: nothing to isolate[/yellow]")
        return False
    console.print(
        "[bold green]FFS isolated the well-behaved sender from the flood.[/bold green]"
        if ok
        else "[bold red]isolation not achieved[/bold red]"
    )
    return ok


def _interrupt(signum: int, frame) -> None:
    # the first Ctrl-C or SIGTERM unwinds into the teardown; further ones must not cut it short
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m ffs.lab.demo", description="FFS isolating a sender from a flood, live (root)."
    )
    ap.add_argument(
        "topology", nargs="?", default=str(Path(__file__).resolve().parents[2] / "topologies" / "dumbbell.yaml")
    )
    ap.add_argument("--duration", type=float, default=None, help="seconds of traffic (default: $DURATION, else 20)")
    ap.add_argument("--period-ms", type=float, default=100.0, help="the agent's τ period")
    args = ap.parse_args(argv)
    try:
        duration = args.duration if args.duration is not None else float(os.environ.get("DURATION") or 20)
    except ValueError:
        print(
            f"ffs.lab.demo: error: DURATION must be a number of seconds, got {os.environ.get('DURATION')!r}",
            file=sys.stderr,
        )
        return 2
    if not 4 <= duration <= 3600:
        print("ffs.lab.demo: error: the duration must be 4..3600 s", file=sys.stderr)
        return 2
    if os.geteuid() != 0:
        print(
            "ffs.lab.demo: error: the demo creates network namespaces and raw sockets, so it needs root "
            "(try: sudo make demo)",
            file=sys.stderr,
        )
        return 2
    signal.signal(signal.SIGINT, _interrupt)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        return 0 if run(args.topology, duration, args.period_ms) else 1
    except (DemoError, LiveError, netns.NetnsError, TopologyError) as e:
        print(f"ffs.lab.demo: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ffs.lab.demo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
