# SPDX-License-Identifier: Apache-2.0
"""ffs-switch: the software switch, live on Linux interfaces (run) or in virtual time (replay)."""

from __future__ import annotations

import logging
import re
import sys
import time
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ffs.cli.common import CliError, CliUsageError, dump_json, one_line_errors
from ffs.core.allocator import allocate_window
from ffs.core.topology import TopologyError, load
from ffs.core.units import format_rate, parse_delay, parse_rate
from ffs.driver.base import DriverError
from ffs.driver.wire import default_control_address
from ffs.lab import timeline
from ffs.lab.baselines import Csfq
from ffs.lab.nodes import build_nodes
from ffs.switch import trace
from ffs.switch.fast import FastPipeline
from ffs.switch.live import run_live
from ffs.switch.tna import PKT_LENGTHS


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """The FFS pipeline of p4src/ as a software switch."""


def _ports(specs: tuple[str, ...]) -> tuple[dict[int, str], dict[int, float]]:
    """--port N=IFACE[@SPEED]: device port -> interface, and the speeds given."""
    out: dict[int, str] = {}
    speeds: dict[int, float] = {}
    for s in specs:
        m = re.fullmatch(r"(\d+)=([\w.:-]+)(?:@(\S+))?", s)
        if not m:
            raise CliUsageError(f"--port wants DEVICE_PORT=INTERFACE[@SPEED], got {s!r}")
        port = int(m.group(1))
        if not 0 <= port < 512 or port in out:
            raise CliUsageError(f"--port {s}: port must be 0..511 and appear once")
        out[port] = m.group(2)
        if m.group(3) is not None:
            try:
                speeds[port] = parse_rate(m.group(3))
            except ValueError as e:
                raise CliUsageError(f"--port {s}: {e}") from None
            if speeds[port] <= 0:
                raise CliUsageError(f"--port {s}: the speed must be positive")
    if not out:
        raise CliUsageError("give at least one --port DEVICE_PORT=INTERFACE")
    return out, speeds


def _buffers(specs: tuple[str, ...], ports: dict[int, str], speeds: dict[int, float]) -> dict[int, int]:
    out: dict[int, int] = {}
    for s in specs:
        m = re.fullmatch(r"(\d+)=(\d+)", s)
        if not m or int(m.group(2)) <= 0:
            raise CliUsageError(f"--buffer wants DEVICE_PORT=BYTES, got {s!r}")
        port = int(m.group(1))
        if port not in speeds:
            raise CliUsageError(f"--buffer {s}: port {port} has no speed (--port {port}=IFACE@SPEED)")
        out[port] = int(m.group(2))
    return out


def _drains(specs: tuple[str, ...], speeds: dict[int, float]) -> dict[int, tuple[tuple[float, float], ...]]:
    """--drain N=FACTOR or N=AT:FACTOR,AT:FACTOR,...: the times in seconds after the switch is ready."""
    out: dict[int, tuple[tuple[float, float], ...]] = {}
    for s in specs:
        m = re.fullmatch(r"(\d+)=(\S+)", s)
        if not m:
            raise CliUsageError(f"--drain wants DEVICE_PORT=FACTOR or DEVICE_PORT=AT:FACTOR,..., got {s!r}")
        port = int(m.group(1))
        if port not in speeds or port in out:
            raise CliUsageError(f"--drain {s}: port {port} needs a speed (--port {port}=IFACE@SPEED), once")
        try:
            steps = [x.split(":") if ":" in x else ["0", x] for x in m.group(2).split(",")]
            out[port] = tuple((float(t), float(f)) for t, f in steps)
        except ValueError:
            raise CliUsageError(f"--drain {s}: times and factors are numbers (e.g. 3=0.5 or 3=2:0,2.2:1)") from None
        times = [t for t, _ in out[port]]
        if not all(0.0 <= f <= 1.0 for _, f in out[port]) or times != sorted(set(times)) or times[0] < 0:
            raise CliUsageError(f"--drain {s}: factors in [0, 1] at increasing times from 0 on")
    return out


def _delays(specs: tuple[str, ...], ports: dict[int, str]) -> dict[int, float]:
    out: dict[int, float] = {}
    for s in specs:
        m = re.fullmatch(r"(\d+)=(\S+)", s)
        if not m:
            raise CliUsageError(f"--delay wants DEVICE_PORT=DELAY (e.g. 3=10ms), got {s!r}")
        port = int(m.group(1))
        if port not in ports:
            raise CliUsageError(f"--delay {s}: port {port} is not bound (--port {port}=IFACE)")
        try:
            out[port] = parse_delay(m.group(2))
        except ValueError as e:
            raise CliUsageError(f"--delay {s}: {e}") from None
    return out


@main.command("run")
@click.option(
    "--port",
    "port_specs",
    multiple=True,
    metavar="N=IFACE[@SPEED]",
    help="Bind device port N to interface IFACE (repeat); with @SPEED (a line rate, e.g. 20Mbps) the port "
    "sends at that speed, queueing and tail-dropping like a Tofino port (docs/live-mode.md).",
)
@click.option(
    "--buffer",
    "buffer_specs",
    multiple=True,
    metavar="N=BYTES",
    help="The queue of a port with a speed "
    "(default: 10 ms of its speed and at least 64 frames of the interface MTU, at most 2 MiB).",
)
@click.option(
    "--delay",
    "delay_specs",
    multiple=True,
    metavar="N=DELAY",
    help="Propagation delay of port N (e.g. 10ms): its frames leave that long after its queue sent them, "
    "as on a long wire (the queue does not count them). Round-trip times without netem.",
)
@click.option(
    "--drain",
    "drain_specs",
    multiple=True,
    metavar="N=FACTOR|N=AT:FACTOR,...",
    help="Port N (with a speed) sends FACTOR of its speed (a shaper; 0: a PFC pause), from the start or from "
    "AT seconds after the switch is ready, as the topology's `drain`.",
)
@click.option(
    "--control",
    default=None,
    help="Control service: unix:PATH (default: an owner-only socket, /run/ffs/switch.sock for root) or "
    "loopback HOST:PORT (then any local user can use it).",
)
@click.option(
    "--allow-remote",
    is_flag=True,
    help="Allow a non-loopback control address (unauthenticated: isolated networks only).",
)
@click.option("--seed", default=1, show_default=True, help="Seed of the Random extern.")
@click.option("--ready-file", default=None, help="Written (with the pid) once ports and control service are up.")
@click.option("--stats-interval", default=10.0, show_default=True, help="Seconds between per-port counter logs.")
@click.option("--csfq", is_flag=True, help="Evaluation baseline: run CSFQ (not FFS) before every port with a speed.")
@click.option(
    "--pkt-length",
    type=click.Choice(list(PKT_LENGTHS)),
    default="arrival+fcs",
    show_default=True,
    help="What the egress's pkt_length is, as on a chip: the arrival length (tofino-model) or the frame the "
    "ingress deparser emitted, with the FCS or without (spec §7.3, frame_basis).",
)
@one_line_errors(OSError, ValueError, PermissionError, error=CliError)
def run_cmd(
    port_specs,
    buffer_specs,
    delay_specs,
    drain_specs,
    control,
    allow_remote,
    seed,
    ready_file,
    stats_interval,
    csfq,
    pkt_length,
) -> None:
    """Switch real frames between Linux interfaces until SIGINT/SIGTERM."""
    logging.basicConfig(
        level=logging.INFO,
        stream=sys.stderr,
        format="ts=%(asctime)s level=%(levelname)s logger=%(name)s msg=\"%(message)s\"",
    )
    ports, speeds = _ports(port_specs)
    if csfq and not speeds:
        raise CliUsageError("--csfq runs before ports with a speed: give one (--port N=IFACE@SPEED)")
    run_live(
        ports,
        control or default_control_address(),
        seed,
        ready_file,
        stats_interval,
        allow_remote,
        csfq=Csfq(k_s=0.1, k_alpha_s=0.1, k_c_s=0.1) if csfq else None,
        speeds=speeds,
        buffers=_buffers(buffer_specs, ports, speeds),
        delays=_delays(delay_specs, ports),
        drains=_drains(drain_specs, speeds),
        pkt_length=PKT_LENGTHS[pkt_length],
    )


@main.command("replay")
@click.argument("topology", type=click.Path(dir_okay=False))
@click.option(
    "--duration",
    type=float,
    default=None,
    help="Virtual seconds (default: the topology's duration, else 1; with --pcap: the capture's length).",
)
@click.option("--period-ms", default=5.0, show_default=True, help="Agent period in virtual time.")
@click.option("--seed", default=None, type=int, help="Random seed (default: the topology's).")
@click.option("--poisson", is_flag=True, help="Poisson arrivals instead of constant spacing.")
@click.option("--no-agent", is_flag=True, help="Run without the tau loop (tau stays infinite: no drops).")
@click.option(
    "--pcap",
    "pcap_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Replay this capture (classic pcap, Ethernet) instead of the topology's streams.",
)
@click.option("--ingress", default=None, metavar="NODE.IFACE", help="With --pcap: where the frames enter.")
@click.option(
    "--line-rate",
    default=None,
    metavar="RATE",
    help="With --pcap: re-time the frames back to back at RATE, in capture order (the capture times play no part).",
)
@click.option(
    "--speed",
    default=1.0,
    show_default=True,
    help="With --pcap: play the capture this many times faster (not with --line-rate).",
)
@click.option(
    "--engine",
    type=click.Choice(["auto", "c", "python"]),
    default="auto",
    show_default=True,
    help="Pipeline: compiled (c), the Python reference, or c when built.",
)
@click.option(
    "--bin-ms",
    type=float,
    default=None,
    help="Report every stream's delivered rate per bin of this many ms, and τ per period (--json: "
    "'series'; the topology's streams only).",
)
@click.option(
    "--plot",
    "plot_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Draw the streams' delivered rates and τ over time to this PNG (bins of --bin-ms, default 1).",
)
@click.option("--json", "as_json", is_flag=True)
@one_line_errors(TopologyError, DriverError, ValueError, OSError, RuntimeError, error=CliUsageError)
def replay_cmd(
    topology,
    duration,
    period_ms,
    seed,
    poisson,
    no_agent,
    pcap_file,
    ingress,
    line_rate,
    speed,
    engine,
    bin_ms,
    plot_file,
    as_json,
) -> None:
    """Run TOPOLOGY's streams (or a pcap) through the software switch in virtual time, agents in the
    loop, and compare the delivered rates with the exact FFS allocation."""
    topo = load(topology)
    seed = topo.seed if seed is None else seed
    if plot_file is not None and bin_ms is None:
        bin_ms = 1.0
    if bin_ms is not None and (not 0 < bin_ms <= 60_000 or pcap_file is not None):
        raise CliUsageError("--bin-ms must be in (0, 60000] ms, and goes with the topology's streams (not --pcap)")
    nodes = build_nodes(topo, seed, engine)
    pipes, agents = nodes.pipelines, nodes.agents
    kind = "c" if all(isinstance(p, FastPipeline) for p in pipes.values()) else "python"
    t0 = time.monotonic()
    if pcap_file is not None:
        out = _replay_pcap(
            topo,
            pipes,
            agents,
            pcap_file,
            ingress,
            line_rate and parse_rate(line_rate),
            speed,
            duration,
            period_ms / 1e3,
            no_agent,
        )
    else:
        out = _replay_streams(
            topo, topology, pipes, agents, duration, period_ms, seed, poisson, no_agent, ingress, line_rate, bin_ms
        )
    wall = time.monotonic() - t0
    out.update(
        {
            "engine": kind,
            "wall_s": wall,
            "packets_per_s": out["packets"] / wall if wall > 0 else 0.0,
            "tau": {f"{n}.{e}": a.taus[e].tau for n, a in agents.items() for e in a.taus},
        }
    )
    if plot_file is not None:
        out["plot"] = str(timeline.plot(out["series"], Path(plot_file), f"{topo.name}: delivered rates and τ"))
    if as_json:
        return dump_json(out)
    _print_replay(topo, out, pcap_file is None, wall, kind)
    if plot_file is not None:
        click.echo(f"plot: {out['plot']}")


def _replay_streams(
    topo, topology, pipes, agents, duration, period_ms, seed, poisson, no_agent, ingress, line_rate, bin_ms=None
) -> dict:
    """The topology's streams through the switch; each stream's rate over the second half against
    the exact allocation."""
    if ingress or line_rate:
        raise CliUsageError("--ingress and --line-rate go with --pcap")
    if not topo.streams:
        raise CliUsageError(f"{topology}: no streams to replay")
    duration = duration or topo.duration or 1.0

    def on_period(now_ns: int):
        if no_agent:
            return None
        return {n: [(e.egress, e.tau, e.congested) for e in a.step(now_ns / 1e9).egresses] for n, a in agents.items()}

    bin_s = 0.01 if bin_ms is None else bin_ms / 1e3
    res = trace.run(
        topo, pipes, duration, period_s=period_ms / 1e3, on_period=on_period, seed=seed, poisson=poisson, bin_s=bin_s
    )
    window = (duration / 2, duration)
    exact = allocate_window(topo, *window)  # honours the streams' start and stop
    rows = []
    for s in topo.streams:
        got = res.rate_bps(s.name, *window)
        x = exact[s.name]
        # no relative error against an exact 0: the row shows the measured rate alone
        rows.append(
            {
                "stream": s.name,
                "demand": s.demand,
                "exact": x,
                "measured": got,
                "error": (got - x) / x if x else None,
            }
        )
    out = {"duration_s": duration, "packets": res.packets, "window_s": list(window), "streams": rows}
    if bin_ms is not None:
        taus = [
            (p["t"], {f"{n}.{e}": (tau, congested) for n, rows_ in p["value"].items() for e, tau, congested in rows_})
            for p in res.periods
            if p["value"] is not None
        ]
        out["series"] = timeline.series(res, duration, taus)
    return out


def _print_replay(topo, out: dict, streams: bool, wall: float, kind: str) -> None:
    """replay_cmd's table: per stream, against the exact allocation (`streams`) or a capture's counts."""
    t = Table(title=f"{topo.name}: delivered rates over [{out['window_s'][0]:g}, {out['window_s'][1]:g}) s (virtual)")
    cols = (
        ("stream", "demand", "exact FFS", "measured", "error")
        if streams
        else ("stream", "offered", "accepted", "dropped")
    )
    for col in cols:
        t.add_column(col, justify="left" if col == "stream" else "right")
    for r in out["streams"]:
        if streams:
            err = "n/a (exact 0)" if r["error"] is None else f"{100 * r['error']:+.2f} %"
            t.add_row(r["stream"], format_rate(r["demand"]), format_rate(r["exact"]), format_rate(r["measured"]), err)
        else:
            t.add_row(r["stream"], format_rate(r["offered"]), format_rate(r["accepted"]), str(r["dropped"]))
    Console().print(t)
    click.echo("tau: " + ", ".join(f"{k} = {v:.4f}" for k, v in out["tau"].items()))
    click.echo(f"{out['packets']} packets in {wall:.1f} s ({out['packets_per_s']:,.0f} packets/s, engine {kind})")


def _replay_pcap(topo, pipes, agents, pcap_file, ingress, line_rate_bps, speed, duration, period_s, no_agent) -> dict:
    """A capture into one node's interface; the node's agent steps every period (frames that leave
    toward another node are counted there, not forwarded)."""
    if not ingress or "." not in ingress:
        raise CliUsageError("--pcap needs --ingress NODE.IFACE")
    node, iface = ingress.split(".", 1)
    if node not in topo.nodes or iface not in topo.nodes[node].interfaces:
        raise CliUsageError(f"--ingress {ingress}: no such node interface in {topo.name}")
    if not speed > 0:
        raise CliUsageError("--speed must be positive")
    if line_rate_bps is not None and not line_rate_bps > 0:
        raise CliUsageError("--line-rate must be positive")
    if line_rate_bps and speed != 1.0:
        raise CliUsageError("--speed times the capture, --line-rate replaces its times: give one of them")
    port = topo.nodes[node].interfaces[iface].port
    arrivals = list(trace.pcap_arrivals(pcap_file, port, line_rate_bps=line_rate_bps, speed=speed))
    if not arrivals:
        raise CliUsageError(f"{pcap_file}: no frames")
    last = arrivals[-1].t_s
    duration = duration or (last + period_s)
    agent = agents[node]
    on_period = None if no_agent else (lambda now_ns, drv: agent.step(now_ns / 1e9).egresses and None)
    res = trace.replay(pipes[node], arrivals, duration, period_s=period_s, on_period=on_period)
    rows = []
    for s in sorted(res.sent):
        offered = (
            sum(trace.frame_wire_len(a.frame) for a in arrivals if a.stream == s and a.t_s < duration) * 8 / duration
        )
        rows.append(
            {
                "stream": s,
                "packets": res.sent[s],
                "offered": offered,
                "accepted": res.rate_bps(s, 0, duration),
                "dropped": sum(res.dropped[s].values()),
                "drop_reasons": res.dropped[s],
            }
        )
    return {
        "duration_s": duration,
        "packets": res.packets,
        "window_s": [0.0, duration],
        "streams": rows,
        "egress_bps": {str(p): float(v.sum()) * 8 / duration for p, v in sorted(res.egress.items())},
    }


if __name__ == "__main__":
    main()
