# SPDX-License-Identifier: Apache-2.0
"""The bring-up self-test (ffs.agent.selftest) on the compiled program: it measures what
pkt_length counts with frames PTF sends, and sets the frame check for it.

What the target counts is the expectation (docs/hardware.md, settled on tofino-model, and the
software switch models the same): pkt_length counts the FCS and is the arrival length. So a
truthful frame's excess is FCS_LEN (spec §7.3: excess = pkt_length + arrival change - (L2 + IP
length)), with a shim inserted too; once configured, a frame whose IP length claims FCS_LEN bytes
more than it carries, which the unconfigured check lets through, is dropped."""

from base import DST4, IN, OUT, FfsTest, plain_v4
from ffs.agent.selftest import Basis, run_selftest
from ffs.core import constants, frames, p4names


class SelftestMeasures(FfsTest):
    def lie_passes(self) -> bool:
        """A frame whose IP length is FCS_LEN above its bytes: does it leave OUT?"""
        good = bytes(plain_v4(300))
        lie = frames.lie_ip_len(good, len(good) - constants.ETH_HDR_LEN + constants.FCS_LEN)
        self.send(lie, count=1)
        return self.count_received(OUT, 1) == 1

    def selftest(self, inserts: bool):
        return run_selftest(
            self.driver, lambda f: self.send(f, count=1), egress_port=OUT, dst=DST4, inserts=inserts, timeout_s=10.0
        )

    def runTest(self):
        self.set_port(IN, trust=1, insert=0)
        self.assertTrue(self.lie_passes(), "unconfigured, the check accepts a claim FCS_LEN above the bytes")
        r = self.selftest(inserts=False)
        self.assertEqual(r.basis, Basis(fcs_counted=True, deparsed=None))
        self.assertEqual(r.excess, constants.FCS_LEN)
        held = self.driver.read_default(p4names.FRAME_BASIS.name)
        self.assertEqual((held.action_name, held.params), ("basis_arrival", {"fcs": constants.FCS_COUNTED}))
        self.dataplane.flush()
        self.assertFalse(self.lie_passes(), "configured for the FCS, the same claim is a lie")

        self.set_port(IN, trust=1, insert=1)  # plain frames get a shim: the arrival length is measured
        r = self.selftest(inserts=True)
        self.assertEqual(r.basis, Basis(fcs_counted=True, deparsed=False))
        self.assertEqual(r.excess, constants.FCS_LEN)
