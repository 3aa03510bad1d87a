# SPDX-License-Identifier: Apache-2.0
"""Live-mode throughput of the software switch over veth (root): how many packets per second
`ffs-switch run` carries between namespaces, with the full FFS path (on the compiled pipeline and on
the Python reference), with forwarding only, and with no pipeline at all (the AF_PACKET loop's own
ceiling).

Two senders (h1, h2 of the dumbbell, `ffs.lab.traffic send`, batched sendmmsg) offer 1250-byte UDP
packets toward h3 at stepped rates; h3 has a bound socket that never reads, so nothing answers
and nothing is spent on a Python receiver. For each offered rate the switch's own per-port
counters (its stats log) give what it received, forwarded and lost (pipeline drops, kernel ring
drops) over a steady window. Prints one JSON document; docs/benchmarks.md records the numbers.

    python bench/bench_live.py [--rates 10k,20k,...] [--seconds 3] [--configs ffs,forward]
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
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIZE = 1250
STATS = re.compile(r"ts=(\S+ \S+) .*msg=\"stats (.*)\"")
PORT = re.compile(r"port(\d+):rx=(\d+),tx=(\d+),drop=(\d+),tmdrop=\d+,oversize=\d+,txerr=(\d+),kdrop=(\d+)")
SINK = "import socket, time, sys; s = socket.socket(2, 2); s.bind(('0.0.0.0', 5001)); time.sleep(float(sys.argv[1]))"
# config "io": the live packet loop with a pipeline that only picks the egress port (p1, p2 -> p3):
# the ceiling of the AF_PACKET path itself, what a faster pipeline could reach
IO_SWITCH = r"""
import logging, sys
from ffs.switch.runtime import SwitchControl
from ffs.switch.live import LiveSwitch
from ffs.switch.pipeline import Result
class Forward:
    def process(self, frame, port, t_ns):
        return Result(3 if port != 3 else 1, frame)
logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format='ts=%(asctime)s level=%(levelname)s logger=%(name)s msg="%(message)s"')
sw = LiveSwitch(SwitchControl(Forward()), {1: "p1", 2: "p2", 3: "p3"})
sw.open()
open(sys.argv[1], "w").write("ready")
import signal; signal.signal(signal.SIGTERM, lambda *_: sw.stop_event.set())
sw.run(0.5)
"""
# config "ffs-python": the full FFS path on the Python reference pipeline instead of the compiled one
PY_SWITCH = r"""
import logging, sys
from ffs.switch.live import run_live
logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                    format='ts=%(asctime)s level=%(levelname)s logger=%(name)s msg="%(message)s"')
run_live({1: "p1", 2: "p2", 3: "p3"}, sys.argv[1], ready_file=sys.argv[2], stats_interval_s=0.5, engine="python")
"""


def last_stats(log: Path) -> tuple[float, dict[int, tuple[int, ...]]]:
    for line in reversed(log.read_text().splitlines()):
        m = STATS.search(line)
        if m:
            t = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
            return t, {int(p[0]): tuple(int(x) for x in p[1:]) for p in PORT.findall(m.group(2))}
    raise RuntimeError(f"no stats line in {log}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (its own threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_rate(text: str) -> float:
    return float(text[:-1]) * 1e3 if text.endswith("k") else float(text)


def run_config(config: str, rates_pps: list[float], seconds: float, work: Path) -> list[dict]:
    from ffs.agent.core import Agent
    from ffs.core.program import route_updates
    from ffs.lab.liverun import live_node
    from ffs.switch.driver import ModelDriver

    name = f"bench{os.getpid() % 100000}"  # own namespaces, whatever else runs on the machine
    topo_file = work / f"{name}.yaml"
    topo_file.write_text((ROOT / "topologies" / "dumbbell.yaml").read_text().replace("name: dumbbell", f"name: {name}"))
    rows = []
    with live_node(topo_file, work, agent=False, switch_args=["--stats-interval=0.5"]) as node:
        switch = node.procs[0]
        if config in ("io", "ffs-python"):  # replace the switch by the bare packet loop / the Python engine
            switch = replace_switch(node, switch, config, work)
        if config != "io":
            drv = ModelDriver(node.switch_address)
            drv.connect(timeout_s=10)
        if config.startswith(
            "ffs"
        ):  # every table of the node: shim inserted at p1/p2, stripped at p3; tau stays infinite
            Agent(drv, node.topology, node.plan.node).install()
        elif config == "forward":  # routes only: the parser and forwarding, no pair (FFS bypassed)
            drv.write(route_updates(node.topology.nodes[node.plan.node]))
        total = len(rates_pps) * (seconds + 3) + 10
        node.spawn(node.exec_args("h3", sys.executable, "-c", SINK, str(total)))
        log = work / "switch.log"
        for pps in rates_pps:
            senders = [
                node.spawn(
                    node.exec_args(
                        h,
                        sys.executable,
                        "-m",
                        "ffs.lab.traffic",
                        "send",
                        "--dst=10.0.3.1",
                        f"--rate={pps / 2 * SIZE * 8:.0f}",
                        f"--size={SIZE}",
                        f"--duration={seconds + 2}",
                    ),
                    stdout=subprocess.DEVNULL,
                )
                for h in ("h1", "h2")
            ]
            time.sleep(1.2)  # ramp-up: rings and queues reach their steady state
            t0, s0 = last_stats(log)
            c0 = cpu_seconds(switch.pid)
            time.sleep(seconds)
            t1, s1 = last_stats(log)
            cpu = cpu_seconds(switch.pid) - c0
            for p in senders:
                p.wait()
            row = measured_row(pps, seconds, t1 - t0, s0, s1, cpu)
            print(json.dumps({"config": config, **row}), file=sys.stderr)
            rows.append(row)
            time.sleep(1.0)  # drain
    return rows


def replace_switch(node, switch, config: str, work: Path):
    """The node's switch replaced by the bare packet loop (io) or the Python engine (ffs-python)."""
    switch.terminate()
    switch.wait()
    (work / "switch.log").unlink()
    args = (
        [IO_SWITCH, str(work / "alt.ready")]
        if config == "io"
        else [PY_SWITCH, node.switch_address, str(work / "alt.ready")]
    )
    switch = node.spawn(["ip", "netns", "exec", node.plan.switch_ns, sys.executable, "-c", *args], log="switch.log")
    while not (work / "alt.ready").exists():
        time.sleep(0.1)
    return switch


def measured_row(pps: float, seconds: float, dt: float, s0: dict, s1: dict, cpu: float) -> dict:
    """One rate's row from the switch's counters at the window's two ends (dt apart) and its CPU time."""
    d = {port: [b - a for a, b in zip(s0[port], s1[port], strict=False)] for port in s1}
    rx = (d[1][0] + d[2][0]) / dt
    kdrop = (d[1][4] + d[2][4]) / dt
    arrived = rx + kdrop  # what reached the switch's ports (a starved sender may offer less)
    return {
        "offered_pps": round(pps),
        "arrived_pps": round(arrived),
        "received_pps": round(rx),
        "forwarded_pps": round(d[3][1] / dt),
        "kernel_ring_drops_pps": round(kdrop),
        "pipeline_drops_pps": round((d[1][2] + d[2][2]) / dt),
        "forwarded_mbps": round(d[3][1] * SIZE * 8 / dt / 1e6, 1),
        "loss": round(1 - d[3][1] / dt / arrived, 4) if arrived else 0.0,
        # the switch process's own CPU time: packets per CPU second hardly depends on what
        # else the machine runs, unlike packets per second
        "switch_cpu_share": round(cpu / seconds, 2),
        "packets_per_switch_cpu_s": round(d[3][1] / dt * seconds / cpu) if cpu > 0 else None,
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rates", default="10k,20k,30k,40k,50k,60k,80k", help="offered packets/s (both senders together)")
    ap.add_argument("--seconds", type=float, default=3.0, help="measurement window per rate")
    ap.add_argument(
        "--configs",
        default="ffs,ffs-python,forward,io",
        help="ffs (full path, compiled pipeline when built), ffs-python (full path, Python pipeline), "
        "forward (routes only), io (no pipeline)",
    )
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("bench_live: needs root (network namespaces, veth pairs)", file=sys.stderr)
        return 2
    rates = [parse_rate(x) for x in a.rates.split(",")]
    report: dict = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "kernel": platform.release(),
        },
        "packet_size": SIZE,
        "configs": {},
    }
    for config in a.configs.split(","):
        with tempfile.TemporaryDirectory(prefix="ffs-bench-live-") as d:
            rows = run_config(config, rates, a.seconds, Path(d))
        lossless = [r["forwarded_pps"] for r in rows if r["loss"] < 0.01]
        light = [r["packets_per_switch_cpu_s"] for r in rows if r["loss"] < 0.01 and r["packets_per_switch_cpu_s"]]
        report["configs"][config] = {
            "rows": rows,
            "max_lossless_pps": max(lossless, default=0),
            "peak_forwarded_pps": max(r["forwarded_pps"] for r in rows),
            "packets_per_switch_cpu_s": max(light, default=None),
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
