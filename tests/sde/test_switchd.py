# SPDX-License-Identifier: Apache-2.0
"""ffs-agent --target tofino on bf_switchd + tofino-model running the compiled `ffs`, through the
SDE's real bfrt_grpc client: install, a matrix change with ffsctl, counters, LPF specs, the agent
riding out a switchd restart (it re-applies its state), and the agent's period on switchd -- the
τ loop a Tofino user gets (docs/spec.md: every period reads R, the drops and A for all pairs and
egresses, reads F, and pushes the egress parameters in one batch).

Needs an SDE (SDE, SDE_INSTALL), root and hugepages for bf_switchd, and the ffs program installed by
`make build` from the current p4src/ (its p4src.sha256 must match `make p4src-sha256`); otherwise
every test here is skipped with the reason. Run under the live lock, e.g.
    python3 -m pytest -q -s tests/sde/test_switchd.py
`make bench-switchd` runs only the period measurement and prints it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentkit import ffsctl, wide_topology
from conftest import ROOT
from ffs.core import p4names
from ffs.core.api_client import ApiError, call
from ffs.core.program import LpfConfig, node_updates, pairs_of
from ffs.core.topology import load
from sdekit import running_sde, sde_missing

DUMBBELL = ROOT / "topologies" / "dumbbell.yaml"
PROGRAM = "ffs"


def why_skip() -> str | None:
    want = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True
    ).stdout.strip()
    return sde_missing(PROGRAM, "tofino", want)


WHY = why_skip()
pytestmark = pytest.mark.skipif(WHY is not None, reason=str(WHY))


@pytest.fixture(scope="module")
def sde(tmp_path_factory):
    yield from running_sde(PROGRAM, tmp_path_factory, "switchd-logs")


def driver():
    from ffs.driver.bfrt import BfrtDriver

    d = BfrtDriver()
    d.connect(timeout_s=120)
    return d


def start_agent(tmp: Path, *extra: str, topology: Path = DUMBBELL) -> subprocess.Popen:
    """A 1 s period: on tofino-model, on a loaded machine, a step can take longer than the default
    100 ms (test_agent_period_on_switchd prints it), and a loop that is always behind holds the
    agent's lock so that ffsctl (10 s timeout) gets no turn."""
    log = open(tmp / "agent.log", "ab")
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ffs.cli.agent",
            "--target",
            "tofino",
            f"--topology={topology}",
            "--node=s1",
            "--switch=localhost:50052",
            f"--socket={tmp}/agent.sock",
            f"--state-dir={tmp}/state",
            "--period-ms=1000",
            "--log-format=json",
            "--connect-timeout=120",
            # the estimator fixed, so the test knows the codes the agent writes (spec §4)
            "--lpf-time-constant-us=1000",
            "--lpf-scale-down=4",
            # no queue guard: tofino-model has no queues to guard, and its timer would swamp it
            "--guard-timer-us=0",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    log.close()
    end = time.monotonic() + 300  # the first install is one batch of ~10^4 updates on the model
    while time.monotonic() < end:
        if p.poll() is not None:
            raise AssertionError(f"ffs-agent exited {p.returncode}: {(tmp / 'agent.log').read_text()[-1500:]}")
        try:
            status(tmp)
            return p
        except ApiError:
            time.sleep(0.5)
    p.kill()
    raise AssertionError((tmp / "agent.log").read_text()[-1500:])


def status(tmp: Path) -> dict:
    return call(tmp / "agent.sock", {"op": "status"}, timeout_s=30.0)


def wait_for(pred, timeout_s: float, what: str) -> None:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout_s:g} s: {what}")


def test_agent_on_switchd_installs_changes_the_matrix_and_survives_a_restart(sde, tmp_path):
    node = load(DUMBBELL).node("s1")
    pairs = pairs_of(node)
    port = {name: i.port for name, i in node.interfaces.items()}
    agent = start_agent(tmp_path)
    try:
        st = status(tmp_path)
        assert len(st["pairs"]) == len(pairs) and {e["egress"] for e in st["egresses"]} == set(node.fairness)
        t_first = st["time_s"]
        wait_for(lambda: status(tmp_path)["time_s"] > t_first + 0.5, 30, "the τ loop runs")

        _ffsctl_sets_p1_p3_to_2mbps(tmp_path)
        shown = call(tmp_path / "agent.sock", {"op": "matrix_show"})
        assert shown["fairness"]["p3"]["p1"] == pytest.approx(2e6)

        # switchd restarts (tables empty, the binding gone): the agent's reads fail as DriverError,
        # it reconnects and re-applies its whole state, the matrix change included
        sde.restart()
        log = tmp_path / "agent.log"
        # a new binding is a new program to the agent: it reconciles (writes what the switch lost)
        wait_for(lambda: "pipeline changed" in log.read_text(), 180, "the agent reconciles after the restart")
        assert agent.poll() is None, log.read_text()[-1500:]
        t_back = status(tmp_path)["time_s"]
        wait_for(lambda: status(tmp_path)["time_s"] > t_back + 0.5, 30, "the τ loop runs again")
    finally:
        agent.send_signal(signal.SIGTERM)
        rc = agent.wait(timeout=30)
    assert rc == 0
    lines = (tmp_path / "agent.log").read_text().splitlines()
    assert lines and all(json.loads(line)["level"] for line in lines)  # JSON only: no raw lines of the client
    assert not any("Traceback" in line for line in lines)

    _the_switch_holds_the_changed_matrix(node, pairs, port)


def _ffsctl_sets_p1_p3_to_2mbps(tmp_path: Path) -> None:
    r = ffsctl(tmp_path / "agent.sock", "matrix", "set", "--ingress", "p1", "--egress", "p3", "--rate", "2Mbps")
    assert r.returncode == 0, r.stderr


def _the_switch_holds_the_changed_matrix(node, pairs, port: dict[str, int]) -> None:
    """Read straight from switchd once the agent stopped: the pairs, LPF specs, counters and registers."""
    d = driver()  # the agent released client id 1
    try:
        # the pairs as the agent's own generator writes them for the changed matrix (p1 -> p3 at
        # 2 Mb/s): applied again after the restart
        lpf = LpfConfig(1000 * 1e3, 4)  # as start_agent fixes them: 1000 us, scale-down 4
        changed = dataclasses.replace(node, fairness={**node.fairness, "p3": {**node.fairness["p3"], "p1": 2e6}})

        def pair_params(entries) -> dict:
            return {(e.key["ingress_port"].value, e.key["egress_port"].value): e.params for e in entries}

        def generated(n) -> dict:
            return pair_params(u.entry for u in node_updates(n, lpf) if u.entry.table == p4names.PAIRS.name)

        got = pair_params(d.read_table(p4names.PAIRS.name))
        assert got == generated(changed)
        p13 = (port["p1"], port["p3"])
        assert got[p13] != generated(node)[p13]  # the change is visible: not the topology's 10 Mb/s
        spec = lpf.spec()
        for p in pairs:  # the topology's pairs (pairs_of)
            got = d.read_lpf_spec(p4names.F_LPF.name, p.pid)
            assert got.kind == spec.kind and got.out_scale_down == spec.out_scale_down
            # the device keeps a time constant in its own float encoding: 1e6 ns reads back as
            # 999 024 ns on tofino-model (within 0.1 %)
            assert got.gain_time_constant_ns == pytest.approx(spec.gain_time_constant_ns, rel=2e-3)
            assert got.decay_time_constant_ns == pytest.approx(spec.decay_time_constant_ns, rel=2e-3)
        pids = [p.pid for p in pairs]
        counters = d.read_counters(p4names.PAIR_BYTES.name, pids)
        assert sorted(counters) == sorted(pids) and all(c.packets == 0 for c in counters.values())  # no traffic sent
        assert sorted(d.read_registers(p4names.F_EST.name, pids)) == sorted(pids)
    finally:
        d.close()


# Steps timed per node: on the dumbbell (steps of a few hundred ms) both kinds of step, with and
# without the pairs' telemetry (due every 1 s), several times each; at 1024 pairs every step is over
# 1 s, so each reads them all, and three show it. docs/benchmarks.md's figures are
# bench/bench_tau_step.py's, not these.
@pytest.mark.parametrize(
    "topology, node_name, n_steps", [(None, "s1", 10), (32, "n", 3)], ids=["dumbbell-s1", "32-ports"]
)
def test_agent_period_on_switchd(sde, tmp_path, topology, node_name, n_steps):
    """The time of one agent step on switchd (the per-egress counters, the pairs' telemetry when
    due, and the egress push), and of one counter read of all pairs; printed (docs/benchmarks.md has
    the figures of bench/bench_tau_step.py)."""
    from ffs.agent.core import Agent

    topo = load(DUMBBELL if topology is None else wide_topology(tmp_path, topology))
    d = driver()
    try:
        agent = Agent(d, topo, node_name, guard_timer_ns=None)  # the model has no queue to guard
        t0 = time.monotonic()
        agent.install()
        install_s = time.monotonic() - t0
        agent.step()  # the baseline read
        pids = [p.pid for p in agent.pairs()]
        steps, reads = [], []
        for _ in range(n_steps):
            t0 = time.monotonic()
            snap = agent.step()
            steps.append(time.monotonic() - t0)
            assert len(snap.pairs) == len(pids)
            t0 = time.monotonic()
            assert len(d.read_counters(p4names.PAIR_BYTES.name, pids)) == len(pids)
            reads.append(time.monotonic() - t0)
    finally:
        d.close()

    def ms(xs: list[float], q: float) -> float:
        return 1e3 * sorted(xs)[min(len(xs) - 1, int(q * len(xs)))]

    print(
        f"\nagent period on switchd ({topology or 'dumbbell'} {'ports' if topology else node_name}, {len(pids)} pairs, "
        f"tofino-model, {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}): "
        f"step median {1e3 * statistics.median(steps):.1f} ms, p95 {ms(steps, 0.95):.1f} ms; "
        f"one counter read of all pairs median {1e3 * statistics.median(reads):.1f} ms; install {install_s:.1f} s"
    )
    assert len(steps) == n_steps  # each read all pairs and pushed its batch (a failed RPC raises DriverError)


def test_agent_brings_up_the_front_panel_ports_of_its_topology(sde, tmp_path):
    """The dumbbell with front-panel names (1/1, 1/2, 1/3: device ports 1-3, lanes of connector 1,
    the model's port map) at 25G: the agent adds and enables them (tofino-model adds every port at
    10G, disabled) and reports them in status; a restarted agent writes no port; --no-ports leaves
    them as the operator set them."""
    from ffs.driver.base import DriverError

    topo = tmp_path / "dumbbell-fp.yaml"
    text = DUMBBELL.read_text()
    for n in (1, 2, 3):
        text = text.replace(f"p{n}: {{capacity: 20Mbps, port: {n},", f"p{n}: {{capacity: 25Gbps, port: {n}, fp: 1/{n},")
    topo.write_text(text.replace("10Mbps", "10Gbps").replace("20Mbps", "20Gbps"))
    d = driver()
    try:
        assert d.port_of("1/2") == 2
        with pytest.raises(DriverError, match="no front-panel port '99/9'"):
            d.port_of("99/9")
    finally:
        d.close()
    agent = start_agent(tmp_path, topology=topo)
    try:
        shown = {p["interface"]: p for p in status(tmp_path)["ports"]}
        assert {k: (v["fp"], v["dev_port"], v["pipe"], v["speed"], v["enabled"]) for k, v in shown.items()} == {
            f"p{n}": (f"1/{n}", n, 0, "BF_SPEED_25G", True) for n in (1, 2, 3)
        }
    finally:
        agent.terminate()
        agent.wait(timeout=30)
    log = (tmp_path / "agent.log").read_text()
    assert '"ports: 0 added, 3 re-added, 0 enabled, 0 already right"' in log or "3 re-added" in log, log[-2000:]
    before = log.count("re-added")
    agent = start_agent(tmp_path, topology=topo)  # the ports are right now: nothing is written
    agent.terminate()
    agent.wait(timeout=30)
    assert (tmp_path / "agent.log").read_text().count("re-added") == before
    from ffs.core import ports

    d = driver()
    try:
        held = d.read_ports([1, 2, 3])
        assert all(held[n].spec.speed == "BF_SPEED_25G" and held[n].spec.enable for n in (1, 2, 3))
        d.write_ports(deletes=[1])  # the operator sets port 1 up by hand, at 10G
        d.write_ports(adds=[ports.spec(1, 10e9)])
    finally:
        d.close()
    agent = start_agent(tmp_path, "--no-ports", topology=topo)
    agent.terminate()
    agent.wait(timeout=30)
    d = driver()
    try:
        assert d.read_ports([1])[1].spec.speed == "BF_SPEED_10G"  # --no-ports: left as the operator set it
    finally:
        d.close()


def test_an_estimate_left_in_another_pipe_is_cleared_at_take_over(sde, tmp_path, caplog):
    """The take-over of tests/agent/test_agent_counters.py with the SDE's client on bf_switchd: an F
    estimate left in pipe 1 for a pair whose ingress port is in pipe 0, as a pair moved to another
    pipe by a topology change leaves it, would add to the pair's F at every read (reads
    sum the pipes); the agent clears it at take-over and says so in one line. bf_switchd lets one
    gRPC client bind the program, so the stale cell is written through the agent's own session."""
    import logging

    from ffs.agent.core import Agent

    topo = load(DUMBBELL)
    node = topo.node("s1")
    d = driver()
    gc = d.gc
    (pid,) = [p.pid for p in pairs_of(node) if (p.ingress, p.egress) == ("p2", "p3")]
    try:
        d.write_register(p4names.F_EST.name, pid, 0)
        t = d._table(p4names.F_EST.name)
        key = t.make_key([gc.KeyTuple("$REGISTER_INDEX", pid)])
        t.entry_add(
            gc.Target(device_id=0, pipe_id=1), [key], [t.make_data([gc.DataTuple(f"{p4names.F_EST.name}.f1", 123456)])]
        )
        assert d.read_register_pipes(p4names.F_EST.name, [pid])[pid][1] == 123456
        agent = Agent(d, topo, "s1", lpf=LpfConfig(1000 * 1e3, 4), guard_timer_ns=None)
        with caplog.at_level(logging.WARNING, logger="ffs.agent"):
            agent.install()
        cells = d.read_register_pipes(p4names.F_EST.name, [pid])[pid]
        assert not any(cells), cells
        lines = [r.getMessage() for r in caplog.records if "left in another pipe" in r.getMessage()]
        assert len(lines) == 1 and "p2->p3" in lines[0], lines
    finally:
        d.close()


def test_counters_cleared_by_another_client_decide_nothing(sde, tmp_path, caplog):
    """Issue 32 with the SDE's client on bf_switchd (tests/agent/test_agent_counters.py on the software
    switch). Counter values are written as a second of traffic would leave them: the flood's pair
    offering 8000 frames toward p3 (82 Mb/s against a 20 Mb/s target: congested however long the
    period), γ admitting 200 (2 Mb/s: τ rises), one of which lied (0.5 % of the admitted bytes,
    below the quarantine's 1 %). Then every counter is cleared, as another client would: the
    agent's differences read about 2^64, it re-baselines, logs one line and decides nothing on that
    period -- p3 keeps its τ, no pair is quarantined. bf_switchd lets one gRPC client bind the
    program (a second is refused, and unbound it may not write), so the clear goes through the
    agent's own session."""
    import logging

    from ffs.agent.core import Agent

    topo = load(DUMBBELL)
    node = topo.node("s1")
    d = driver()
    gc = d.gc
    (pid,) = [p.pid for p in pairs_of(node) if (p.ingress, p.egress) == ("p2", "p3")]
    p3 = node.interfaces["p3"].port

    def put_counter(name: str, index: int, packets: int, nbytes: int) -> None:
        # the counters are symmetric (one scope for every pipe): the value lands in each pipe, and a
        # read sums them, so every rate below is the same multiple of what is written
        t = d._table(name)
        key = t.make_key([gc.KeyTuple("$COUNTER_INDEX", index)])
        data = t.make_data([gc.DataTuple("$COUNTER_SPEC_PKTS", packets), gc.DataTuple("$COUNTER_SPEC_BYTES", nbytes)])
        t.entry_mod(gc.Target(device_id=0, pipe_id=0xFFFF), [key], [data])

    try:
        for c in p4names.COUNTERS:
            d.reset_counters(c.name)
        agent = Agent(d, topo, "s1", lpf=LpfConfig(1000 * 1e3, 4), telemetry_period_s=0.0, guard_timer_ns=None)
        agent.install()
        agent.step()
        frame = 1268
        put_counter(p4names.PAIR_BYTES.name, pid, 8000, 8000 * frame)
        put_counter(p4names.PAIR_DROPS.name, pid, 7800, 7800 * frame)
        put_counter(p4names.PAIR_MALFORMED.name, pid, 1, frame)
        put_counter(p4names.OFFERED.name, p3, 8000, 8000 * frame)
        put_counter(p4names.ADMITTED.name, p3, 200, 200 * frame)
        put_counter(p4names.ACCEPTED.name, p3, 199, 199 * frame)
        put_counter(p4names.MALFORMED.name, p3, 1, frame)
        read = d.read_counters(p4names.OFFERED.name, [p3])[p3]
        assert read.packets and read.packets % 8000 == 0, read  # the write took effect, in each pipe
        time.sleep(1.0)
        agent.step()
        assert not agent.quarantined
        before = agent.taus["p3"]
        assert before.congested and before.tau > 1.5, before  # τ rose: a cut would show
        for c in p4names.COUNTERS:
            d.reset_counters(c.name)
        with caplog.at_level(logging.WARNING, logger="ffs.agent"):
            snap = agent.step()
        assert agent.taus["p3"] == before, (agent.taus["p3"], before)
        assert not agent.quarantined and not any(p.quarantined for p in snap.pairs)
        lines = [r.getMessage() for r in caplog.records if "went backwards" in r.getMessage()]
        assert len(lines) == 1, lines
    finally:
        d.close()


def test_the_tms_port_counters_answer_for_the_agents_ports(sde):
    """`tf1.tm.counter.eg_port` and `tf1.tm.cfg`, the fixed BF-Runtime tables the agent reads to
    follow a port that drains slower than its speed (spec §9): they answer for every port asked,
    and stand still while nothing flows (the agent acts on their differences). tofino-model fills
    them with its 0x...bad pattern once the ports are up, not with 0."""
    ports = sorted(i.port for i in load(DUMBBELL).node("s1").interfaces.values())
    d = driver()
    try:
        tm = d.read_tm_ports(ports)
        again = d.read_tm_ports(ports)
    finally:
        d.close()
    assert sorted(tm) == ports and again == tm, (tm, again)
