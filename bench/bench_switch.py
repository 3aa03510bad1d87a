# SPDX-License-Identifier: Apache-2.0
"""Benchmark of the software switch: packets per second per core in trace mode (virtual time, the
Table II workload at 15 Gb/s and the two-node chain, agents in the loop) with the compiled engine
and the Python reference, `Pipeline.process` called per frame from Python, and live mode over
veth (a UDP flood through `ffs-switch run` between two namespaces). Prints a JSON report;
docs/benchmarks.md records the numbers with the command that made them.

    python bench/bench_switch.py [--trace-seconds 1] [--python-seconds 0.1] [--live-seconds 5] [--no-live]
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


def trace_bench(engine: str, topology: str, seconds: float) -> dict:
    """trace.run over a topology with the agents stepping every 5 ms of virtual time."""
    from ffs.core.topology import load
    from ffs.lab.nodes import build_nodes
    from ffs.switch import trace

    topo = load(ROOT / "topologies" / f"{topology}.yaml")
    nodes = build_nodes(topo, 1, engine)
    pipes = nodes.pipelines

    def on_period(ns: int) -> None:
        for a in nodes.agents.values():
            a.step(ns / 1e9)

    t0 = time.process_time()
    w0 = time.perf_counter()
    res = trace.run(topo, pipes, seconds, period_s=0.005, on_period=on_period, seed=1)
    cpu = time.process_time() - t0
    wall = time.perf_counter() - w0
    hops = sum(len(s.path) for s in topo.streams) / len(topo.streams)
    return {
        "engine": engine,
        "workload": f"{topology}: {len(topo.streams)} streams, {len(pipes)} node(s), 1250 B, agents every 5 ms",
        "virtual_s": seconds,
        "packets": res.packets,
        "mean_hops": round(hops, 2),
        "cpu_s": round(cpu, 2),
        "packets_per_cpu_s": round(res.packets / cpu),
        "wall_s": round(wall, 2),
    }


def process_bench(engine: str, packets: int) -> dict:
    """Pipeline.process called from Python per frame (what live mode does), FFS path, γ < 1."""
    from ffs.core import constants, p4names, tables
    from ffs.core.entries import Exact, LpfSpec, Lpm, TableEntry, Update
    from ffs.core.frames import ipv4_frame, shim
    from ffs.switch.driver import LocalDriver
    from ffs.switch.fast import new_pipeline

    p = new_pipeline(1, engine)
    d = LocalDriver(p)
    d.write(
        tables.static_updates()
        + [
            Update(
                "insert",
                TableEntry(
                    p4names.PORT_METADATA.name,
                    {p4names.PORT_METADATA.key.name: Exact(1)},
                    None,
                    {"trust": 1, "insert": 0},
                ),
            ),
            Update(
                "insert", TableEntry(p4names.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000300, 24)}, "route", {"port": 3})
            ),
            Update(
                "insert",
                TableEntry(
                    p4names.PAIRS.name,
                    {"ingress_port": Exact(1), "egress_port": Exact(3)},
                    "set_pair",
                    {"pid": 0, "nlm": -3000 & 0xFFFF},
                ),
            ),
            Update(
                "insert",
                TableEntry(
                    p4names.EGRESS_PARAMS.name,
                    {"egress_port": Exact(3)},
                    "set_egress",
                    tables.egress_params(1.5, True, 0.9),
                ),
            ),
        ]
    )
    d.set_lpf_spec(p4names.F_LPF.name, [0], LpfSpec("RATE", 1e6, 1e6, 4))
    frame = ipv4_frame("10.0.1.1", "10.0.3.1", 1250, shim(0x8100, constants.FLAG_RI))
    process = p.process
    t0 = time.process_time()
    kept = 0
    for i in range(packets):
        kept += process(frame, 1, i * 700).egress_port is not None
    cpu = time.process_time() - t0
    return {
        "engine": engine,
        "workload": "one 1250 B labelled frame per call, trusted port, managed pair",
        "packets": packets,
        "forwarded": kept,
        "cpu_s": round(cpu, 2),
        "packets_per_cpu_s": round(packets / cpu),
    }


def live_bench(seconds: float) -> dict:
    from ffs.agent.core import Agent
    from ffs.lab.liverun import live_node
    from ffs.switch.driver import ModelDriver

    if os.geteuid() != 0:
        return {"skipped": "live mode needs root"}
    work = Path(tempfile.mkdtemp(prefix="ffs-bench-"))
    (work / "bench.yaml").write_text(
        (ROOT / "topologies" / "dumbbell.yaml").read_text().replace("name: dumbbell", "name: bench")
    )
    with live_node(work / "bench.yaml", work, agent=False, switch_args=["--stats-interval=1"]) as node:
        drv = ModelDriver(node.switch_address)
        drv.connect(timeout_s=10)
        Agent(drv, node.topology, "s1").install()  # the full FFS path, tau infinite: nothing dropped
        for h in ("h1", "h2"):  # two senders as fast as they go toward h3
            node.spawn(
                node.exec_args(
                    h,
                    sys.executable,
                    "-m",
                    "ffs.lab.traffic",
                    "send",
                    "--dst=10.0.3.1",
                    "--rate=2Gbps",
                    f"--duration={seconds + 3}",
                ),
                stdout=subprocess.DEVNULL,
            )
        time.sleep(1.5)

        def counts():
            line = [x for x in (work / "switch.log").read_text().splitlines() if "stats" in x][-1]
            return sum(int(v) for v in re.findall(r"rx=(\d+)", line)), sum(
                int(v) for v in re.findall(r"tx=(\d+)", line)
            )

        r0, t0 = counts()
        time.sleep(seconds)
        r1, t1 = counts()
    return {
        "workload": "two UDP floods of 1250 B through the FFS path over veth",
        "seconds": seconds,
        "rx_packets_per_s": round((r1 - r0) / seconds),
        "tx_packets_per_s": round((t1 - t0) / seconds),
        "rx_mbps": round((r1 - r0) * 1250 * 8 / seconds / 1e6, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace-seconds", type=float, default=1.0, help="virtual seconds, compiled engine")
    ap.add_argument("--python-seconds", type=float, default=0.1, help="virtual seconds, Python reference")
    ap.add_argument("--live-seconds", type=float, default=5.0)
    ap.add_argument("--no-live", action="store_true")
    a = ap.parse_args()
    report = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
        },
        "trace": [
            trace_bench("c", "table2", a.trace_seconds),
            trace_bench("c", "chain", a.trace_seconds),
            trace_bench("python", "table2", a.python_seconds),
        ],
        "process": [process_bench("c", 300_000), process_bench("python", 30_000)],
    }
    if not a.no_live:
        report["live"] = live_bench(a.live_seconds)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
