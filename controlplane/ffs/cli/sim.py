"""ffs-sim: the exact FFS allocation of a topology (and, with the evaluation, scenario runs)."""

from __future__ import annotations

import math

import click
from rich.console import Console
from rich.table import Table

from ffs.allocator import allocate
from ffs.cli.common import dump_json, one_line_errors
from ffs.topology import TopologyError, load
from ffs.units import format_rate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """FFS simulation tools: the exact allocation (the oracle) and scenario runs."""


@main.command("allocate")
@click.argument("topology", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
@one_line_errors(TopologyError, ValueError, OSError)
def allocate_cmd(topology: str, as_json: bool) -> None:
    """Compute the exact FFS allocation (Eq. 1-2, tau by Brent's method) of TOPOLOGY's streams."""
    alloc = allocate(load(topology))
    if as_json:
        dump_json(alloc.to_dict())
        return
    console = Console()
    t = Table(title="streams (per hop: f, rate in -> out, gamma, RI, RRI)")
    for col in ("stream", "hop", "f", "rate in", "rate out", "gamma", "RI", "RRI"):
        t.add_column(col, justify="right" if col not in ("stream", "hop") else "left")
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
    e = Table(title="egresses")
    for col in ("node", "egress", "target", "offered R*", "accepted A", "tau"):
        e.add_column(col, justify="right" if col not in ("node", "egress") else "left")
    for x in alloc.egresses:
        e.add_row(x.node, x.egress, format_rate(x.target), format_rate(x.offered), format_rate(x.accepted),
                  "inf (uncongested)" if math.isinf(x.tau) else f"{x.tau:.6f}")
    console.print(e)
if __name__ == "__main__":
    main()
