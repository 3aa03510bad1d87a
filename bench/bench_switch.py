"""Benchmark of the software switch: packets per second per core in trace mode (virtual time, the
Table II workload at 15 Gb/s with the agent in the loop) and in live mode over veth (a UDP flood
through `ffs-switch run` between two namespaces). Prints a JSON report; docs/benchmarks.md
records the numbers with the command that made them.

    python bench/bench_switch.py [--trace-seconds 0.3] [--live-seconds 5] [--no-live]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def trace_bench(seconds: float) -> dict:
    from ffs.agent.core import Agent
    from ffs.driver.model import LocalDriver
    from ffs.switch import trace
    from ffs.switch.pipeline import Pipeline
    from ffs.topology import load

    topo = load(ROOT / "topologies" / "table2.yaml")
    p = Pipeline(1)
    agent = Agent(LocalDriver(p), topo, "n")
    agent.install()
    t0 = time.process_time()
    w0 = time.perf_counter()
    res = trace.run(topo, {"n": p}, seconds, period_s=0.005, on_period=lambda ns: agent.step(ns / 1e9), seed=1)
    cpu = time.process_time() - t0
    wall = time.perf_counter() - w0
    return {"workload": "table2 at 15 Gb/s, 1250 B, agent every 5 ms", "virtual_s": seconds, "packets": res.packets,
            "cpu_s": round(cpu, 2), "packets_per_cpu_s": round(res.packets / cpu), "wall_s": round(wall, 2)}


def live_bench(seconds: float) -> dict:
    from ffs.agent.core import Agent
    from ffs.driver.model import ModelDriver
    from ffs.liverun import live_node

    if os.geteuid() != 0:
        return {"skipped": "live mode needs root"}
    work = Path(tempfile.mkdtemp(prefix="ffs-bench-"))
    (work / "bench.yaml").write_text((ROOT / "topologies" / "dumbbell.yaml").read_text().replace("name: dumbbell", "name: bench"))
    with live_node(work / "bench.yaml", work, agent=False, switch_args=["--stats-interval=1"]) as node:
        drv = ModelDriver(node.switch_address)
        drv.connect(timeout_s=10)
        Agent(drv, node.topology, "s1").install()  # the full FFS path, tau infinite: nothing dropped
        for h in ("h1", "h2"):  # two senders as fast as they go toward h3
            node.spawn(node.exec_args(h, sys.executable, "-m", "ffs.traffic", "send", "--dst=10.0.3.1", "--rate=2Gbps",
                                      f"--duration={seconds + 3}"), stdout=subprocess.DEVNULL)
        time.sleep(1.5)

        def counts():
            line = [x for x in (work / "switch.log").read_text().splitlines() if "stats" in x][-1]
            return sum(int(v) for v in re.findall(r"rx=(\d+)", line)), sum(int(v) for v in re.findall(r"tx=(\d+)", line))

        r0, t0 = counts()
        time.sleep(seconds)
        r1, t1 = counts()
    return {"workload": "two UDP floods of 1250 B through the FFS path over veth", "seconds": seconds,
            "rx_packets_per_s": round((r1 - r0) / seconds), "tx_packets_per_s": round((t1 - t0) / seconds),
            "rx_mbps": round((r1 - r0) * 1250 * 8 / seconds / 1e6, 1)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace-seconds", type=float, default=0.3)
    ap.add_argument("--live-seconds", type=float, default=5.0)
    ap.add_argument("--no-live", action="store_true")
    a = ap.parse_args()
    report = {
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version()},
        "trace": trace_bench(a.trace_seconds),
    }
    if not a.no_live:
        report["live"] = live_bench(a.live_seconds)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
