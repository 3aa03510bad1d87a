# SPDX-License-Identifier: Apache-2.0
"""Small shares against a flood, swept (docs/results.md, "Small shares"): shares of 1-50 % of a
100 Mb/s egress, IP packets of 64-9000 bytes, evenly spaced and Poisson arrivals, agent periods of
5 and 100 ms, each cell in virtual time with the estimator as ffs-agent sizes it
(ffs.lab.small_shares). Prints the markdown table of docs/results.md and the cells outside the bound
docs/spec.md §10.1 gives each (`Cell.bound`, the one tests/test_small_shares.py holds), and writes
the cells as JSON.

    python bench/small_shares.py [--out docs/results/small-shares.json] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from ffs.lab.small_shares import measure, share_packets_per_s

SHARES = (0.01, 0.02, 0.05, 0.10, 0.20, 0.50)
SIZES = (64, 576, 1500, 9000)
ARRIVALS = ("constant", "poisson")
PERIODS = (0.005, 0.100)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/results/small-shares.json")
    ap.add_argument("--quick", action="store_true", help="one period and the 1500- and 9000-byte columns only")
    ap.add_argument(
        "--packets",
        type=int,
        default=60_000,
        help="the small pair's arrivals measured per cell (sampling error ~0.5 %% at 60,000)",
    )
    args = ap.parse_args()
    periods = PERIODS[:1] if args.quick else PERIODS
    sizes = (1500, 9000) if args.quick else SIZES
    cells = []
    t0 = time.monotonic()
    outside = []
    for share in SHARES:
        for size in sizes:
            for arrivals in ARRIVALS:
                for period in periods:
                    c = measure(share, size, arrivals, period, packets=args.packets)
                    low, high = c.bound
                    flood = c.flood_bps / c.flood_exact_bps - 1
                    within = low <= c.error <= high and abs(flood) <= c.flood_bound
                    d = dataclasses.asdict(c) | {
                        "error": c.error,
                        "packets_per_s": share_packets_per_s(share, size),
                        "frames_per_tau_f": c.frames_per_tau_f,
                        "bound": [low, high],
                        "flood_bound": c.flood_bound,
                        "within": within,
                    }
                    cells.append(d)
                    line = (
                        f"share {share:4.0%} {size:5d} B {arrivals:8s} {period * 1e3:5.0f} ms: {c.error:+7.2%} "
                        f"in [{low:+.2%}, {high:+.2%}] (flood {flood:+.2%}, {c.duration_s:.0f} s virtual, "
                        f"{time.monotonic() - t0:.0f} s)"
                    )
                    if not within:
                        outside.append(line)
                    print(line, file=sys.stderr, flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "command": "python bench/small_shares.py"
                + (" --quick" if args.quick else "")
                + f" --packets {args.packets}",
                "cells": cells,
            },
            indent=1,
        )
        + "\n"
    )
    print(
        "| share | packets/s at the share | "
        + " | ".join(f"{s} B {a[:4]} {p * 1e3:g} ms" for s in sizes for a in ARRIVALS for p in periods)
        + " |"
    )
    for share in SHARES:
        row = [c for c in cells if c["share_fraction"] == share]
        pps = ", ".join(f"{share_packets_per_s(share, s):.0f}" for s in sizes)
        print(f"| {share:.0%} | {pps} | " + " | ".join(f"{c['error']:+.1%}" for c in row) + " |")
    print(f"{len(cells) - len(outside)} of {len(cells)} cells within their bound")
    for line in outside:
        print(f"outside: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
