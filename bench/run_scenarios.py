# SPDX-License-Identifier: Apache-2.0
"""Every scenario of scenarios/ through the software switch in virtual time, FFS and the FIFO
baseline (and FFS-C85 where it matters); results and plots under docs/results/. This is the
command behind docs/results.md:

    python bench/run_scenarios.py [--only NAME]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ffs.core.topology import load
from ffs.lab.experiments import run_scenario, with_target_factor, write_result

ROOT = Path(__file__).resolve().parent.parent
RUNS = [
    ("table2", "ffs", None),
    ("table2", "fifo", None),
    ("table2", "csfq", None),
    ("underuse", "ffs", None),
    ("flood", "ffs", None),
    ("flood", "ffs", 0.85),
    ("flood", "fifo", None),
    ("flood", "csfq", None),
    ("many-streams", "ffs", None),
    ("many-streams", "fifo", None),
    ("many-streams", "csfq", None),
    ("tampering", "ffs", None),
    ("chain", "ffs", None),
    ("step", "ffs", None),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=None, help="run only this scenario")
    ap.add_argument("--scheme", default=None, help="run only this scheme (keeps the other results)")
    a = ap.parse_args()
    out = ROOT / "docs" / "results"
    old = out / "summary.json"
    summary = json.loads(old.read_text()) if (a.only or a.scheme) and old.exists() else {}
    for name, scheme, factor in RUNS:
        if (a.only and a.only != name) or (a.scheme and a.scheme != scheme):
            continue
        topo = with_target_factor(load(ROOT / "scenarios" / f"{name}.yaml"), factor)
        label = f"{name}-{scheme}" + (f"-c{int(factor * 100)}" if factor else "")
        t0 = time.monotonic()
        res = run_scenario(topo, scheme)
        write_result(res, out / label)
        (out / label / "rates.csv").unlink()  # the plots and summary are what the docs use
        summary[label] = {
            **json.loads((out / label / "summary.json").read_text()),
            "wall_s": round(time.monotonic() - t0, 1),
        }
        print(label, json.dumps({s["stream"]: round(s["error"], 4) for s in res.streams}), flush=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
