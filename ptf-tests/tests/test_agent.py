"""The agent against the target: an ffsctl matrix change reaches the data plane's pair table, and
the agent's tau moves the drop rate the right way on a sustained overload."""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ptf.testutils as tu

from ffs import p4names as N
from ffs import tables as T
from ffs.agent.api import ApiError, call
from ffs.labels import encode
from base import IN, OUT, FfsTest, params

TOPOLOGY = Path(__file__).resolve().parent.parent / "topology.yaml"


class AgentTest(FfsTest):
    def setUp(self):
        FfsTest.setUp(self)
        self.work = Path(tempfile.mkdtemp(prefix="ffs-ptf-agent-"))
        p = params()
        target = "model" if p.get("target", "model") == "model" else "tofino"
        switch = p.get("control") if target == "model" else p.get("grpc_addr", "localhost:50052")
        self.agent = subprocess.Popen(
            [sys.executable, "-m", "ffs.cli.agent", f"--topology={TOPOLOGY}", "--node=ptf", f"--target={target}",
             f"--switch={switch}", f"--socket={self.work}/agent.sock", f"--state-dir={self.work}/state", "--period-ms=100"],
            stdout=subprocess.DEVNULL, stderr=open(self.work / "agent.log", "w"))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                call(self.work / "agent.sock", {"op": "status"})
                return
            except ApiError:
                time.sleep(0.2)
        raise AssertionError("agent did not start: " + (self.work / "agent.log").read_text()[-500:])

    def tearDown(self):
        self.agent.terminate()
        self.agent.wait(timeout=10)
        shutil.rmtree(self.work, ignore_errors=True)
        FfsTest.tearDown(self)

    def lm(self):
        return {(e.key["ingress_port"].value, e.key["egress_port"].value): e.params["lm"] for e in self.driver.read_table(N.PAIRS.name)}


class MatrixChangeReachesTheDataPlane(AgentTest):
    def runTest(self):
        assert self.lm()[(1, 2)] == T.lm_code(0.5e6)
        r = subprocess.run([sys.executable, "-m", "ffs.cli.ctl", f"--socket={self.work}/agent.sock", "matrix", "set",
                            "--ingress", "a", "--egress", "b", "--rate", "200kbps"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert self.lm()[(1, 2)] == T.lm_code(0.2e6)
        bad = subprocess.run([sys.executable, "-m", "ffs.cli.ctl", f"--socket={self.work}/agent.sock", "matrix", "set",
                              "--ingress", "a", "--egress", "b", "--rate", "5Mbps"], capture_output=True, text=True)
        assert bad.returncode == 1 and "above its capacity" in bad.stderr
        assert self.lm()[(1, 2)] == T.lm_code(0.2e6)  # the refused change left the table alone


class TauRaisesDropsOnSustainedOverload(AgentTest):
    """1 Mbps egress. Below it (0.5 Mbps) nothing is dropped; under a sustained overload the agent
    sees R* > T, brings tau down from infinity to about 1, and most packets are dropped."""

    def drop_fraction(self, pid, seconds, gap_s, pkt):
        d0 = self.counter(N.PAIR_DROPS.name, pid).packets
        s0 = self.counter(N.PAIR_BYTES.name, pid).packets
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            tu.send_packet(self, IN, pkt)
            if gap_s:
                time.sleep(gap_s)
        d1 = self.counter(N.PAIR_DROPS.name, pid).packets
        s1 = self.counter(N.PAIR_BYTES.name, pid).packets
        return (d1 - d0) / max(1, s1 - s0), s1 - s0

    def runTest(self):
        pkt = self.ffs_pkt(encode(1.0), flags=0, ip_len=1000)
        pid = next(e.params["pid"] for e in self.driver.read_table(N.PAIRS.name)
                   if e.key["ingress_port"].value == IN and e.key["egress_port"].value == OUT)
        light, n_light = self.drop_fraction(pid, 1.0, 1000 * 8 / 0.5e6, pkt)  # 0.5 Mbps
        self.drop_fraction(pid, 0.5, 0, pkt)  # overload starts; the agent reacts within a few periods
        heavy, n_heavy = self.drop_fraction(pid, 0.5, 0, pkt)
        status = call(self.work / "agent.sock", {"op": "status"})
        b = next(e for e in status["egresses"] if e["egress"] == "b")
        self.count_received(OUT, 100000, timeout=0.5)  # drain
        assert light == 0.0 and n_light > 20, (light, n_light)
        assert n_heavy * 1000 * 8 / 0.5 > 4e6 and heavy > 0.5, (heavy, n_heavy)  # > 4x the egress: mostly dropped
        assert b["congested"] and b["tau"] >= 1.0
