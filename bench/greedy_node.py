# SPDX-License-Identifier: Apache-2.0
"""The greedy node, FFS §XI Figure 7 (docs/results.md, "The greedy node"): two interfaces with
equal shares and the same total rate into one egress, each with a distribution of p.r/p.f over
its streams (ffs.lab.greedy). Every pair of distributions with the exact allocator, at loads of
0.6, 1 and 2 times the egress per interface, and packet by packet in virtual time at load 1.
Prints the markdown tables of docs/results.md and writes the cells as JSON.

    python bench/greedy_node.py [--out docs/results/greedy-node.json] [--duration 1]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from ffs.lab.greedy import CAPACITY, DISTRIBUTIONS, SIZE, STREAMS, exact, measure

LOADS = (0.6, 1.0, 2.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/results/greedy-node.json")
    ap.add_argument("--duration", type=float, default=1.0, help="virtual seconds per packet-level cell")
    args = ap.parse_args()
    names = list(DISTRIBUTIONS)
    t0 = time.monotonic()
    cells = []
    for a in names:
        for b in names:
            c = measure(a, b, 1.0, args.duration)
            cells.append(dataclasses.asdict(c))
            print(
                f"{a:>12} vs {b:<12} exact {c.exact_share:.3f} measured {c.measured_share:.3f} "
                f"({time.monotonic() - t0:.0f} s)",
                file=sys.stderr,
                flush=True,
            )
    exact_loads = {str(load): {a: {b: exact(a, b, load) for b in names} for a in names} for load in LOADS}
    wall = time.monotonic() - t0
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "command": f"python bench/greedy_node.py --duration {args.duration:g}",
                "capacity_bps": CAPACITY,
                "streams": STREAMS,
                "packet_size": SIZE,
                "labels": DISTRIBUTIONS,
                "cells": cells,
                "exact_by_load": exact_loads,
                "wall_s": round(wall, 1),
            },
            indent=1,
        )
        + "\n"
    )
    by = {(c["dist_a"], c["dist_b"]): c for c in cells}
    print(
        "Share of the egress kept by the interface under evaluation (row) against the other (column), "
        "load 1: exact / packet by packet\n"
    )
    print("| under evaluation \\ other | " + " | ".join(names) + " | worst |")
    print("|---" * (len(names) + 2) + "|")
    for a in names:
        row = [by[(a, b)] for b in names]
        worst = min(c["measured_share"] for c in row)
        print(
            f"| **{a}** | "
            + " | ".join(f"{c['exact_share']:.1%} / {c['measured_share']:.1%}" for c in row)
            + f" | {worst:.1%} |"
        )
    print("\nExact allocator, the static interface's worst case over every other distribution, per load:\n")
    print("| load per interface (× C) | static: worst share | equal: worst share | best non-static against static |")
    print("|---|---|---|---|")
    for load in LOADS:
        e = exact_loads[str(load)]
        best = max(e[a]["static"] for a in names if a not in ("static", "equal"))
        print(f"| {load:g} | {min(e['static'].values()):.1%} | {min(e['equal'].values()):.1%} | {best:.1%} |")
    heatmap(names, by, out.with_suffix(".png"))
    print(f"\n{len(cells)} packet-level cells in {wall:.0f} s", file=sys.stderr)
    return 0


def heatmap(names: list[str], by: dict, path: Path) -> None:
    """Figure 7's form: the evaluated interface's share per pair of distributions, packet by packet."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = [[100 * by[(a, b)]["measured_share"] for b in names] for a in names]
    fig, ax = plt.subplots(figsize=(7.5, 6))
    im = ax.imshow(grid, cmap="RdYlGn", vmin=25, vmax=75)
    ax.set_xticks(range(len(names)), names, rotation=40, ha="right")
    ax.set_yticks(range(len(names)), names)
    for i in range(len(names)):
        for k in range(len(names)):
            ax.text(k, i, f"{grid[i][k]:.0f}", ha="center", va="center", fontsize=8)
    ax.set_xlabel("distribution of p.r/p.f at the other interface")
    ax.set_ylabel("distribution at the interface under evaluation")
    ax.set_title(
        "Share of the egress (%) kept by the interface under evaluation\n"
        "(packet by packet, virtual time; equal shares, equal total rates)",
        fontsize=9,
    )
    fig.colorbar(im, ax=ax, label="%")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
