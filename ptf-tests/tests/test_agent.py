# SPDX-License-Identifier: Apache-2.0
"""The agent (ffs-agent) against the same target, observed through packets: a matrix change made
with ffsctl moves the normalized label by exactly the change of lm, a refused change moves
nothing, and the agent's tau turns a sustained overload into drops (and lets go afterwards).

BF-Runtime lets one client own a program, so the test hands the target to the agent for the
agent's lifetime (`release`) and reconnects afterwards to read f_est and restore the tables.
"""

import logging
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

import expect
from base import IN, OTHER, OUT, PID, FfsTest, _StaticTables, ffs_v4, params, target
from ffs.core import constants, tables
from ffs.core.api_client import ApiError, call
from ffs.core.labels import decode, encode
from ffs.core.program import pairs_of
from ffs.core.topology import load
from ffs.lab.scapy_ffs import FFS

PERIOD_MS = 100
MODEL_PERIOD_MS = 2000.0  # the closed τ loop's period on tofino-model (TauRaisesDropsOnSustainedOverload)


def period_ms() -> float:
    """The agent's period: 500 ms on Tofino, where tofino-model forwards the suite's packets slowly,
    and its egress in bursts, so that a period averages over enough of them (a shorter period can
    read A = 0 beside a large R, and tau would jump)."""
    return 500.0 if target() == "tofino" else PERIOD_MS


# The F estimator's time constant for the agent: 20 ms, as in the project's live runs (a sender in
# Python is bursty at the millisecond scale, and F should see its rate, not its bursts).
LPF_US = 20000.0
LPF_SCALE_DOWN = 4  # fixed here, so the test computes the agent's lm codes without sizing them (spec §4)


def topology_text(capacity: float) -> str:
    """The node the agent runs: interfaces a, b, c on the suite's device ports IN, OUT, OTHER,
    each of `capacity`; the column of b shares it equally between a and c, so T_b = capacity
    (spec §9: the default target is the column's sum)."""
    c, m = f"{capacity:.0f}bps", f"{capacity / 2:.0f}bps"
    return f"""name: ptf
nodes:
  ptf:
    interfaces:
      a: {{capacity: {c}, port: {IN}}}
      b: {{capacity: {c}, port: {OUT}}}
      c: {{capacity: {c}, port: {OTHER}}}
    fairness:
      b: {{a: {m}, c: {m}}}
    routes:
      - {{prefix: 10.0.2.0/24, interface: b}}
"""


def switch_address() -> str:
    p = params()
    if target() == "model":
        return str(p.get("control", "localhost:50052"))
    return str(p.get("grpc_addr") or f"{p.get('grpc_server', 'localhost')}:{p.get('bfrt_grpc_port', 50052)}")


class AgentTest(FfsTest):
    capacity = 1e6  # bit/s of every interface of the agent's node
    lpf_us = LPF_US  # the F estimators' time constant the agent writes
    lpf_scale_down: int | None = LPF_SCALE_DOWN  # None: the agent sizes it (spec §4)
    telemetry_period_s = 0.0  # the pairs' telemetry every period

    def setUp(self):
        self.work = Path(tempfile.mkdtemp(prefix="ffs-ptf-agent-"))
        self.topology = self.work / "ptf.yaml"
        self.topology.write_text(topology_text(self.capacity))
        node = load(self.topology).node("ptf")
        self.pid = next(p.pid for p in pairs_of(node) if (p.ingress, p.egress) == ("a", "b"))
        self.lpf_indices = tuple(sorted({p.pid for p in pairs_of(node)} | {PID}))  # the agent's pids, and the suite's
        FfsTest.setUp(self)
        self.before_agent()
        self.topology.write_text(topology_text(self.capacity))
        self.release()  # the agent takes the target
        self.sock = self.work / "agent.sock"
        self.agent = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ffs.cli.agent",
                f"--topology={self.topology}",
                "--node=ptf",
                f"--target={target()}",
                f"--switch={switch_address()}",
                f"--socket={self.sock}",
                f"--state-dir={self.work}/state",
                f"--period-ms={self.period_ms()}",
                f"--lpf-time-constant-us={self.lpf_us}",
                *([f"--lpf-scale-down={self.lpf_scale_down}"] if self.lpf_scale_down is not None else []),
                f"--telemetry-period-s={self.telemetry_period_s:g}",
                # the guard is test_guard's: here its virtual queues would drain at this node's
                # 1 Mb/s while the suite's ports forward at once, and on tofino-model its timer
                # would swamp a target that forwards a few hundred packets a second
                "--guard-timer-us=0",
                "-vv",
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.work / "agent.log", "w"),
        )
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and self.agent.poll() is None:
            try:
                call(self.sock, {"op": "status"}, timeout_s=1)
                return
            except (ApiError, OSError, ValueError):
                time.sleep(0.2)
        self.fail("ffs-agent did not start: " + (self.work / "agent.log").read_text()[-800:])

    def period_ms(self) -> float:
        return period_ms()

    def before_agent(self) -> None:
        """Runs on the programmed target before the agent starts (and may set the capacity)."""

    def tearDown(self):
        self.stop_agent()
        log = self.work / "agent.log"
        if log.exists():  # the agent's own account, in ptf.log beside the test's
            logging.info("ffs-agent log (last 200 lines):\n%s", "\n".join(log.read_text().splitlines()[-200:]))
        _StaticTables.verified = False  # the agent rewrote them: check again before the next test
        try:
            FfsTest.tearDown(self)
        finally:
            shutil.rmtree(self.work, ignore_errors=True)

    def stop_agent(self):
        if self.agent.poll() is None:
            self.agent.terminate()
            try:
                self.agent.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.agent.kill()
                self.agent.wait()
        if self.driver is None:
            self.reconnect()

    def ffsctl(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "ffs.cli.ctl", f"--socket={self.sock}", *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    def egress_b(self) -> dict:
        return next(e for e in call(self.sock, {"op": "status"})["egresses"] if e["egress"] == "b")


class MatrixChangeReachesTheDataPlane(AgentTest):
    """M(a, b) = 500 kb/s; ffsctl matrix set a->b 200kbps: the agent pushes lm = lm_code(200 kb/s)
    (with the default target, the share is M itself, spec §9). Each probe's label is exactly
    rf' = rf + log F - lm (Algorithm 3 on an uncongested egress) with the F its own packet wrote
    to f_est, which the agent reports as the pair's F: the label moves with M alone. A change above
    the interface's capacity is refused and the data plane keeps the last lm."""

    def runTest(self):
        rf = constants.CODE_ONE
        pkt = ffs_v4(rf, flags=0)
        lm_old, lm_new = (tables.lm_code(m, LPF_US * 1e3, LPF_SCALE_DOWN) for m in (self.capacity / 2, 0.2e6))
        units = tables.lpf_units_per_bps(LPF_US * 1e3, LPF_SCALE_DOWN)

        def probe(lm: int, what: str) -> None:
            self.send(pkt)
            got = self.recv(OUT)
            self.assertIsNotNone(got, "no packet forwarded with the agent running")
            sent_at = time.monotonic()  # the agent stamps each step with the same clock
            deadline = sent_at + 20
            while (status := call(self.sock, {"op": "status"}))["time_s"] <= sent_at and time.monotonic() < deadline:
                time.sleep(period_ms() / 4e3)
            self.assertGreater(status["time_s"], sent_at, "the agent made no step after the probe")
            f_bps = next(p["f_bps"] for p in status["pairs"] if (p["ingress"], p["egress"]) == ("a", "b"))
            want = expect.paper(
                decode(rf), round(f_bps * units), 2.0 ** (lm / constants.CODE_STEPS_PER_OCTAVE), expect.Egress()
            ).rf_out
            self.assertTrue(
                expect.close(Ether(got)[FFS].rf, want, expect.LABEL_BUDGET),
                f"{what}: rf' = rf · F / M with F as its packet wrote it: {decode(Ether(got)[FFS].rf):.5g}, want "
                f"{want:.5g}",
            )

        self.assertFalse(self.egress_b()["congested"])
        probe(lm_old, "M = 500 kb/s")
        r = self.ffsctl("matrix", "set", "--ingress", "a", "--egress", "b", "--rate", "200kbps")
        self.assertEqual(r.returncode, 0, r.stderr)
        time.sleep(2 * period_ms() / 1e3)  # F decays between the probes, so the two read different F
        probe(lm_new, "M = 200 kb/s")
        bad = self.ffsctl("matrix", "set", "--ingress", "a", "--egress", "b", "--rate", "5Mbps")
        self.assertEqual(bad.returncode, 1, bad.stderr)
        self.assertIn("above its capacity", bad.stderr)
        self.assertEqual(len(bad.stderr.strip().splitlines()), 1, "one-line error")
        time.sleep(2 * period_ms() / 1e3)
        probe(lm_new, "after a refused change")
        self.assertFalse(self.egress_b()["congested"])


# spec §9: τ moves on rates measured over at least 100 admitted frames, or over 1 s
TAU_MIN_FRAMES, TAU_MAX_INTERVAL_S = 100, 1.0


class TauRaisesDropsOnSustainedOverload(AgentTest):
    """The closed τ loop on the compiled program, scaled to what the target forwards: egress b's
    capacity (and target T) is set so that an overload of 1.25 T is a quarter of the packet rate
    the target forwards, measured first (tofino-model forwards a few hundred a second, and the
    agent's counter reads share its cores), and the F estimators' time constant is 1 s, so that
    they average over the pair's packets at that rate. Offered T/4, nothing is dropped and b is
    uncongested. Offered r = 1.25 T by the one pair (a, b) of share M = T/2, Eq. 2's fixed point,
    min(r, τ M) = T, is τ = T/M = 2: the agent finds b congested, τ settles there, and
    γ = τ M / F forwards T of the 1.25 T. When the overload stops, b is uncongested again and
    nothing is dropped. The phases follow one another without a pause in the sending (a pause
    lets F sag, and γ would pass everything at the next phase's start); their frames are told
    apart where they leave by their IP id.

    Both bounds are the rule's with the spec's budgets (§10) and the binomial spread of the N
    frames admitted in the window, each admitted with γ = T/r: over the window the loop drives
    the admitted rate A to T (every update's error is undone by the next, spec §9's rule), up to
    the update's bias of one in twice its frames; τ reads F, high by up to one frame in its
    frames per τ_F (§10.1, Poisson at worst), the weights within len_log's budget, γ within 1.4 %."""

    IP_LEN = 1000
    OVERLOAD = 1.25
    lpf_us = 1e6
    lpf_scale_down = None  # sized by the agent for T (the test computes no lm)
    SETTLE_PERIODS, WINDOW_PERIODS = 6, 10
    telemetry_period_s = 60.0  # the pairs' reads come between τ's reads and its push: not in the window

    def period_ms(self) -> float:
        """On tofino-model a step's reads take 0.5-1 s before τ is pushed, so τ acts a period late
        at 500 ms, and Appendix A's full correction a period late oscillates (τ swung 1.4-3.2 on
        Tofino 1's model, never settling). A 2 s period keeps the delay within half a period,
        where the rule converges, as hardware's few milliseconds do within 100 ms."""
        return MODEL_PERIOD_MS if str(params().get("tofino_model", "")) == "1" else period_ms()

    def frame(self, phase: int) -> bytes:
        """A test frame of `phase` (its IP id: the phases follow one another without a gap in the
        sending, which would let F sag and γ jump at the next phase's start, and are told apart
        where they leave)."""
        pkt = ffs_v4(encode(1.0), flags=0, ip_len=self.IP_LEN)
        pkt[IP].id = phase
        del pkt[IP].chksum
        return bytes(pkt)

    def frame_bits(self) -> int:
        """A test frame's line rate cost (spec §4): the frame with its FCS, plus preamble and gap."""
        frame = len(self.frame(0)) + constants.FCS_LEN
        return 8 * (max(frame, 64) + constants.WIRE_OVERHEAD)

    def before_agent(self):
        pkt = self.frame(0)
        sent, start = 0, time.monotonic()
        while time.monotonic() < start + 0.5:
            self.send(pkt)
            sent += 1
        # the rate the target forwards, not the rate PTF sends: tofino-model
        # forwards fewer than PTF sends, and an overload of the model itself stalls the agent's reads
        got, last = 0, start
        while got < sent and self.recv(OUT, timeout=0.5) is not None:
            got, last = got + 1, time.monotonic()
        rate = min(got / max(last - start, 0.5), 3000.0)  # packets/s
        self.capacity = 2 * round(rate / 4 * self.frame_bits() / self.OVERLOAD / 2)  # even: M = T/2 exactly
        logging.info("calibration: sent %d, forwarded %d in %.2f s: T = %g b/s", sent, got, last - start, self.capacity)

    def phase(self, phase: int, seconds: float, rate_bps: float) -> tuple[int, float, list[dict]]:
        """Send frames of `phase` paced at `rate_bps` for `seconds`: how many, the time it took,
        and the agent's view of b every 0.25 s."""
        pkt = self.frame(phase)
        gap = self.frame_bits() / rate_bps
        sent, start, views = 0, time.monotonic(), []
        due = start
        while (now := time.monotonic()) < start + seconds:
            if now >= start + 0.25 * (len(views) + 1):
                views.append(self.egress_b())
            self.send(pkt)
            sent += 1
            due = max(due + gap, now)  # after a stall, carry on at the rate (no catch-up burst)
            time.sleep(max(0.0, due - time.monotonic()))
        return sent, time.monotonic() - start, views

    def forwarded(self, sent: int) -> Counter[int]:
        """The frames that left b, by phase: read until all `sent` are in or none came for 1 s."""
        got: Counter[int] = Counter()
        while sum(got.values()) < sent and (frame := self.recv(OUT, timeout=1.0)) is not None:
            got[Ether(frame)[IP].id] += 1
        return got

    def bounds(
        self, sent: int, got: int, took: float, settle_s: float
    ) -> tuple[tuple[float, float], tuple[float, float]]:
        """(forwarded / T, τ / (T/M)): the ranges the rule allows, from the frames counted."""
        t = self.capacity
        spread = 3 * math.sqrt((1 - got / sent) / got)  # the admitted count's binomial error, 3 σ
        per_update = min(TAU_MIN_FRAMES, t / self.frame_bits() * TAU_MAX_INTERVAL_S)
        bias = 1 / (2 * per_update)  # spec §9: the multiplicative update's upward bias
        rho_tau_f = sent / took * self.lpf_us / 1e6  # the pair's frames per τ_F
        rising = math.exp(-settle_s / (self.lpf_us / 1e6))  # F's rise left at the window
        forwarded = (1 - spread, 1 + bias + spread)
        tau = (
            (1 - expect.WEIGHT_BUDGET - rising) / (1 + expect.DROP_BUDGET) - spread,
            (1 + 1 / rho_tau_f) * (1 + expect.WEIGHT_BUDGET) / (1 - expect.DROP_BUDGET) + bias + spread,
        )
        return forwarded, tau

    def runTest(self):
        t, period_s = self.capacity, self.period_ms() / 1e3
        settle_s, window_s = max(6.0, self.SETTLE_PERIODS * period_s), max(20.0, self.WINDOW_PERIODS * period_s)
        # the agent sees the overload end within two periods (one that straddles the end may still
        # read congested), and the step's reads and push take up to a period more on tofino-model
        grace = 1.0 + 3 * period_s
        # phases by IP id, sent back to back: 1 the agent's first periods, 2 below T, 3 F rises to r
        # and τ to its fixed point, 4 the window, 5 the overload ends, 6 below T again
        plan = [(1, 0.5, t / 4), (2, 1.5, t / 4), (3, settle_s, self.OVERLOAD * t), (4, window_s, self.OVERLOAD * t)]
        plan += [(5, grace, t / 4), (6, 1.5, t / 4)]
        runs = {n: self.phase(n, seconds, rate) for n, seconds, rate in plan}
        got = self.forwarded(sum(sent for sent, _, _ in runs.values()))
        sent, took, views = runs[4]
        offered, forwarded = (n * self.frame_bits() / took / t for n in (sent, got[4]))
        congested = [v for v in views if v["congested"]]
        # one active pair of share M = T/2: Eq. 2's fixed point, min(r, τ M) = T, is τ = T/M = 2
        tau = math.exp(sum(math.log(v["tau"]) for v in congested) / max(len(congested), 1)) / 2
        (f_lo, f_hi), (tau_lo, tau_hi) = self.bounds(sent, got[4], took, settle_s)
        logging.info(
            "T %g b/s, period %g s: offered %.3f T, forwarded %.4f T in [%.4f, %.4f], tau/2 %.4f in [%.4f, %.4f] "
            "(%d of %d views); forwarded by phase %s of %s",
            t,
            period_s,
            offered,
            forwarded,
            f_lo,
            f_hi,
            tau,
            tau_lo,
            tau_hi,
            len(congested),
            len(views),
            dict(got),
            {n: r[0] for n, r in runs.items()},
        )
        for n, what in ((2, "below T"), (6, "after the overload")):
            self.assertEqual(got[n], runs[n][0], f"{what} nothing is dropped")
            self.assertLess(sum(v["congested"] for v in runs[n][2]), len(runs[n][2]) / 2, (what, runs[n][2]))
        self.assertGreater(offered, 1.1, "PTF could not send fast enough to overload the egress")
        self.assertGreater(len(congested), 0.75 * len(views), views)
        self.assertTrue(all(v["tau"] >= 1.0 for v in congested), views)  # Lemma 1
        self.assertTrue(
            tau_lo <= tau <= tau_hi, f"tau {2 * tau:.3f}, want T/M = 2 within [{tau_lo:.4f}, {tau_hi:.4f}]·2"
        )
        self.assertTrue(
            f_lo <= forwarded <= f_hi, f"forwarded {forwarded:.4f} T, want A -> T: [{f_lo:.4f}, {f_hi:.4f}]"
        )
