"""Benchmark of the exact allocator at Internet scale: `ffs-sim network`'s study (FFS §VII-B) on
generated power-law graphs of 200, 500, 1,000 and 2,000 ASes, each sending to 20 % of the others,
one fresh process per size. Reports wall time per stage, the allocator's rounds and the peak
resident memory of the process, its CPU time (the machine may be shared: wall time alone would
hide the load), plus the machine and its load. Prints a JSON report;
docs/benchmarks.md records the numbers with the command that made them.

    python bench/bench_sim.py [--nodes 200,500,1000,2000] [--pairs 0.2] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(nodes: int, pairs: float, seed: int) -> dict:
    """The study in this process: stage times, sizes and this process's peak RSS."""
    from ffs.network.report import Options, run

    marks: list[tuple[str, float]] = []
    t0 = time.perf_counter()
    summary, _rates, _eff = run(Options(nodes=nodes, pairs=pairs, seed=seed), lambda s: marks.append((s, time.perf_counter())))
    end = time.perf_counter()
    stages = {name: round(t1 - t, 3) for (name, t), (_n, t1) in zip(marks, marks[1:] + [("end", end)])}
    return {
        "nodes": nodes, "streams": summary["streams"], "stream_hops": summary["stream_hops"],
        "wall_s": round(end - t0, 2), "stages_s": stages,
        "allocator_rounds": summary["ffs_rounds"]["allocator_rounds"],
        "cpu_s": round((lambda u: u.ru_utime + u.ru_stime)(resource.getrusage(resource.RUSAGE_SELF)), 2),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "ffs_median_gbps": summary["allocation"]["ffs"]["median_gbps"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", default="200,500,1000,2000")
    ap.add_argument("--pairs", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child mode: one size
    a = ap.parse_args()
    if a.one:
        print(json.dumps(one(a.one, a.pairs, a.seed)))
        return
    env = dict(os.environ, PYTHONPATH=str(ROOT / "controlplane") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    runs = []
    for n in (int(x) for x in a.nodes.split(",")):
        load_before = os.getloadavg()
        out = subprocess.run([sys.executable, __file__, "--one", str(n), "--pairs", str(a.pairs), "--seed", str(a.seed)],
                             env=env, check=True, capture_output=True, text=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
        r["loadavg_1m_before"] = round(load_before[0], 2)
        runs.append(r)
        print(f"{n} nodes: {r['streams']} streams, {r['stream_hops']} stream-hops, {r['wall_s']} s ({r['cpu_s']} s CPU), "
              f"{r['peak_rss_mib']} MiB peak", file=sys.stderr)
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else platform.processor()
    print(json.dumps({"machine": {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
                                  "loadavg_after": [round(x, 2) for x in os.getloadavg()]},
                      "pairs": a.pairs, "seed": a.seed, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
