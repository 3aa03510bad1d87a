# SPDX-License-Identifier: Apache-2.0
"""ffs-sim: the exact FFS allocation of a topology (and, with the evaluation, scenario runs)."""

from __future__ import annotations

import math
import sys

import click
from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ffs.cli.common import dump_json, one_line_errors
from ffs.core.topology import TopologyError, load
from ffs.core.units import format_rate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """FFS simulation tools: the exact allocation (the oracle) and scenario runs."""


@main.command("allocate", short_help="The exact FFS allocation of a topology's streams (the oracle).")
@click.argument("topology", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (infinities as null).")
@one_line_errors(TopologyError, ValueError, OSError)
def allocate_cmd(topology: str, as_json: bool) -> None:
    """Compute the exact FFS allocation of TOPOLOGY's streams: Eq. 1 per hop, Eq. 2 with tau per
    congested egress by Brent's method, iterated across hops to a fixed point; RI (Algorithm 2) and
    RRI (Algorithm 4, pre-gamma label) per hop."""
    topo = load(topology)  # a bad file fails before scipy is imported
    from ffs.core.allocator import allocate

    alloc = allocate(topo)
    if as_json:
        dump_json(alloc.to_dict())
        return
    # a terminal wraps to its width; a pipe or a file gets whole lines
    console = Console(width=None if sys.stdout.isatty() else 160)
    t = Table(title="streams (per hop: f, rate in -> out, gamma, RI, RRI)", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("stream", "hop", "f", "rate in", "rate out", "gamma", "RI", "RRI"):
        t.add_column(col, justify="left" if col in ("stream", "hop") else "right", overflow="fold")
    for s in alloc.streams:
        for k, h in enumerate(s.hops):
            t.add_row(
                s.name if k == 0 else "",
                f"{h.node}:{h.ingress}->{h.egress}",
                format_rate(h.f),
                format_rate(h.rate_in),
                format_rate(h.rate_out),
                f"{h.gamma:.4f}",
                format_rate(h.ri),
                "inf" if math.isinf(h.rri) else f"{h.rri:.4f}",
            )
    console.print(t)
    e = Table(title="egresses", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("node", "egress", "target", "offered R*", "accepted A", "tau"):
        e.add_column(col, justify="left" if col in ("node", "egress") else "right", overflow="fold")
    for x in alloc.egresses:
        if not x.congested:
            tau = "inf (uncongested)"
        elif math.isinf(x.tau):
            tau = "inf (shares cannot fill the target)"
        else:
            tau = f"{x.tau:.6f}"
        e.add_row(x.node, x.egress, format_rate(x.target), format_rate(x.offered), format_rate(x.accepted), tau)
    console.print(e)


@main.command("run")
@click.argument("scenario", type=click.Path(dir_okay=False))
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default=None,
    help="Result directory (default results/<name>-<scheme>).",
)
@click.option(
    "--scheme",
    type=click.Choice(["ffs", "fifo", "csfq"]),
    default="ffs",
    show_default=True,
    help="ffs: the agents' tau loop; fifo: FFS off, a tail-drop queue per egress; csfq: CSFQ before the queue.",
)
@click.option("--duration", type=float, default=None, help="Virtual seconds (default: the scenario's).")
@click.option("--seed", type=int, default=None)
@click.option("--target-factor", type=float, default=None, help="Override every node's target factor (FFS-C85: 0.85).")
@click.option("--period-ms", default=5.0, show_default=True, help="Agent period in virtual time.")
@click.option("--json", "as_json", is_flag=True)
@one_line_errors(TopologyError, ValueError, OSError)
def run_cmd(scenario, out_dir, scheme, duration, seed, target_factor, period_ms, as_json) -> None:
    """Run SCENARIO packet by packet in virtual time and write rates, tau, A, drops and plots."""
    from pathlib import Path

    from tqdm import tqdm

    from ffs.lab.experiments import run_scenario, with_target_factor, write_result

    topo = with_target_factor(load(scenario), target_factor)
    if not topo.streams:
        raise ValueError(f"{scenario}: no streams")
    total = duration or topo.duration or 1.0
    bar = tqdm(
        total=total,
        unit="s",
        desc=f"{topo.name} [{scheme}]",
        disable=as_json,
        leave=False,
        bar_format="{l_bar}{bar}| {n:.2f}/{total:.2f} virtual s [{elapsed}<{remaining}]",
    )

    def progress(t: float) -> None:
        bar.update(t - bar.n)

    res = run_scenario(topo, scheme, duration, seed, period_ms / 1e3, progress=progress)
    bar.close()
    out = Path(out_dir or f"results/{topo.name}-{scheme}")
    files = write_result(res, out)
    if as_json:
        return dump_json({**res.summary(), "files": [str(f) for f in files]})
    console = Console()
    t = Table(title=escape(f"{topo.name} [{scheme}]: second half of {res.duration_s:g} virtual s"))
    for col in ("stream", "demand", "exact FFS", "measured", "error"):
        t.add_column(col, justify="left" if col == "stream" else "right")
    for s in res.streams:
        t.add_row(
            s["stream"],
            format_rate(s["demand"]),
            format_rate(s["exact"]),
            format_rate(s["measured"]),
            f"{100 * s['error']:+.2f} %",
        )
    console.print(t)
    for k, v in res.settling_s.items():
        console.print(
            f"tau at {k} settles (within 10 %) after {v * 1e3:.0f} ms"
            if v is not None
            else f"tau at {k} did not settle"
        )
    console.print("wrote " + ", ".join(str(f) for f in files))


@main.command(
    "network", short_help="The Internet-scale study: per-stream allocations (FFS, Helia, GLWP) and deployment."
)
@click.option(
    "--caida",
    type=click.Path(dir_okay=False),
    default=None,
    help="A CAIDA AS-relationship file (as1|as2|rel); default: a generated graph.",
)
@click.option(
    "--top",
    type=click.IntRange(3),
    default=2000,
    show_default=True,
    help="With --caida: keep the ASes of highest degree.",
)
@click.option(
    "--nodes", type=click.IntRange(3), default=2000, show_default=True, help="Generated graph: number of ASes."
)
@click.option(
    "--graph",
    type=click.Choice(["ba", "internet"]),
    default="ba",
    show_default=True,
    help="Generated graph: ba (Barabasi-Albert power law) or internet (tiers with customer-provider and peer "
    "links, networkx's random_internet_as_graph, whose memory grows about as the square of --nodes; the "
    "whole Internet, about 75000 ASes, is best read from a CAIDA file with --top 100000).",
)
@click.option(
    "--attach",
    type=click.IntRange(1),
    default=3,
    show_default=True,
    help="Generated graph: links each new AS attaches with (Barabasi-Albert).",
)
@click.option(
    "--pairs",
    type=click.FloatRange(0, 1, min_open=True),
    default=0.2,
    show_default=True,
    help="Fraction of the other ASes each AS sends to.",
)
@click.option(
    "--deploy",
    default="0.2,0.4,0.6,0.8",
    show_default=True,
    help="Deployed fractions for the incremental-deployment study.",
)
@click.option(
    "--source-rounds",
    type=click.IntRange(1, 50),
    default=1,
    show_default=True,
    help="Rounds of sources reducing their rate to what arrived, each a full exact allocation.",
)
@click.option("--seed", type=int, default=1, show_default=True)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False),
    default="results/network",
    show_default=True,
    help="Where the JSON and plots go.",
)
@click.option(
    "--cluster",
    envvar="DASK_SCHEDULER_ADDRESS",
    default=None,
    help="Run the partitions on the Dask cluster at this scheduler address (tcp://HOST:PORT), one per "
    "worker; local:N starts N worker processes here. Default: $DASK_SCHEDULER_ADDRESS, else this process.",
)
@click.option(
    "--checkpoint-every",
    type=click.FloatRange(0),
    default=120.0,
    show_default=True,
    help="Seconds between checkpoints of the rounds in OUT/checkpoint (0: none); a rerun of the same "
    "command resumes from it.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
@one_line_errors(ValueError, OSError)
def network_cmd(
    caida, top, nodes, graph, attach, pairs, deploy, source_rounds, seed, out_dir, cluster, checkpoint_every, as_json
) -> None:
    """FFS §VII-B and Appendix C: AS graph with degree-gravity capacities (40-400 Gb/s), each AS's
    fairness matrix as the paper builds it, a fraction of pairs on shortest paths; the exact FFS
    allocation from sources at their maximum rate against Helia-style per-AS and GLWP/GMA static
    reservations (Figure 4), and path security effectiveness per deployed fraction (Figure 10)."""
    import json
    from pathlib import Path

    from tqdm import tqdm

    from ffs.core.jsonsafe import finite
    from ffs.lab.network.fixedpoint import Checkpoint
    from ffs.lab.network.report import Options, plot, run

    fractions = _deploy_fractions(deploy)
    if caida and not Path(caida).is_file():
        raise ValueError(f"{caida}: no such file")
    bar = tqdm(
        total=5,
        desc="network",
        file=sys.stderr,
        leave=False,
        disable=None,
        bar_format="{l_bar}{bar}| {n}/{total} [{elapsed}] {postfix}",
    )

    def stage(name: str) -> None:
        if bar.n or name != "graph":
            bar.update(1)
        bar.set_description(name)
        bar.set_postfix_str("")

    def built(done: int, total: int) -> None:
        bar.set_postfix_str(f"{done}/{total} ASes")

    def rounds(what: str) -> None:
        bar.set_postfix_str(what)

    opt = Options(caida, top, nodes, attach, pairs, seed, fractions, source_rounds, graph, cluster)
    if checkpoint_every > 0:
        # absolute: on a cluster each worker writes its partition's file there
        opt.checkpoint = Checkpoint(Path(out_dir).resolve() / "checkpoint", opt.key(), checkpoint_every)
    summary, curves, _ = run(opt, stage, rounds, built)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    title = f"{summary['graph']['source']}; {summary['streams']} streams"
    files = plot(out, summary, curves, title)
    files.append(out / "network.json")
    summary["files"] = [str(f) for f in files]
    files[-1].write_text(json.dumps(finite(summary), indent=1, allow_nan=False) + "\n")
    bar.update(bar.total - bar.n)
    bar.close()
    if as_json:
        dump_json(summary)
        return
    _print_network(summary)


def _deploy_fractions(deploy: str) -> tuple[float, ...]:
    try:
        fractions = tuple(float(x) for x in deploy.split(",") if x.strip())
    except ValueError:
        raise ValueError(f"--deploy: expected comma-separated fractions, got {deploy!r}") from None
    if not fractions or not all(0 <= f <= 1 for f in fractions):
        raise ValueError(f"--deploy: fractions must be in [0, 1], got {deploy!r}")
    return fractions


def _print_network(summary: dict) -> None:
    """network_cmd's summary as tables: the allocation per stream and the security effectiveness."""
    console = Console()
    g = summary["graph"]
    console.print(
        f"{escape(g['source'])}: {g['nodes']} ASes, {g['links']} links, {summary['streams']} streams "
        f"({summary['stream_hops']} stream-hops, {summary['path_links']['mean']:.2f} links per path)"
    )
    t = Table(title="allocation per stream (Gb/s)")
    for col in ("system", "median", "p10", "p90", "mean", "paper median (CAIDA)"):
        t.add_column(col, justify="left" if col == "system" else "right")
    for k, label in (("ffs", "FFS"), ("helia", "Helia (per-AS)"), ("glwp", "GLWP (GMA static)")):
        a = summary["allocation"][k]
        t.add_row(
            label,
            f"{a['median_gbps']:.3g}",
            f"{a['p10_gbps']:.3g}",
            f"{a['p90_gbps']:.3g}",
            f"{a['mean_gbps']:.3g}",
            f"{summary['paper']['median_gbps'][k]}",
        )
    console.print(t)
    d = Table(title="security effectiveness per path (share of paths at each value)")
    d.add_column("deployed", justify="right")
    d.add_column("mean", justify="right")
    d.add_column("paths at effectiveness", justify="left")
    for f, x in summary["deployment"].items():
        top = sorted(x["share_at"].items(), key=lambda kv: float(kv[0]))
        d.add_row(
            f"{100 * float(f):g} %",
            f"{x['mean']:.3f}",
            ", ".join(f"{float(v):.0%}: {100 * s:.1f} %" for v, s in top if s >= 0.005),
        )
    console.print(d)
    if summary["ffs_rounds"]["resumed_at_round"]:
        console.print(f"resumed from the checkpoint at round {summary['ffs_rounds']['resumed_at_round']}")
    console.print(
        f"FFS median {summary['allocation']['ffs']['median_gbps']:.3g} Gb/s; {summary['elapsed_s']:.1f} s in "
        f"{summary['computed_in']}; wrote " + ", ".join(summary["files"])
    )


if __name__ == "__main__":
    main()
