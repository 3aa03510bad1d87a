# SPDX-License-Identifier: Apache-2.0
"""The agent's τ step against the number of pairs (docs/benchmarks.md, "The τ loop at scale").

For nodes of 3, 16, 32 and 64 ports (9, 256, 1024 and 4096 pairs; `ffs.core.topology.wide_text`), on the
software switch's in-process driver and, with --switchd, on bf_switchd (BF-Runtime gRPC; tofino-model
or hardware with the installed ffs): the install time, the τ step (median and p95 of --steps steps)
and the cells it reads, the pair telemetry's time and cells, and the time to apply a full-matrix
change (every share of the node new). The figures of one run are compared as ratios: the step at
4096 pairs against the step at 9.

    python bench/bench_tau_step.py [--ports 3,16,32,64] [--steps 30]
        [--switchd localhost:50052 [--compare-hw-reads]] [--lie] [--json]

--lie: every step, the first egress's `malformed` counter reads one frame more than before (one
lying frame per period, as the driver reports it; no frame is sent), so the step shows what lies
cost the agent's reads.

Prints one JSON object per node and target.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ffs.agent.core import Agent
from ffs.core.topology import load, wide_text
from ffs.driver.base import Driver


class Counting:
    """A driver proxy that counts the cells every counter and register read returns."""

    def __init__(self, inner: Driver, lie: bool = False) -> None:
        self.inner, self.cells, self.lie, self.lies = inner, 0, lie, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def read_counters(self, name: str, indices: Any = None) -> Any:
        from ffs.core import p4names
        from ffs.core.entries import CounterValue

        out = self.inner.read_counters(name, indices)
        self.cells += len(out)
        if self.lie and name == p4names.MALFORMED.name and out:
            self.lies += 1  # one more lying frame of 1268 bytes at the first egress since the last read
            i = min(out)
            out = {**out, i: CounterValue(out[i].packets + self.lies, out[i].bytes + 1268 * self.lies)}
        return out

    def read_registers(self, name: str, indices: Any = None) -> Any:
        out = self.inner.read_registers(name, indices)
        self.cells += len(out)
        return out


def q(xs: list[float], p: float) -> float:
    return sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]


def measure(driver: Driver, ports: int, steps: int, lie: bool = False, period_s: float = 0.1) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "wide.yaml"
        path.write_text(wide_text(ports))
        topo = load(path)
    from ffs.core import p4names

    driver.clear_table(p4names.PAIRS.name)  # another node's pairs (a size measured before) are not this one's
    d = Counting(driver, lie)
    # τ steps only, telemetry timed on its own; with lies, the default telemetry period (1 s)
    agent = Agent(d, topo, "n", telemetry_period_s=1.0 if lie else 1e9)
    t0 = time.perf_counter()
    agent.install()
    install_s = time.perf_counter() - t0
    agent.step()  # the first step reads the pairs as well
    times, cells = [], []
    for _ in range(steps):
        d.cells = 0
        t0 = time.perf_counter()
        agent.step()
        times.append(time.perf_counter() - t0)
        cells.append(d.cells)
        if lie:  # the steps spread over time as the agent's period spreads them (the telemetry period counts)
            time.sleep(max(0.0, period_s - times[-1]))
    d.cells = 0
    t0 = time.perf_counter()
    agent.telemetry(None, time.monotonic())
    telemetry_s, telemetry_cells = time.perf_counter() - t0, d.cells
    new = {e: {i: rate * 0.5 for i, rate in col.items()} for e, col in agent.fairness.items()}
    t0 = time.perf_counter()
    agent.apply_matrix(new)
    change_s = time.perf_counter() - t0
    return {
        "ports": ports,
        "pairs": len(agent.pairs()),
        "install_s": round(install_s, 4),
        "step_ms_median": round(1e3 * statistics.median(times), 3),
        "step_ms_p95": round(1e3 * q(times, 0.95), 3),
        "cells_per_step": max(cells),
        "cells_per_step_median": statistics.median(cells),
        "step_ms_max": round(1e3 * max(times), 3),
        "steps_reading_pairs": sum(c > min(cells) for c in cells),
        "telemetry_ms": round(1e3 * telemetry_s, 3),
        "telemetry_cells": telemetry_cells,
        "full_matrix_change_s": round(change_s, 4),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ports", default="3,16,32,64")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--switchd", default=None, help="bf_switchd's BF-Runtime address (the installed ffs)")
    ap.add_argument(
        "--hw-read-max",
        type=int,
        default=None,
        help="BfrtDriver: read at most this many cells from the hardware, more by a table Sync",
    )
    ap.add_argument(
        "--compare-hw-reads",
        action="store_true",
        help="with --switchd, also measure each node with the tau step's per-egress counters read cell by "
        "cell from the hardware (up to --hw-read-max) instead of after a Sync: the design this replaced, "
        "side by side in the same run",
    )
    ap.add_argument("--lie", action="store_true", help="one lying frame at an egress every step (see above)")
    ap.add_argument("--period-s", type=float, default=0.1, help="with --lie: the agent's period, slept between steps")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    ports = [int(x) for x in a.ports.split(",")]
    rows = []
    targets = (
        ["software"]
        + (["switchd"] if a.switchd else [])
        + (["switchd-hw-reads"] if a.switchd and a.compare_hw_reads else [])
    )
    for n in ports:
        for target in targets:
            if target == "software":
                from ffs.switch.driver import LocalDriver
                from ffs.switch.pipeline import Pipeline

                driver: Driver = LocalDriver(Pipeline(1))
            else:
                from ffs.driver.bfrt import BfrtDriver

                kw: dict = {} if a.hw_read_max is None else {"hw_read_max_indices": a.hw_read_max}
                if target == "switchd-hw-reads":
                    kw["sync_always"] = ()
                driver = BfrtDriver(a.switchd, **kw)
                driver.connect(timeout_s=60)
            try:
                row = {"target": target, **measure(driver, n, a.steps, a.lie, a.period_s)}
            finally:
                driver.close()
            rows.append(row)
            print(
                json.dumps(row)
                if a.json
                else f"{target:16} {row['pairs']:5} pairs: step {row['step_ms_median']:8.3f} ms "
                f"(p95 {row['step_ms_p95']:8.3f}), "
                f"{row['cells_per_step']:4} cells (max; median {row['cells_per_step_median']:g}), "
                f"max {row['step_ms_max']:.1f} ms, {row['steps_reading_pairs']} of {a.steps} steps read the pairs; "
                f"telemetry {row['telemetry_ms']:9.2f} ms ({row['telemetry_cells']} cells); "
                f"install {row['install_s']:7.3f} s; full matrix change {row['full_matrix_change_s']:7.3f} s",
                flush=True,
            )
    for target in targets:
        mine = [r for r in rows if r["target"] == target]
        if len(mine) > 1:
            ratio = mine[-1]["step_ms_median"] / mine[0]["step_ms_median"]
            print(
                f"{target}: step at {mine[-1]['pairs']} pairs / step at {mine[0]['pairs']} pairs = {ratio:.2f}"
                f" ({platform.processor() or platform.machine()}, {os.cpu_count()} cores, load "
                f"{os.getloadavg()[0]:.2f})",
                file=sys.stderr if a.json else sys.stdout,
            )
    return 0


if __name__ == "__main__":
    from ffs.driver.base import DriverError

    try:
        sys.exit(main())
    except DriverError as e:
        print(f"bench_tau_step: {e}", file=sys.stderr)
        sys.exit(2)
