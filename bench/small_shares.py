# SPDX-License-Identifier: Apache-2.0
"""Small shares against a flood, swept (docs/results.md, "Small shares"): shares of 1-50 % of a
100 Mb/s egress, IP packets of 64-9000 bytes, evenly spaced and Poisson arrivals, agent periods of
5 and 100 ms, each cell in virtual time with the estimator as ffs-agent sizes it
(ffs.lab.small_shares). Prints the markdown table of docs/results.md and writes the cells as JSON.

    python bench/small_shares.py [--out docs/results/small-shares.json] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

from ffs.agent.program import LpfConfig, frames_per_time_constant
from ffs.lab.attacks import loads
from ffs.lab.small_shares import measure, share_packets_per_s, topology

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
    for share in SHARES:
        for size in sizes:
            node = loads(topology(share, size, 1.0)).node("s1")
            lpf = LpfConfig().for_node(node)
            for arrivals in ARRIVALS:
                for period in periods:
                    c = measure(share, size, arrivals, period, packets=args.packets)
                    d = dataclasses.asdict(c) | {
                        "error": c.error,
                        "packets_per_s": share_packets_per_s(share, size),
                        "tau_f_ms": (lpf.time_constant_ns or 0) / 1e6,
                        "frames_per_tau_f": frames_per_time_constant(node, lpf),
                    }
                    cells.append(d)
                    print(
                        f"share {share:4.0%} {size:5d} B {arrivals:8s} {period * 1e3:5.0f} ms: {c.error:+7.2%} "
                        f"(flood {c.flood_bps / c.flood_exact_bps - 1:+.2%}, {c.duration_s:.0f} s virtual, "
                        f"{time.monotonic() - t0:.0f} s)",
                        file=sys.stderr,
                        flush=True,
                    )
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
