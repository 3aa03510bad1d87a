# SPDX-License-Identifier: Apache-2.0
"""FFS's guarantee in time, swept (docs/results.md, "Reaction in time"): a sender at exactly its
share (50 of a 100 Mb/s egress) while the other ingress floods at ten times the port, from an onset
or in pulses, with the queue guard (spec §7.7) beside the agent's CPU loop alone at 100, 10 and
1 ms, side by side in one run, in virtual time on the compiled software switch (ffs.lab.reaction).
Cases: flood onsets at 64, 1500 and 9000 bytes (and Poisson arrivals at 1500), pulses of 5, 10, 20
and 80 ms every 0.5 s, an idle ingress holding 0.5 % of the egress, and a flood whose frames lie
about their length (claiming 20 bytes). Each cell: the sender's delivered rate in a window, in
percent of its share (Corollary 1: 100 %). Prints docs/results.md's tables and writes the JSON.

    python bench/reaction.py [--out docs/results/reaction.json] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ffs.lab.reaction import CPU_LOOPS, SHIPPED, Case, Design, pulses, run

DESIGNS: tuple[Design, ...] = (SHIPPED, *CPU_LOOPS)
ONSET = 0.3
ONSET_WINDOWS = ((0.005, 0.05), (0.05, 1.0), (1.0, 3.0))  # after the onset
PULSES = (0.005, 0.010, 0.020, 0.080)


def onset_rows(quick: bool) -> list[dict]:
    cases = [("64 B", Case(size=64), False), ("1500 B", Case(size=1500), False), ("9000 B", Case(size=9000), False)]
    cases += [("1500 B Poisson", Case(size=1500), True), ("0.5 % share on the node", Case(small_share=0.005), False)]
    cases += [("lying length (claims 20 B)", Case(size=1500, lie=20), False)]
    if quick:
        cases = cases[1:2]
    rows = []
    end = ONSET_WINDOWS[-1][1]
    for label, case, poisson in cases:
        for d in DESIGNS:
            r = run(case, d, [(ONSET, ONSET + end)], ONSET + end, poisson=poisson)
            kept = [r.share_kept(ONSET + a, ONSET + b) for a, b in ONSET_WINDOWS]
            rows.append({"case": label, "design": d.name, "kept": kept})
            print(f"onset {label:28s} {d.name:14s} " + " ".join(f"{100 * k:6.1f}" for k in kept), flush=True)
    return rows


def pulse_rows(quick: bool) -> list[dict]:
    rows = []
    for length in PULSES[2:3] if quick else PULSES:
        floods = pulses(0.3, length, 0.5, 4)
        for d in DESIGNS:
            r = run(Case(size=1500), d, floods, floods[-1][1] + 0.2)
            # after each pulse's first 5 ms; a 5 ms pulse is measured whole
            skip = 0.005 if length > 0.005 else 0.0
            kept = [r.share_kept(a + skip, b) for a, b in floods]
            rows.append({"pulse_ms": length * 1e3, "design": d.name, "kept": kept})
            print(f"pulse {length * 1e3:3.0f} ms {d.name:14s} " + " ".join(f"{100 * k:6.1f}" for k in kept), flush=True)
    return rows


def tables(onsets: list[dict], pulse: list[dict]) -> str:
    names = [d.name for d in DESIGNS]
    out = ["| case | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for case in dict.fromkeys(r["case"] for r in onsets):
        cells = {r["design"]: r["kept"] for r in onsets if r["case"] == case}
        out.append(f"| {case} | " + " | ".join(" / ".join(f"{100 * k:.0f}" for k in cells[n]) for n in names) + " |")
    out += ["", "| pulse | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]
    for ms in dict.fromkeys(r["pulse_ms"] for r in pulse):
        cells = {r["design"]: r["kept"] for r in pulse if r["pulse_ms"] == ms}
        out.append(
            f"| {ms:g} ms | " + " | ".join(f"{100 * min(cells[n]):.0f}–{100 * max(cells[n]):.0f}" for n in names) + " |"
        )
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="docs/results/reaction.json")
    ap.add_argument("--quick", action="store_true", help="the 1500-byte onset and the 20 ms pulses only")
    args = ap.parse_args()
    t0 = time.monotonic()
    onsets, pulse = onset_rows(args.quick), pulse_rows(args.quick)
    print()
    print(
        "onset cells: the sender's share kept 5-50 ms / 50 ms-1 s / 1-3 s after the onset (%); pulse cells:"
        " its share kept in each pulse after the pulse's first 5 ms, lowest-highest of 4 pulses (%)"
    )
    print(tables(onsets, pulse))
    print(f"\n{time.monotonic() - t0:.0f} s")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"onsets": onsets, "pulses": pulse}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
