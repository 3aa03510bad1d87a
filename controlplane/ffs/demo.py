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
from ffs.topology import Topology, TopologyError, load
from ffs.units import format_rate

console = Console(highlight=False)


class DemoError(Exception):
    pass


def _wait(cond, timeout_s: float, what: str, proc: subprocess.Popen | None = None, log: Path | None = None) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if cond():
            return
        if proc is not None and proc.poll() is not None:
            tail = log.read_text().strip().splitlines()[-3:] if log and log.exists() else []
            raise DemoError(f"{what} exited early: {' | '.join(tail)}")
        time.sleep(0.1)
    raise DemoError(f"{what} not ready after {timeout_s:g} s")


def _agent_ready(sock: Path) -> bool:
    try:
        call(sock, {"op": "status"}, timeout_s=1)
        return True
    except (ApiError, OSError, ValueError):
        return False


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
    plan = netns.up(topo)
    procs: list[subprocess.Popen] = []
    work = Path(tempfile.mkdtemp(prefix="ffs-demo-"))
    exe = [sys.executable, "-m"]
    try:
        console.print(f"[bold]FFS demo[/bold]: {topo.name}, {len(plan.hosts)} hosts in private namespaces, switch {plan.switch_ns}")
        sw_log = work / "switch.log"
        ports = [f"--port={p}={i}" for p, i in sorted(plan.ports().items())]
        sw = subprocess.Popen(["ip", "netns", "exec", plan.switch_ns, *exe, "ffs.cli.switch", "run", *ports,
                               f"--control=unix:{work}/switch.sock", f"--ready-file={work}/switch.ready"],
                              stdout=open(sw_log, "w"), stderr=subprocess.STDOUT)
        procs.append(sw)
        _wait(lambda: (work / "switch.ready").exists(), 30, "ffs-switch", sw, sw_log)
        ag_log = work / "agent.log"
        ag = subprocess.Popen([*exe, "ffs.cli.agent", f"--topology={topology}", f"--node={plan.node}", "--target=model",
                               f"--switch=unix:{work}/switch.sock", f"--socket={work}/agent.sock",
                               f"--state-dir={work}/state", f"--period-ms={period_ms}", "--lpf-time-constant-us=20000"],
                              stdout=open(ag_log, "w"), stderr=subprocess.STDOUT)
        procs.append(ag)
        _wait(lambda: _agent_ready(work / "agent.sock"), 30, "ffs-agent", ag, ag_log)
        rx_host, rx_addr = receiver(topo, plan)
        rx = subprocess.Popen(["ip", "netns", "exec", plan.host(rx_host).netns, *exe, "ffs.traffic", "recv",
                               f"--duration={duration_s + 1}"], stdout=subprocess.PIPE, text=True)
        procs.append(rx)
        time.sleep(0.3)
        tx = senders(topo, plan)
        for name, host, _, rate, size in tx:
            procs.append(subprocess.Popen(["ip", "netns", "exec", plan.host(host).netns, *exe, "ffs.traffic", "send",
                                           f"--dst={rx_addr}", f"--rate={rate}", f"--size={size}", f"--duration={duration_s}"],
                                          stdout=subprocess.DEVNULL))
        exact = {s.name: s.rate for s in allocate(topo).streams}
        by_addr = {addr: name for name, _, addr, _, _ in tx}
        header = "  t   " + "".join(f"{n:>16}" for n, *_ in tx) + f"{'accepted A':>14}{'tau':>8}"
        console.print("sending: " + ", ".join(f"{n} from {h} at {format_rate(r)}" for n, h, _, r, _ in tx))
        console.print(f"[bold]{header}[/bold]")
        series: dict[str, list[float]] = {n: [] for n, *_ in tx}
        for line in rx.stdout:
            rec = json.loads(line)
            if rec["t"] > duration_s:
                break
            try:
                st = call(work / "agent.sock", {"op": "status"}, timeout_s=2)
                eg = next((e for e in st["egresses"] if e["offered_bps"] > 0), None)
            except ApiError:
                eg = None
            row = f"{rec['t']:4.0f} s"
            for name, *_ in tx:
                addr = next(a for a, n in by_addr.items() if n == name)
                v = rec["rates_bps"].get(addr, 0.0)
                series[name].append(v)
                row += f"{format_rate(v):>16}"
            if eg:
                row += f"{format_rate(eg['accepted_bps']):>14}{(eg['tau'] if eg['congested'] else float('inf')):>8.3f}"
            console.print(row)
        half = max(1, len(next(iter(series.values()))) // 2)
        ok = True
        console.print("\n[bold]steady state[/bold] (second half) against the exact FFS allocation:")
        for name, host, _, rate, _ in tx:
            got = sum(series[name][half:]) / max(1, len(series[name][half:]))
            want = exact[name]
            good = got >= 0.9 * want
            ok &= good
            console.print(f"  {name:<14} sends {format_rate(rate):>10}, gets {format_rate(got):>10}, exact FFS {format_rate(want):>10}  "
                          + ("[green]ok[/green]" if good else "[red]below 90 %[/red]"))
        console.print("[bold green]FFS isolated the well-behaved sender.[/bold green]" if ok else "[bold red]isolation not achieved[/bold red]")
        return ok
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
        netns.down(topo, quiet=True)
        console.print(f"torn down (logs in {work})")


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
    except (DemoError, netns.NetnsError, TopologyError) as e:
        print(f"ffs.demo: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
