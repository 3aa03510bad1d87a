# SPDX-License-Identifier: Apache-2.0
"""τ settling against the agent's period (docs/results.md, "τ settling"): scenarios/step.yaml
(a 0 -> 40 Gb/s step at t = 0.1 s into a 10 Gb/s egress that a 3 Gb/s stream had to itself),
packet by packet in virtual time, with the τ loop every 5, 2 and 1 ms: how long after the step τ
stays within 10 % of its exact value (Eq. 2), and the streams against the exact allocation.

    python bench/tau_settling.py [--periods-ms 5,2,1] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ffs.core.topology import load
from ffs.lab.experiments import run_scenario

ROOT = Path(__file__).resolve().parent.parent
STEP_AT = 0.1  # the burst's start in scenarios/step.yaml


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--periods-ms", default="5,2,1")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    topo = load(ROOT / "scenarios" / "step.yaml")
    rows = []
    for p in (float(x) for x in a.periods_ms.split(",")):
        t0 = time.process_time()
        res = run_scenario(topo, "ffs", period_s=p / 1e3)
        settle = res.settling_s.get("n.j")
        row = {
            "period_ms": p,
            "settles_ms_after_step": None if settle is None else round(1e3 * (settle - STEP_AT), 1),
            "worst_error": max(abs(s["error"]) for s in res.streams),
            "streams": {s["stream"]: (round(s["measured"] / 1e9, 3), round(s["exact"] / 1e9, 3)) for s in res.streams},
            "cpu_s": round(time.process_time() - t0, 1),
        }
        rows.append(row)
        print(
            json.dumps(row)
            if a.json
            else f"period {p:g} ms: tau within 10 % of exact {row['settles_ms_after_step']} ms after the step; "
            f"worst stream error {100 * row['worst_error']:.2f} %; "
            + ", ".join(f"{k} {m} / {e} Gb/s" for k, (m, e) in row["streams"].items()),
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
