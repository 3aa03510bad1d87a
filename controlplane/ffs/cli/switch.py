"""ffs-switch: the software switch, live on Linux interfaces (run) or in virtual time (replay)."""

from __future__ import annotations

import logging
import re
import sys
import time

import click
from rich.console import Console
from rich.table import Table

from ffs.cli.common import CliError, EXIT_USAGE, dump_json, one_line_errors
from ffs.driver.base import DriverError
from ffs.topology import TopologyError, load
from ffs.units import format_rate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """The FFS pipeline of p4src/ as a software switch."""


def _ports(specs: tuple[str, ...]) -> dict[int, str]:
    out: dict[int, str] = {}
    for s in specs:
        m = re.fullmatch(r"(\d+)=([\w.@:-]+)", s)
        if not m:
            raise CliError(f"--port wants DEVICE_PORT=INTERFACE, got {s!r}", EXIT_USAGE)
        port = int(m.group(1))
        if not 0 <= port < 512 or port in out:
            raise CliError(f"--port {s}: port must be 0..511 and appear once", EXIT_USAGE)
        out[port] = m.group(2)
    if not out:
        raise CliError("give at least one --port DEVICE_PORT=INTERFACE", EXIT_USAGE)
    return out


@main.command("run")
@click.option("--port", "port_specs", multiple=True, metavar="N=IFACE", help="Bind device port N to interface IFACE (repeat).")
@click.option("--control", default="localhost:50052", show_default=True, help="Control service: unix:PATH or loopback host:port.")
@click.option("--allow-remote", is_flag=True, help="Allow a non-loopback control address.")
@click.option("--seed", default=1, show_default=True, help="Seed of the Random extern.")
@click.option("--ready-file", default=None, help="Written (with the pid) once ports and control service are up.")
@click.option("--stats-interval", default=10.0, show_default=True, help="Seconds between per-port counter logs.")
@click.option("--csfq", "csfq_specs", multiple=True, metavar="PORT=RATE",
              help="Evaluation baseline: run CSFQ (not FFS) before egress PORT of capacity RATE (repeat).")
@one_line_errors(OSError, ValueError, PermissionError, exit_code=1)
def run_cmd(port_specs, control, allow_remote, seed, ready_file, stats_interval, csfq_specs) -> None:
    """Switch real frames between Linux interfaces until SIGINT/SIGTERM."""
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="ts=%(asctime)s level=%(levelname)s logger=%(name)s msg=\"%(message)s\"")
    from ffs.switch.live import run_live

    from ffs.units import parse_rate

    csfq = {}
    for spec in csfq_specs:
        port, _, rate = spec.partition("=")
        if not port.isdigit() or not rate:
            raise CliError(f"--csfq wants PORT=RATE, got {spec!r}", EXIT_USAGE)
        csfq[int(port)] = parse_rate(rate)
    run_live(_ports(port_specs), control, seed, ready_file, stats_interval, allow_remote, csfq)


@main.command("replay")
@click.argument("topology", type=click.Path(dir_okay=False))
@click.option("--duration", type=float, default=None, help="Virtual seconds (default: the topology's duration, else 1).")
@click.option("--period-ms", default=5.0, show_default=True, help="Agent period in virtual time.")
@click.option("--seed", default=None, type=int, help="Random seed (default: the topology's).")
@click.option("--poisson", is_flag=True, help="Poisson arrivals instead of constant spacing.")
@click.option("--no-agent", is_flag=True, help="Run without the tau loop (tau stays infinite: no drops).")
@click.option("--json", "as_json", is_flag=True)
@one_line_errors(TopologyError, DriverError, ValueError, exit_code=EXIT_USAGE)
def replay_cmd(topology, duration, period_ms, seed, poisson, no_agent, as_json) -> None:
    """Run TOPOLOGY's streams through the software switch in virtual time, agents in the loop,
    and compare the delivered rates with the exact FFS allocation."""
    from ffs.agent.core import Agent
    from ffs.allocator import allocate
    from ffs.driver.model import LocalDriver
    from ffs.switch import trace
    from ffs.switch.pipeline import Pipeline

    topo = load(topology)
    if not topo.streams:
        raise CliError(f"{topology}: no streams to replay", EXIT_USAGE)
    duration = duration or topo.duration or 1.0
    seed = topo.seed if seed is None else seed
    pipes = {n: Pipeline(seed + k) for k, n in enumerate(sorted(topo.nodes))}
    agents = {n: Agent(LocalDriver(p), topo, n) for n, p in pipes.items()}
    for a in agents.values():
        a.install()

    def on_period(now_ns: int):
        if no_agent:
            return None
        return {n: [(e.egress, e.tau, e.congested) for e in a.step(now_ns / 1e9).egresses] for n, a in agents.items()}

    t0 = time.monotonic()
    res = trace.run(topo, pipes, duration, period_s=period_ms / 1e3, on_period=on_period, seed=seed, poisson=poisson)
    wall = time.monotonic() - t0
    exact = allocate(topo)
    window = (duration / 2, duration)
    rows = []
    for s in exact.streams:
        got = res.rate_bps(s.name, *window)
        rows.append({"stream": s.name, "demand": s.demand, "exact": s.rate, "measured": got,
                     "error": (got - s.rate) / s.rate if s.rate else 0.0})
    out = {"duration_s": duration, "packets": res.packets, "wall_s": wall, "packets_per_s": res.packets / wall,
           "window_s": list(window), "streams": rows,
           "tau": {f"{n}.{e}": a.taus[e].tau for n, a in agents.items() for e in a.taus}}
    if as_json:
        return dump_json(out)
    t = Table(title=f"{topo.name}: delivered rates over the second half of {duration:g} s (virtual)")
    for col in ("stream", "demand", "exact FFS", "measured", "error"):
        t.add_column(col, justify="left" if col == "stream" else "right")
    for r in rows:
        t.add_row(r["stream"], format_rate(r["demand"]), format_rate(r["exact"]), format_rate(r["measured"]), f"{100 * r['error']:+.2f} %")
    Console().print(t)
    click.echo("tau: " + ", ".join(f"{k} = {v:.4f}" for k, v in out["tau"].items()))
    click.echo(f"{res.packets} packets in {wall:.1f} s ({res.packets / wall:,.0f} packets/s)")


if __name__ == "__main__":
    main()
