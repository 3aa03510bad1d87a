# SPDX-License-Identifier: Apache-2.0
"""Live mode, frame by frame (root): single frames sent from one host namespace reach another
through `ffs-switch run` with the shim rewritten, inserted or reset exactly as the table state and
spec §7.2 say, byte for byte; and the switch stops cleanly (exit 0) on SIGTERM.

Each expected frame is derived from the spec's arithmetic with the pair's `lm`, the egress
parameters the test set, and `f_est[pid]` read back after the frame (the F the packet saw), so
the comparison is exact although the LPF runs on real time.
"""

import os
import select
import subprocess
import sys

import pytest

from ffs.agent.core import Agent
from ffs.core import constants, p4names
from ffs.core.frames import ipv4_frame, shim
from ffs.core.labels import encode
from ffs.core.program import egress_entry
from ffs.core.tables import egress_params, f_log_entries, lm_of
from ffs.lab.liverun import live_node
from ffs.switch.driver import ModelDriver

# p1 trusts arriving labels; p2 resets them and inserts the shim; p3 keeps the shim on the way out
TOPO = """
name: liveshim{run}
nodes:
  s1:
    interfaces:
      p1: {capacity: 20Mbps, port: 1, trust: true}
      p2: {capacity: 20Mbps, port: 2, trust: false, insert: true}
      p3: {capacity: 20Mbps, port: 3, strip: false}
    fairness:
      p3: {p1: 10Mbps, p2: 10Mbps}
    routes:
      - {prefix: 10.0.1.0/24, interface: p1}
      - {prefix: 10.0.2.0/24, interface: p2}
      - {prefix: 10.0.3.0/24, interface: p3}
hosts:
  h1: {attach: s1.p1, address: 10.0.1.1/24}
  h2: {attach: s1.p2, address: 10.0.2.1/24}
  h3: {attach: s1.p3, address: 10.0.3.1/24}
"""

CAPTURE = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind(("eth0", 0))
print("ready", flush=True)
while True:
    f, a = s.recvfrom(65535)
    if a[2] != 4 and f[12:14] == b"\x08\x00" and f[26:28] == b"\x0a\x00":  # IPv4 from 10.0/16
        print(f.hex(), flush=True)
"""
SEND = r"""
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("eth0", 0))
s.send(bytes.fromhex(sys.argv[1]))
"""


def mac(text: str) -> bytes:
    return bytes.fromhex(text.replace(":", ""))


def lf_of(f: int) -> int:
    """f_log (spec §5.1) through the one generator: the entry whose ternary match holds f."""
    for e in F_LOG:
        t = e.key["f"]
        if f & t.mask == t.value:
            return e.params["lf"]
    return 0  # lf_zero (f = 0)


F_LOG = f_log_entries()


@pytest.fixture
def node(tmp_path):
    f = tmp_path / "liveshim.yaml"
    f.write_text(TOPO.replace("{run}", str(os.getpid() % 100000)))  # own namespaces per test run
    with live_node(f, tmp_path, agent=False) as n:
        drv = ModelDriver(n.switch_address)
        drv.connect(timeout_s=10)
        Agent(drv, n.topology, "s1").install()
        cap = n.spawn(n.exec_args("h3", sys.executable, "-c", CAPTURE), stdout=subprocess.PIPE, text=True)
        assert cap.stdout.readline().strip() == "ready"
        n.drv, n.cap = drv, cap
        yield n
        switch = n.procs[0]
    assert switch.returncode == 0  # SIGTERM: the packet loop ended, the service stopped, exit 0


def exchange(n, host: str, frame: bytes) -> bytes:
    """Send one frame from `host`, return the frame h3 receives."""
    subprocess.run(n.exec_args(host, sys.executable, "-c", SEND, frame.hex()), check=True, timeout=10)
    ready, _, _ = select.select([n.cap.stdout], [], [], 5)
    assert ready, "no frame reached h3"
    return bytes.fromhex(n.cap.stdout.readline().strip())


def pair(n, ingress: int) -> tuple[int, int]:
    for e in n.drv.read_table(p4names.PAIRS.name):
        if e.key["ingress_port"].value == ingress and e.key["egress_port"].value == 3:
            return e.params["pid"], lm_of(e.params)
    raise AssertionError(f"no pair {ingress}->3")


def set_egress(n, tau: float | None, congested: bool, cr: float | None) -> dict:
    params = egress_params(tau, congested, cr)
    n.drv.write([egress_entry(3, params, "modify")])
    return params


def expected_label(n, pid: int, lm: int, rf: int, eg: dict) -> dict:
    """What spec §7.2 says the packet leaves with, for the F it saw: rf_norm = code(rf · F / M),
    code(τ / rf_norm) and code(max(1 / rf_norm, C / R*))."""
    f = n.drv.read_registers(p4names.F_EST.name, [pid])[pid]
    rf_norm = rf - lm + lf_of(f)
    assert not eg["congested"] or rf_norm <= eg["ltau"], "the test wants gamma = 1 (no random drop)"
    c_cong = eg["ltau"] - rf_norm + constants.CODE_ONE
    c_unc = max(0x10000 - rf_norm, eg["lcr"])
    return {"f": f, "rf_out": min(rf_norm, eg["ltau"]), "c_cong": c_cong, "c_unc": c_unc}


def test_frames_rewritten_inserted_and_reset_per_table_state(node):
    n = node
    h1, h2, h3 = (n.plan.host(h) for h in ("h1", "h2", "h3"))
    pid1, lm1 = pair(n, 1)
    pid2, lm2 = pair(n, 2)

    # 1. trusted label 2.0 with R on a congested egress (tau = 64 keeps gamma = 1): the label is
    #    normalized, and rri becomes min(rri, code(tau / rf_norm)) (ri_congested)
    eg = set_egress(n, 64.0, True, 0.5)
    rf_in = encode(2.0)
    sent = ipv4_frame(
        "10.0.1.1",
        "10.0.3.1",
        1250,
        shim(rf_in, constants.FLAG_RI, 17, constants.CODE_MAX),
        src_mac=mac(h1.mac),
        dst_mac=mac(h3.mac),
    )
    got = exchange(n, "h1", sent)
    x = expected_label(n, pid1, lm1, rf_in, eg)
    assert x["f"] > 0 and x["rf_out"] != rf_in  # the label really changed
    assert got == ipv4_frame(
        "10.0.1.1",
        "10.0.3.1",
        1250,
        shim(x["rf_out"], constants.FLAG_RI, 17, min(constants.CODE_MAX, x["c_cong"])),
        src_mac=mac(h1.mac),
        dst_mac=mac(h3.mac),
    )

    # 2. the same on an uncongested egress: rri becomes min(rri, max(code(1/rf_norm), lcr))
    eg = set_egress(n, None, False, 1.5)
    sent = ipv4_frame(
        "10.0.1.1",
        "10.0.3.1",
        1250,
        shim(rf_in, constants.FLAG_RI, 17, 0xF000),
        src_mac=mac(h1.mac),
        dst_mac=mac(h3.mac),
    )
    got = exchange(n, "h1", sent)
    x = expected_label(n, pid1, lm1, rf_in, eg)
    assert got[34:42] == shim(x["rf_out"], constants.FLAG_RI, 17, min(0xF000, x["c_unc"]))
    assert got[:34] == sent[:34] and got[42:] == sent[42:]  # nothing else changed

    # 3. a plain UDP frame on p2 (insert): the shim appears with D, the default label normalized,
    #    rri = infinity, next header UDP; IP length +8, protocol 253, checksum recomputed
    eg = set_egress(n, 64.0, True, 0.5)
    sent = ipv4_frame("10.0.2.1", "10.0.3.1", 1000, None, src_mac=mac(h2.mac), dst_mac=mac(h3.mac))
    got = exchange(n, "h2", sent)
    x = expected_label(n, pid2, lm2, constants.CODE_ONE, eg)
    assert got == ipv4_frame(
        "10.0.2.1",
        "10.0.3.1",
        1008,
        shim(x["rf_out"], constants.FLAG_DEFAULTED, 17, constants.CODE_MAX, 0),
        src_mac=mac(h2.mac),
        dst_mac=mac(h3.mac),
    )

    # 4. a labelled frame on the untrusted p2: label reset to 1.0 before normalizing, D set, and
    #    RI run with the label the port set: rri becomes min(rri, code(tau / rf_norm)) (spec §6)
    sent = ipv4_frame(
        "10.0.2.1",
        "10.0.3.1",
        1000,
        shim(encode(4.0), constants.FLAG_RI, 17, 0x9000, 0x1234),
        src_mac=mac(h2.mac),
        dst_mac=mac(h3.mac),
    )
    got = exchange(n, "h2", sent)
    x = expected_label(n, pid2, lm2, constants.CODE_ONE, eg)
    assert got[34:42] == shim(
        x["rf_out"], constants.FLAG_RI | constants.FLAG_DEFAULTED, 17, min(0x9000, x["c_cong"]), 0x1234
    )

    # the counters saw exactly these frames: two per pair, none dropped
    pkts = n.drv.read_counters(p4names.PAIR_BYTES.name, [pid1, pid2])
    assert (pkts[pid1].packets, pkts[pid2].packets) == (2, 2)
    assert n.drv.read_counters(p4names.PAIR_DROPS.name, [pid1, pid2])[pid1].packets == 0
