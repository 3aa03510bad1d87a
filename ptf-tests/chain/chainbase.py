# SPDX-License-Identifier: Apache-2.0
"""The base of the PTF tests across a chain of FFS nodes (python -m ffs.lab.chain test): every node
a tofino-model + bf_switchd that ffs-agent programmed from the chain's topology, reached over
BF-Runtime at its management address; PTF's device k is node k, its ports the node's host ports.

A test changes only what it needs on top of the agent's install (a pair's share, an egress's state,
an estimator that forgets between packets, spec §4) and puts every table and LPF spec back after.
It sees the frames s1 sends to s2 on a tap of their link (a raw socket in s1's namespace), so a
label can be checked where it was written and where it is read.

Test params: chain='<chain.json written by the runner>'.
"""

from __future__ import annotations

import json
import select
import sys
import time
from pathlib import Path

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import expect  # noqa: E402
from base import FORGETFUL, Saved, _grow_receive_buffers, params  # noqa: E402
from ffs.core import p4names, tables  # noqa: E402
from ffs.core.entries import Exact, TableEntry, Update  # noqa: E402
from ffs.core.topology import Node, Topology, load  # noqa: E402
from ffs.driver.base import Driver  # noqa: E402
from ffs.driver.bfrt import BfrtDriver  # noqa: E402
from ffs.lab.chain import ChainPlan, socket_in  # noqa: E402

PACKET_OUTGOING = 4


def chain() -> ChainPlan:
    return ChainPlan.from_json(json.loads(Path(str(params()["chain"])).read_text()))


class Hop:
    """One node of the chain as a test drives it: its driver, its topology node, and its pairs."""

    def __init__(self, plan_node, node: Node, driver: Driver) -> None:
        self.plan, self.node, self.driver = plan_node, node, driver
        self.index = plan_node.index
        self.pairs = {
            (e.key["ingress_port"].value, e.key["egress_port"].value): e for e in driver.read_table(p4names.PAIRS.name)
        }
        self.saved = Saved.capture(driver, tuple(sorted(e.params["pid"] for e in self.pairs.values())))

    def port(self, iface: str) -> int:
        return self.node.interfaces[iface].port

    def pid(self, ingress: str, egress: str) -> int:
        return int(self.pairs[(self.port(ingress), self.port(egress))].params["pid"])

    def forget(self) -> None:
        """Every pair's estimator forgets between packets: F is the packet's own weight (spec §4)."""
        self.driver.set_lpf_spec(p4names.F_LPF.name, sorted(self.saved.lpf), FORGETFUL)

    def set_m(self, ingress: str, egress: str, m_f: float) -> None:
        """The pair's share M_F in estimator units (spec §4), pushed as the control plane pushes it."""
        e = self.pairs[(self.port(ingress), self.port(egress))]
        lm = expect.lm_of(m_f)
        self.driver.write(
            [Update("modify", TableEntry(e.table, e.key, "set_pair", tables.pair_params(int(e.params["pid"]), lm)))]
        )

    def set_egress(self, egress: str, state: expect.Egress) -> None:
        key = {"egress_port": Exact(self.port(egress))}
        self.driver.write([Update("modify", TableEntry(p4names.EGRESS_PARAMS.name, key, "set_egress", state.params()))])

    def f_est(self, ingress: str, egress: str) -> int:
        pid = self.pid(ingress, egress)
        return self.driver.read_registers(p4names.F_EST.name, [pid])[pid]


class ChainTest(BaseTest):
    """Drivers to every node, the link tap, and the state put back after the test."""

    topo: Topology

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        _grow_receive_buffers(self.dataplane)
        self.dataplane.flush()
        self.plan = chain()
        self.topo = load(self.plan.topology)
        self.hops: dict[str, Hop] = {}
        self.tap = None
        try:
            for n in self.plan.nodes:
                d = BfrtDriver(n.grpc, rpc_timeout_s=60.0)
                d.connect(timeout_s=60)
                self.hops[n.name] = Hop(n, self.topo.node(n.name), d)
            for h in self.hops.values():
                h.forget()
                for egress in h.node.fairness:
                    h.set_egress(egress, expect.Egress())
            s1 = self.plan.nodes[0]
            (link_port,) = s1.links
            self.tap = socket_in(s1.netns, s1.veths[link_port])
        except BaseException:
            self._restore()
            BaseTest.tearDown(self)
            raise

    def tearDown(self) -> None:
        try:
            self.dataplane.flush()
        finally:
            self._restore()
            BaseTest.tearDown(self)

    def _restore(self) -> None:
        for h in self.hops.values():
            try:
                h.saved.restore(h.driver)
            finally:
                h.driver.close()
        self.hops = {}
        if self.tap is not None:
            self.tap.close()

    # -- packets -------------------------------------------------------------------------------
    def send(self, node: str, iface: str, pkt) -> None:
        h = self.hops[node]
        self.drain_tap()
        tu.send_packet(self, (h.index, h.port(iface)), bytes(pkt))

    def recv(self, node: str, iface: str, timeout: float = 3.0) -> bytes | None:
        h = self.hops[node]
        r = tu.dp_poll(self, device_number=h.index, port_number=h.port(iface), timeout=timeout)
        return bytes(r.packet) if isinstance(r, self.dataplane.PollSuccess) else None

    def drain_tap(self) -> None:
        while select.select([self.tap], [], [], 0)[0]:
            self.tap.recv(65535)

    def on_link(self, outgoing: bool = True, timeout: float = 3.0) -> bytes | None:
        """The next frame s1 sent to s2 (outgoing) or s2 sent to s1, as it crossed the link."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            if not select.select([self.tap], [], [], left)[0]:
                break
            frame, addr = self.tap.recvfrom(65535)
            if (addr[2] == PACKET_OUTGOING) == outgoing:
                return frame
        return None

    def expect_nothing(self, timeout: float = 0.3) -> None:
        for n in self.plan.nodes:
            for port in n.hosts:
                r = tu.dp_poll(self, device_number=n.index, port_number=port, timeout=timeout)
                self.assertNotIsInstance(r, self.dataplane.PollSuccess, f"a stray frame on {n.name} port {port}")

    def through(
        self, pkt, src: tuple[str, str], dst: tuple[str, str], tries: int = 1, timeout: float = 3.0
    ) -> tuple[bytes | None, bytes | None]:
        """Send `pkt` into node src[0]'s interface src[1] until a copy leaves at dst (at most
        `tries` copies, for γ < 1): what crossed the link for that copy, and what left."""
        for _ in range(tries):
            self.send(*src, pkt)
            out = self.recv(*dst, timeout=timeout)
            if out is not None:
                forward = self.plan.node(src[0]).index < self.plan.node(dst[0]).index
                return self.on_link(outgoing=forward, timeout=0.5), out
        return None, None
