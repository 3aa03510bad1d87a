# SPDX-License-Identifier: Apache-2.0
"""The differential run's probes (ffs.lab.differential.generate) cover what the data plane must tell
apart, without an SDE: IPv4 fragments, QinQ, IPv6 extension headers beside Hop-by-Hop, payloads of
random bytes; and the software switch, on the differential's node, gives fragments the fate of
spec §2."""

import struct

from ffs.core import constants
from ffs.lab.differential import generate
from ffs.switch.packet import parse

PREFIXES4, PREFIXES6 = ["10.0.1.0/24", "10.0.2.0/24"], ["fd00:1::/32", "fd00:2::/32"]


def test_probes_cover_fragments_qinq_extensions_and_payloads():
    probes = generate(7, 3000, (1, 2, 3), PREFIXES4, PREFIXES6)
    kinds = " ".join(p.kind for p in probes)
    for what in (
        "frag=0x2000",
        "frag=0x20b9",
        "frag=0x00b9",
        "frag=0x0172",
        "qinq",
        "ext=43",
        "ext=44",
        "ext=60",
        "ext=0",
        "+shim",
        "random-payload",
        "lying-length",
        "shim=cut",
    ):
        assert what in kinds, what
    # a non-first fragment whose data reads as a valid shim, and one shorter than a shim
    later = [p for p in probes if "frag=0x0172" in p.kind or "frag=0x00b9" in p.kind or "frag=0x20b9" in p.kind]
    assert any(
        p.frame[14 + 9] == constants.IP_PROTO_FFS and p.frame[34] >> 4 == 1
        for p in later
        if p.frame[12:14] == b"\x08\x00"
    )
    assert any(struct.unpack("!H", p.frame[16:18])[0] < 28 for p in later if p.frame[12:14] == b"\x08\x00")
    # no probe's fragment is read as a shim by the ingress parser unless it is a first fragment
    for p in later:
        if p.frame[12:14] == b"\x08\x00" and p.frame[14] >> 4 == 4:
            assert parse(p.frame + bytes(max(0, 64 - len(p.frame)))).shim == 0, p.kind
    clean = generate(7, 1000, (1, 2, 3), PREFIXES4, PREFIXES6, malformed=False)
    assert not any("lying-length" in p.kind or "shim=cut" in p.kind for p in clean)


def installed_dut():
    """The differential's node as ffs-agent installs it on a software switch: the node, a function
    that loads a fresh switch with the node's table state (what the run reads back from the
    Tofino), and every egress uncongested (the exact phase's state)."""
    from conftest import TOPOLOGIES
    from ffs.agent.core import Agent
    from ffs.core.topology import load
    from ffs.lab.differential import read_state
    from ffs.switch.driver import LocalDriver
    from ffs.switch.pipeline import Pipeline

    topo = load(TOPOLOGIES / "differential.yaml")
    node = topo.node("dut")
    first = LocalDriver(Pipeline(1))
    Agent(first, topo, "dut").install()
    state = read_state(first)

    def loaded() -> Pipeline:
        pipe = Pipeline(1)
        LocalDriver(pipe).write(state)
        return pipe

    return node, loaded, {e: (None, False, 1.25) for e in sorted(node.fairness)}


def test_a_phase_that_replays_gamma_leaves_out_probes_the_egress_drops_whatever_gamma_does():
    """The congested phase replays γ from what the Tofino forwarded; a frame the egress's frame check
    drops (spec §7.3: bytes disagreeing with the IP length) is not forwarded whether or not γ
    admitted it, so it cannot say what γ did and is left out. An honest frame is kept, and so is a
    claim the ingress drops before γ (beyond its port's frame limit, spec §4)."""
    from ffs.core.frames import ipv4_frame, lie_ip_len
    from ffs.lab.differential import Probe, hides_gamma

    node, loaded, uncongested = installed_dut()
    (route,) = [r for r in node.routes if r.prefix.startswith("10.") and node.interfaces[r.interface].port != 1][:1]
    dst = route.prefix.rsplit(".", 1)[0] + ".7"

    def hidden(frame: bytes) -> bool:
        return hides_gamma(loaded(), uncongested, node, Probe(0, 1, frame, "test"))

    honest = ipv4_frame("10.0.9.1", dst, 1000)
    assert not hidden(honest)
    # p1's IP MTU is 1400: claims up to 1404 reach the frame check (spec §4)
    assert hidden(lie_ip_len(honest, 20)) and hidden(lie_ip_len(honest, 1400 + 4))
    # one beyond it is dropped at the ingress, before γ: both targets drop it whatever γ, nothing to replay
    assert not hidden(lie_ip_len(honest, 1400 + 5)) and not hidden(lie_ip_len(honest, 0xFFFF))


def test_one_software_switch_tells_the_hidden_probes_as_a_fresh_one_per_probe_does():
    """`hidden_from_gamma` checks a phase's probes on one switch: over seeded probes of every kind,
    the lies among them, the same probes are hidden as on a fresh switch each, whatever the probes
    before them left in F and the counters."""
    from ffs.lab.differential import hidden_from_gamma

    node, loaded, uncongested = installed_dut()
    ports = tuple(sorted(i.port for i in node.interfaces.values()))
    prefixes4 = [r.prefix for r in node.routes if ":" not in r.prefix]
    prefixes6 = [r.prefix for r in node.routes if ":" in r.prefix]
    probes = generate(7, 60, ports, prefixes4, prefixes6, malformed=True)
    each = {p.seq for p in probes if hidden_from_gamma(loaded(), uncongested, node, [p])}
    assert 0 < len(each) < len(probes)  # some lie, some do not: the comparison can fail
    assert hidden_from_gamma(loaded(), uncongested, node, probes) == each
