# SPDX-License-Identifier: Apache-2.0
"""The CSFQ baseline against the CSFQ paper (papers/001) and the label lie of FFS §VII-A, in
virtual time (docs/results.md, "CSFQ against the CSFQ paper"; ffs.lab.csfq_paper): Figure 4a
(32 UDP flows, flow i at (i + 1) times its share; CSFQ over 5 seeds, FFS and FIFO beside it),
Table 4 (relabeling over two links) and a flow whose edge claims a tenth of its rate. Every run
lasts 11 s and is measured over its last 10 (the paper's 10 s averages). Prints the markdown
tables of docs/results.md and writes the runs as JSON.

    python bench/csfq_paper.py [--out docs/results/csfq-paper.json] [--seeds 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
import time
from pathlib import Path

from ffs.core.tables import wire_len
from ffs.lab.csfq_paper import FAIR_4A, FLOWS_4A, LIAR_RATE, LINK, PAPER_4A, PAPER_TABLE4, SIZE, band, run

DURATION = 11.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/results/csfq-paper.json")
    ap.add_argument("--seeds", type=int, default=5, help="seeds of the Figure 4a CSFQ run")
    args = ap.parse_args()
    t0 = time.monotonic()
    runs = []

    def go(exp: str, scheme: str, seed: int = 1):
        t = time.monotonic()
        r = run(exp, scheme, DURATION, seed)
        runs.append(dataclasses.asdict(r) | {"seed": seed, "wall_s": round(time.monotonic() - t, 1)})
        print(f"{exp} {scheme} seed {seed}: {time.monotonic() - t:.0f} s", file=sys.stderr, flush=True)
        return r

    fig4a = {s: go("fig4a", "csfq", s) for s in range(1, args.seeds + 1)}
    fig4a_ffs, fig4a_fifo = go("fig4a", "ffs"), go("fig4a", "fifo")
    table4 = {s: go("table4", s) for s in ("csfq", "ffs", "fifo")}
    liar = {s: go("liar", s) for s in ("csfq", "ffs", "fifo")}
    wall = time.monotonic() - t0
    # the binomial spread of a flow's delivered packets over 10 s (γ's draws): flow i keeps 1/(i+1)
    # of (i+1)·n packets, n = packets of the fair share in 10 s; relative sd sqrt(i/(i+1)/n)
    n = 10 * FAIR_4A / (wire_len(SIZE + 18) * 8)
    sd = math.sqrt((FLOWS_4A - 1) / FLOWS_4A / n)
    mean_err = {k: statistics.mean(r.measured[k] / r.exact[k] - 1 for r in fig4a.values()) for k in fig4a[1].exact}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "command": f"python bench/csfq_paper.py --seeds {args.seeds}",
                "duration_s": DURATION,
                "packet_size": SIZE,
                "sampling_sd": sd,
                "fig4a_mean_error_over_seeds": mean_err,
                "runs": runs,
                "wall_s": round(wall, 1),
            },
            indent=1,
        )
        + "\n"
    )
    print_fig4a(fig4a, fig4a_ffs, fig4a_fifo, mean_err)
    print(f"\n(binomial sd of one flow's 10 s throughput: {sd:.1%}, {n:.0f} packets of its share)\n")
    print_table4_and_liar(table4, liar)
    print(f"\n{len(runs)} runs in {wall:.0f} s", file=sys.stderr)
    return 0


def print_fig4a(fig4a: dict, fig4a_ffs, fig4a_fifo, mean_err: dict[str, float]) -> None:
    """Figure 4a's markdown table: each run's band of errors against the paper's."""
    print("Figure 4a: each flow's 10 s throughput against its fair share of 0.3125 Mb/s\n")
    print("| run | lowest | highest | mean | flows outside the paper's −11 % / +5 % |")
    print("|---|---|---|---|---|")
    print(f"| paper, CSFQ (ns-2) | {PAPER_4A[0]:+.0%} | {PAPER_4A[1]:+.0%} | — | 0 |")
    for s, r in fig4a.items():
        lo, hi = band(r)
        errs = [r.measured[k] / r.exact[k] - 1 for k in r.exact]
        outside = sum(not PAPER_4A[0] <= e <= PAPER_4A[1] for e in errs)
        print(f"| CSFQ, seed {s} | {lo:+.1%} | {hi:+.1%} | {statistics.mean(errs):+.1%} | {outside} |")
    lo, hi = min(mean_err.values()), max(mean_err.values())
    print(
        f"| CSFQ, each flow's mean over the {len(fig4a)} seeds | {lo:+.1%} | {hi:+.1%} | "
        f"{statistics.mean(mean_err.values()):+.1%} | "
        f"{sum(not PAPER_4A[0] <= e <= PAPER_4A[1] for e in mean_err.values())} |"
    )
    for name, r in (("FFS, one ingress per flow, equal shares", fig4a_ffs), ("FIFO", fig4a_fifo)):
        lo, hi = band(r)
        errs = [r.measured[k] / r.exact[k] - 1 for k in r.exact]
        print(
            f"| {name} | {lo:+.1%} | {hi:+.1%} | {statistics.mean(errs):+.1%} | "
            f"{sum(not PAPER_4A[0] <= e <= PAPER_4A[1] for e in errs)} |"
        )


def print_table4_and_liar(table4: dict, liar: dict) -> None:
    """Table 4's and the lie's markdown tables."""
    print("Table 4: throughput on link 2 (Mb/s), fair 3.33\n")
    print("| run | flow 1 | flow 2 | flow 3 |")
    print("|---|---|---|---|")
    print(
        "| paper, CSFQ, UDP | " + " | ".join(f"{PAPER_TABLE4[k] / 1e6:.2f}" for k in ("flow1", "flow2", "flow3")) + " |"
    )
    for s, r in table4.items():
        print(
            f"| {s.upper() if s != 'ffs' else 'FFS'} | "
            + " | ".join(f"{r.measured[k] / 1e6:.2f}" for k in ("flow1", "flow2", "flow3"))
            + " |"
        )
    print(
        f"\nThe lie: five flows of {LIAR_RATE / 1e6:g} Mb/s into {LINK / 1e6:g} Mb/s (fair 2), `liar` labelled at a "
        "tenth of its rate\n"
    )
    print("| run | liar | honest (each) | liar ÷ fair share |")
    print("|---|---|---|---|")
    for s, r in liar.items():
        honest = [v for k, v in r.measured.items() if k != "liar"]
        print(
            f"| {s.upper() if s != 'ffs' else 'FFS'} | {r.measured['liar'] / 1e6:.2f} | "
            f"{min(honest) / 1e6:.2f}–{max(honest) / 1e6:.2f} | {r.measured['liar'] / r.exact['liar']:.2f} |"
        )


if __name__ == "__main__":
    sys.exit(main())
