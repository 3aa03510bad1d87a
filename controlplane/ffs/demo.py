"""The main job: FFS isolating a well-behaved sender from a flood, live, on the software switch.

Brings up the topology's hosts and switch in private network namespaces, starts `ffs-switch run`
on the switch's veths and `ffs-agent` against it, sends paced UDP from each host that a stream
starts at, and prints every second what the receiver gets from each sender, with τ and A from the
agent. Ends with a verdict against the exact FFS allocation and tears everything down.

    python -m ffs.demo [TOPOLOGY] [--duration S]        (as root; `make demo`)
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console

from ffs import netns
from ffs.agent.api import ApiError, call
from ffs.allocator import allocate
from ffs.liverun import LiveError, live_node
from ffs.topology import Topology, TopologyError, load
from ffs.units import format_rate

console = Console(highlight=False)


class DemoError(Exception):
    pass


def senders(topo: Topology, plan: netns.Plan) -> list[tuple[str, str, str, float, int]]:
    """(stream, host, source address, rate, size) for every stream that starts at a host."""
    out = []
    for s in topo.streams:
        first = s.path[0]
        host = next((h for h in topo.hosts.values() if h.attach == f"{first.node}.{first.ingress}"), None)
        if host is not None:
            out.append((s.name, host.name, str(ipaddress.ip_interface(host.address).ip), s.demand, s.packet_size))
    return out


def receiver(topo: Topology, plan: netns.Plan) -> tuple[str, str]:
    last = topo.streams[0].path[-1]
    host = next(h for h in topo.hosts.values() if h.attach == f"{last.node}.{last.egress}")
    return host.name, str(ipaddress.ip_interface(host.address).ip)


def run(topology: str, duration_s: float, period_ms: float) -> bool:
    topo = load(topology)
    if not topo.streams:
        raise DemoError(f"{topology}: no streams to send")
    work = Path(tempfile.mkdtemp(prefix="ffs-demo-"))
    exe = [sys.executable, "-m"]
    try:
        with live_node(topology, work, period_ms=period_ms) as node:
            plan = node.plan
            console.print(f"[bold]FFS demo[/bold]: {topo.name}, {len(plan.hosts)} hosts in private namespaces, switch {plan.switch_ns}")
            rx_host, rx_addr = receiver(topo, plan)
            rx = node.spawn(node.exec_args(rx_host, *exe, "ffs.traffic", "recv", f"--duration={duration_s + 1}"),
                            stdout=subprocess.PIPE, text=True)
            time.sleep(0.3)
            tx = senders(topo, plan)
            for name, host, _, rate, size in tx:
                node.spawn(node.exec_args(host, *exe, "ffs.traffic", "send", f"--dst={rx_addr}", f"--rate={rate}",
                                          f"--size={size}", f"--duration={duration_s}"), stdout=subprocess.DEVNULL)
            return report(topo, tx, rx, node.agent_socket, duration_s)
    finally:
        console.print(f"torn down (logs in {work})")


def report(topo: Topology, tx: list, rx: subprocess.Popen, agent_sock: Path, duration_s: float) -> bool:
    exact = {s.name: s.rate for s in allocate(topo).streams}
    header = "  t   " + "".join(f"{n:>16}" for n, *_ in tx) + f"{'accepted A':>14}{'tau':>8}"
    console.print("sending: " + ", ".join(f"{n} from {h} at {format_rate(r)}" for n, h, _, r, _ in tx))
    console.print(f"[bold]{header}[/bold]")
    series: dict[str, list[float]] = {n: [] for n, *_ in tx}
    for line in rx.stdout:
        rec = json.loads(line)
        if rec["t"] > duration_s:
            break
        try:
            st = call(agent_sock, {"op": "status"}, timeout_s=2)
            eg = next((e for e in st["egresses"] if e["offered_bps"] > 0), None)
        except ApiError:
            eg = None
        row = f"{rec['t']:4.0f} s"
        for name, _, addr, _, _ in tx:
            v = rec["rates_bps"].get(addr, 0.0)
            series[name].append(v)
            row += f"{format_rate(v):>16}"
        if eg:
            row += f"{format_rate(eg['accepted_bps']):>14}{(eg['tau'] if eg['congested'] else float('inf')):>8.3f}"
        console.print(row)
    ok = True
    console.print("\n[bold]steady state[/bold] (second half) against the exact FFS allocation:")
    for name, _, _, rate, _ in tx:
        half = series[name][len(series[name]) // 2:]
        got = sum(half) / max(1, len(half))
        good = got >= 0.9 * exact[name]
        ok &= good
        console.print(f"  {name:<14} sends {format_rate(rate):>10}, gets {format_rate(got):>10}, exact FFS {format_rate(exact[name]):>10}  "
                      + ("[green]ok[/green]" if good else "[red]below 90 %[/red]"))
    console.print("[bold green]FFS isolated the well-behaved sender.[/bold green]" if ok else "[bold red]isolation not achieved[/bold red]")
    return ok


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m ffs.demo")
    ap.add_argument("topology", nargs="?", default=str(Path(__file__).resolve().parents[2] / "topologies" / "dumbbell.yaml"))
    ap.add_argument("--duration", type=float, default=float(os.environ.get("DURATION", 20)))
    ap.add_argument("--period-ms", type=float, default=100.0)
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        print("ffs.demo: error: the demo creates network namespaces and needs root (try: sudo make demo)", file=sys.stderr)
        return 2
    try:
        return 0 if run(args.topology, args.duration, args.period_ms) else 1
    except (DemoError, LiveError, netns.NetnsError, TopologyError) as e:
        print(f"ffs.demo: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
