# SPDX-License-Identifier: Apache-2.0
"""Shared set-up for agent tests: the dumbbell node on an in-process software switch."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from conftest import ROOT
from ffs.agent.core import Agent
from ffs.agent.state import StateStore
from ffs.core import p4names
from ffs.core.api_client import ApiError, call
from ffs.core.program import LpfConfig
from ffs.core.topology import load, wide_text
from ffs.driver import wire
from ffs.switch import trace
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline

# a node across pipes 0 and 1 of a 2-pipe Tofino (device ports 0-63 and 128-191), with front-panel
# names for a target that brings its ports up
TWO_PIPES_NODE = """name: two-pipes
nodes:
  s1:
    interfaces:
      a: {capacity: 10Gbps, port: 0, fp: 1/0}
      b: {capacity: 10Gbps, port: 129, fp: 17/1}
    fairness:
      a: {b: 10Gbps}
      b: {a: 10Gbps}
    routes:
      - {prefix: 10.0.1.0/24, interface: a}
      - {prefix: 10.0.2.0/24, interface: b}
"""


DUMBBELL = ROOT / "topologies" / "dumbbell.yaml"
LPF = LpfConfig(20e6, 4)  # 20 ms: many packets per time constant at these rates


def make_agent(state_dir: Path | None = None, seed: int = 3, driver=None, guard: bool = False) -> Agent:
    """The agent of the dumbbell's s1 on a software switch without a traffic manager (its ports
    send at once). The queue guard is off unless asked for: its virtual queues drain at the
    topology's port speeds (spec §7.7), and would stand where this switch's queues never do."""
    topo = load(DUMBBELL)
    driver = driver or LocalDriver(Pipeline(seed))
    # pair telemetry every 0.1 s of virtual time: the tests read pair rates after a second or less
    agent = Agent(
        driver,
        topo,
        "s1",
        lpf=LPF,
        store=StateStore(state_dir) if state_dir else None,
        telemetry_period_s=0.1,
        guard_timer_ns="auto" if guard else None,
    )
    agent.install()
    return agent


def dump(driver) -> str:
    """Everything the control plane can write, as one canonical JSON text: every table's entries and
    default entry, the port metadata, every LPF index's spec. Equal texts = byte-for-byte the same state."""
    out = {
        t.name: {
            "entries": [wire.entry_to_json(e) for e in driver.read_table(t.name)],
            "default": wire.entry_to_json(driver.read_default(t.name)),
        }
        for t in p4names.TABLES
    }
    out["ports"] = [wire.entry_to_json(e) for e in driver.read_table(p4names.PORT_METADATA.name)]
    out["lpf"] = [wire.lpf_to_json(driver.read_lpf_spec(p4names.F_LPF.name, i)) for i in range(p4names.F_LPF.size)]
    return json.dumps(out, sort_keys=True)


class Clock:
    """Runs the dumbbell's streams in virtual time, continuing from where the last run stopped."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.t = 0.0

    def run(self, seconds: float, lock=None) -> trace.TraceResult:
        def on_period(now_ns):
            if lock is None:
                return self.agent.step(now_ns / 1e9)
            with lock:
                return self.agent.step(now_ns / 1e9)

        res = trace.run(
            self.agent.topology,
            {"s1": self.agent.driver.pipeline},
            seconds,
            period_s=0.05,
            on_period=on_period,
            seed=int(self.t * 10) + 1,
            start_s=self.t,
        )
        self.t += seconds + 0.05
        return res


def wide_topology(tmp: Path, ports: int) -> Path:
    """One switch with `ports` interfaces and a fairness column for every egress: ports² pairs."""
    path = tmp / f"wide{ports}.yaml"
    path.write_text(wide_text(ports))
    return path


def ffsctl(sock: Path | str, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """ffsctl as an operator runs it, against the agent listening on `sock`."""
    return subprocess.run(
        [sys.executable, "-m", "ffs.cli.ctl", f"--socket={sock}", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_agent(tmp: Path, switch: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen:
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ffs.cli.agent",
            f"--topology={DUMBBELL}",
            "--node=s1",
            f"--switch={switch}",
            f"--socket={tmp}/agent.sock",
            f"--state-dir={tmp}/state",
            "--period-ms=50",
            "--lpf-time-constant-us=1000",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=open(tmp / "agent.log", "a"),
        env=env,
    )
    end = time.monotonic() + 30
    while time.monotonic() < end:
        try:
            call(tmp / "agent.sock", {"op": "status"})
            return p
        except ApiError:
            time.sleep(0.1)
    p.kill()
    raise AssertionError((tmp / "agent.log").read_text()[-800:])
