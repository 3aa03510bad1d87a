# SPDX-License-Identifier: Apache-2.0
"""Small shares against a flood, swept (docs/results.md, "Small shares"): shares of 1-50 % of a
100 Mb/s egress on a node whose interfaces have the MTU as deployed (1500 bytes, 9000 jumbo), IP
packets of 64-9000 bytes that fit it, evenly spaced and Poisson arrivals, agent periods of 5 and
100 ms; each cell in virtual time with the estimators as ffs-agent sizes them for that MTU
(ffs.lab.small_shares). The steady state, and the share kept in windows after a flood's onset
(0-50 ms, 50 ms-1 s, 1-3 s; Poisson, the agent's period of 100 ms); and, for comparison, four
cells with every estimator at 1 ms. Prints the markdown tables of
docs/results.md and the cells outside the bound docs/spec.md §10.1 gives each (`Cell.bound`,
`Onset.bounds`), and writes the cells as JSON.

    python bench/small_shares.py [--out docs/results/small-shares.json] [--periods 0.1]
        [--packets 60000] [--onsets 8] [--quick]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from ffs.core.program import LpfConfig
from ffs.lab.small_shares import ONSET_WINDOWS, measure, measure_onset, share_packets_per_s

SHARES = (0.01, 0.02, 0.05, 0.10, 0.20, 0.50)
MTUS = (1500, 9000)
SIZES = (64, 576, 1500, 9000)
ARRIVALS = ("constant", "poisson")
PERIODS = (0.005, 0.100)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/results/small-shares.json")
    ap.add_argument("--quick", action="store_true", help="the 1500- and 9000-byte packets and 1 and 10 %% shares only")
    ap.add_argument("--periods", type=float, nargs="+", default=list(PERIODS), help="agent periods (s)")
    ap.add_argument(
        "--packets",
        type=int,
        default=60_000,
        help="the small pair's arrivals measured per steady cell (sampling error ~0.5 %% at 60,000)",
    )
    ap.add_argument("--onsets", type=int, default=8, help="flood onsets per onset cell (0: none)")
    args = ap.parse_args()
    if args.packets < 1 or args.onsets < 0 or not args.periods or min(args.periods) <= 0:
        ap.error("--packets must be positive, --onsets at least 0, --periods positive")
    shares = (0.01, 0.10) if args.quick else SHARES
    sizes = (1500, 9000) if args.quick else SIZES
    grid = [(mtu, size) for mtu in MTUS for size in sizes if size <= mtu]
    t0 = time.monotonic()
    steady, outside = _steady(shares, grid, args.periods, args.packets, t0)
    onsets, late = _onsets(shares, grid, args.onsets, t0) if args.onsets else ([], [])
    one_ms = _one_ms(args.periods[-1])
    command = " ".join(["python bench/small_shares.py", *sys.argv[1:]])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    meta = {"command": command, "date": datetime.now(UTC).strftime("%Y-%m-%d"), "machine": machine}
    meta["minutes"] = round((time.monotonic() - t0) / 60, 1)
    out.write_text(json.dumps(meta | {"cells": steady, "onsets": onsets, "one_ms": one_ms}, indent=1) + "\n")
    print(f"{meta['command']} ({meta['date']}, {meta['machine']}, {meta['minutes']} min)")
    _steady_tables(steady, shares, grid, args.periods)
    _onset_table(onsets, shares, grid)
    print("\nWith a 1 ms estimator for every pair (the virtual-time tools' old default):")
    for c in one_ms:
        print(f"share {c['share_fraction']:.0%} {c['size']} B MTU {c['mtu']} {c['arrivals']}: {c['error']:+.1%}")
    print(f"{len(steady) - len(outside)} of {len(steady)} steady cells within their bound")
    print(f"{len(onsets) - len(late)} of {len(onsets)} onset cells within their bound in every window")
    for line in outside + late:
        print(f"outside: {line}")
    return 0


def _steady(shares, grid, periods, packets: int, t0: float) -> tuple[list[dict], list[str]]:
    cells, outside = [], []
    for share in shares:
        for mtu, size in grid:
            for arrivals in ARRIVALS:
                for period in periods:
                    c = measure(share, size, arrivals, period, packets=packets, mtu=mtu)
                    low, high = c.bound
                    flood = c.flood_bps / c.flood_exact_bps - 1
                    within = low <= c.error <= high and abs(flood) <= c.flood_bound
                    cells.append(
                        dataclasses.asdict(c)
                        | {
                            "error": c.error,
                            "packets_per_s": share_packets_per_s(share, size),
                            "frames_per_tau_f": c.frames_per_tau_f,
                            "bound": [low, high],
                            "flood_bound": c.flood_bound,
                            "within": within,
                        }
                    )
                    line = (
                        f"share {share:4.0%} {size:5d} B MTU {mtu} {arrivals:8s} {period * 1e3:5.0f} ms: "
                        f"{c.error:+7.2%} in [{low:+.2%}, {high:+.2%}] (flood {flood:+.2%}, "
                        f"{c.duration_s:.0f} s virtual, {time.monotonic() - t0:.0f} s)"
                    )
                    if not within:
                        outside.append(line)
                    print(line, file=sys.stderr, flush=True)
    return cells, outside


def _one_ms(period: float) -> list[dict]:
    """A 4 % share of 1500-byte packets and 1 % of 9000-byte ones with every estimator at 1 ms
    (60 s each: the loss is tens of percent, far above the sampling error)."""
    out = []
    for share, size in ((0.04, 1500), (0.01, 9000)):
        for arrivals in ARRIVALS:
            c = measure(share, size, arrivals, period, duration_s=60.0, mtu=max(size, 1500), lpf=LpfConfig(1e6))
            out.append(dataclasses.asdict(c) | {"error": c.error})
    return out


def _onsets(shares, grid, count: int, t0: float) -> tuple[list[dict], list[str]]:
    cells, late = [], []
    for share in shares:
        for mtu, size in grid:
            o = measure_onset(share, size, mtu, count=count)
            within = all(k >= b for k, b in zip(o.kept, o.bounds, strict=True))
            cells.append(
                dataclasses.asdict(o)
                | {"bounds": list(o.bounds), "small_arrivals": list(o.small_arrivals), "within": within}
            )
            kept = ", ".join(f"{k:.1%} (≥ {b:.1%})" for k, b in zip(o.kept, o.bounds, strict=True))
            line = f"onset: share {share:4.0%} {size:5d} B MTU {mtu}: {kept} ({time.monotonic() - t0:.0f} s)"
            if not within:
                late.append(line)
            print(line, file=sys.stderr, flush=True)
    return cells, late


def _steady_tables(cells: list[dict], shares, grid, periods) -> None:
    """One table per MTU: per share and packet size, the error evenly spaced / Poisson at each
    period, and the packets per second the share carries."""
    for mtu in MTUS:
        sizes = [s for m, s in grid if m == mtu]
        print(
            f"\nMTU {mtu}: " + " / ".join(f"{a} at {', '.join(f'{p * 1e3:g}' for p in periods)} ms" for a in ARRIVALS)
        )
        print("| share of 100 Mb/s | " + " | ".join(f"{s} B" for s in sizes) + " |")
        print("|---" * (len(sizes) + 1) + "|")
        for share in shares:
            row = []
            for size in sizes:
                mine = [c for c in cells if (c["share_fraction"], c["size"], c["mtu"]) == (share, size, mtu)]
                by = [" ".join(f"{c['error'] * 100:+.1f}" for c in mine if c["arrivals"] == a) for a in ARRIVALS]
                row.append(" / ".join(by) + f" ({share_packets_per_s(share, size):.0f}/s)")
            print(f"| {share:.0%} | " + " | ".join(row) + " |")


def _onset_table(cells: list[dict], shares, grid) -> None:
    """Per share and (MTU, packet size): the share kept in each window after the onset."""
    if not cells:
        return
    windows = " / ".join(f"{a * 1e3:g}-{b * 1e3:g} ms" for a, b in ONSET_WINDOWS)
    print(f"\nShare kept after the onset, {windows}, in percent")
    print("| share | " + " | ".join(f"{s} B, MTU {m}" for m, s in grid) + " |")
    print("|---" * (len(grid) + 1) + "|")
    for share in shares:
        row = []
        for mtu, size in grid:
            c = next(c for c in cells if (c["share_fraction"], c["size"], c["mtu"]) == (share, size, mtu))
            row.append(" / ".join(f"{k * 100:.0f}" for k in c["kept"]))
        print(f"| {share:.0%} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    sys.exit(main())
