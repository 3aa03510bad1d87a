# SPDX-License-Identifier: Apache-2.0
"""The software switch against docs/spec.md, packet by packet: parser fates, forwarding, port modes,
normalization, γ, counters and RI (Algorithm 4 with the pre-γ label)."""

import math
import struct

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether

from conftest import ROOT
from ffs.core import constants, p4names, tables
from ffs.core.entries import Exact, LpfSpec, Lpm, TableEntry, Update
from ffs.core.frames import ipv4_checksum, ipv4_frame, ipv6_frame, lie_ip_len, shim
from ffs.core.labels import decode, encode
from switchkit import DST, IN, OUT, SCALE, labelled, lm_for, rig, single_packet_f


def shim_of(frame: bytes, ihl: int = 20, l2: int = 14):
    b = frame[l2 + ihl : l2 + ihl + 8]
    return {
        "version": b[0] >> 4,
        "flags": b[0] & 0xF,
        "nh": b[1],
        "rf": (b[2] << 8) | b[3],
        "rri": (b[4] << 8) | b[5],
        "echo": (b[6] << 8) | b[7],
    }


def events(r):
    return {i: v.packets for i, v in r.driver.read_counters(p4names.EVENTS.name).items() if v.packets}


# --- parser fates (spec §2) ------------------------------------------------------------------


OPTIONS_MAX = b"\x01" * 40  # IHL 15: the shim starts at byte 74, beyond the Ethernet minimum


def malformed(r):
    return r.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets


@pytest.mark.parametrize("kept", range(8))
def test_a_frame_that_ends_inside_the_shim(kept):
    """spec §2, as tofino-model does it (docs/pipeline.md): the parser reads the frame as the MAC
    hands it over, padded to 60 bytes and followed by its 4-byte FCS. A frame that ends more than
    4 bytes before the shim's end is a parser error; one that ends within the FCS is parsed, and
    its IP length, which claims the missing bytes, is a lie that the egress drops (malformed)."""
    r = rig()
    sh = shim(encode(2.0), constants.FLAG_RI, 17, constants.CODE_MAX, 0)
    f = bytearray(ipv4_frame("10.0.1.1", DST, 168, None, options=OPTIONS_MAX))[: 14 + 60] + sh[:kept]
    f[14 + 9] = constants.IP_PROTO_FFS
    f[14 + 10 : 14 + 12] = struct.pack("!H", ipv4_checksum(f[14 : 14 + 60]))
    res = r.send(bytes(f))
    assert res.egress_port is None
    if kept < 4:
        assert res.drop_reason == "parse_error" and events(r) == {constants.EVENT_PARSE_ERROR: 1} and malformed(r) == 0
    else:
        assert res.drop_reason == "malformed" and events(r) == {} and malformed(r) == 1
    # the same frame with an honest IP length does not cover the shim: ipv4_shim_len, a parse error
    f[14 + 2 : 14 + 4] = struct.pack("!H", 60 + kept)
    assert r.send(bytes(f)).drop_reason == "parse_error"


@pytest.mark.parametrize("payload_len", [0, 7, 8, 108])
def test_an_ipv6_runt_reads_its_shim_from_the_padding(payload_len):
    """A 58-byte IPv6 frame with 4 bytes of shim is padded to 60 on any Ethernet link: the parser
    reads the rest of the shim from the padding. payload_len < 8 is refused at once (a parse
    error); a longer one claims bytes the frame does not hold, and the egress drops it."""
    r = rig()
    f = ipv6_frame("fd00:1::1", "fd00:2::7", 8, shim(encode(2.0), constants.FLAG_RI, 17, constants.CODE_MAX, 0))
    f = bytearray(f[: 14 + 40 + 4])
    f[14 + 4 : 14 + 6] = struct.pack("!H", payload_len)
    res = r.send(bytes(f))
    assert res.egress_port is None
    if payload_len < 8:
        assert res.drop_reason == "parse_error" and malformed(r) == 0
    else:
        assert res.drop_reason == "malformed" and malformed(r) == 1


def test_ip_length_short_of_the_shim_is_a_parse_error():
    r = rig()
    short = bytearray(ipv4_frame("10.0.1.1", DST, 24, shim(encode(1.0))[:4]))
    short[14 + 9] = constants.IP_PROTO_FFS
    assert r.send(bytes(short)).drop_reason == "parse_error"
    assert events(r) == {constants.EVENT_PARSE_ERROR: 1}


@pytest.mark.parametrize("first_byte", [0x28, 0x19])  # version 2; version 1 with the reserved bit
def test_opaque_shim_forwarded_untouched(first_byte):
    r = rig()
    f = bytearray(labelled(encode(8.0)))
    f[34] = first_byte
    res = r.send(bytes(f))
    assert res.egress_port == OUT and res.frame == bytes(f)
    assert events(r) == {constants.EVENT_OPAQUE_SHIM: 1}


@pytest.mark.parametrize("first_byte", [0x28, 0x19], ids=["version-2", "reserved-bit"])
def test_a_strip_port_leaves_a_shim_it_does_not_understand(first_byte):
    """spec §6: only a valid shim is removed at a strip port; another version passes untouched (the
    8 bytes are another protocol's header, not ours to cut)."""
    r = rig()
    r.driver.write([Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(OUT)}, "strip_shim"))])
    f = bytearray(labelled(encode(1.0)))
    f[34] = first_byte
    assert r.send(bytes(f)).frame == bytes(f)
    valid = labelled(encode(1.0))
    assert len(r.send(valid).frame) == len(valid) - constants.SHIM_LEN  # a valid one is removed


def test_non_ip_and_route_miss_drop():
    r = rig()
    arp = bytes(12) + b"\x08\x06" + bytes(46)
    assert r.send(arp).drop_reason == "route_miss"
    assert r.send(ipv4_frame("10.0.1.1", "192.0.2.1", 100)).drop_reason == "route_miss"
    assert events(r) == {constants.EVENT_ROUTE_MISS: 2}


def test_miss_action_is_configurable():
    r = rig()
    r.driver.write([Update("set_default", TableEntry(p4names.IPV4_ROUTES.name, {}, "route", {"port": 9}))])
    res = r.send(ipv4_frame("10.0.1.1", "192.0.2.1", 100))
    assert res.egress_port == 9


def test_lpm_prefers_longest_prefix():
    r = rig()
    r.driver.write(
        [
            Update(
                "insert", TableEntry(p4names.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000307, 32)}, "route", {"port": 7})
            )
        ]
    )
    assert r.send(ipv4_frame("10.0.1.1", DST, 100)).egress_port == 7
    assert r.send(ipv4_frame("10.0.1.1", "10.0.3.8", 100)).egress_port == OUT


@pytest.mark.parametrize(
    "frame, shim_at",
    [
        (lambda s: ipv4_frame("10.0.1.1", DST, 1000, s, options=b"\x01\x01\x01\x00" * 2), 14 + 28),
        (lambda s: ipv4_frame("10.0.1.1", DST, 1000, s, vlan=12), 18 + 20),
        (lambda s: ipv6_frame("fc00::1", "fd00::9", 1000, s), 14 + 40),
    ],
    ids=["ipv4-options", "vlan", "ipv6"],
)
def test_shim_found_after_options_vlan_ipv6(frame, shim_at):
    r = rig()
    r.set_pair(constants.LM_MAX)  # the largest M: every label normalizes far below tau, nothing drops
    r.set_egress(encode(1.0))
    f = frame(shim(encode(0.25), constants.FLAG_RI))
    res = r.send(f)
    assert res.egress_port == OUT
    b = res.frame[shim_at : shim_at + 8]
    assert b[0] >> 4 == 1 and b[6:8] == b"\x00\x00"
    # nothing outside the shim's rf and rri changed
    assert res.frame[:shim_at] == f[:shim_at] and res.frame[shim_at + 8 :] == f[shim_at + 8 :]


# --- unmanaged pairs, port modes ------------------------------------------------------------


def test_unmanaged_pair_is_bypassed():
    r = rig()
    f = labelled(encode(3.0))
    res = r.send(f, port=2)  # no pair (2, 3)
    assert res.egress_port == OUT and res.frame == f
    assert events(r) == {constants.EVENT_NO_PAIR: 1}


def test_reset_port_defaults_label_and_sets_flag():
    r = rig(trust=0)
    lm = lm_for(constants.CODE_ONE, encode(0.5))  # the label is ignored: rf = 1.0 enters normalization
    r.set_pair(lm)
    res = r.send(labelled(encode(64.0), rri=encode(0.5)))
    s = shim_of(res.frame)
    assert s["rf"] == encode(0.5)  # from the default 1.0, not from 64
    assert s["flags"] & constants.FLAG_DEFAULTED
    assert s["rri"] == encode(0.5)  # uncongested, γ = 1: an RRI below 1 stays (Algorithm 4 line 2)


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("congested, want", [(True, 8 / 3), (False, 2.0)])
def test_a_host_port_gives_its_sender_rate_feedback(engine, congested, want):
    """spec §6 (FFS §IX, App. C/D: the first node initialises the labels): a resetting port
    replaces the label, and Algorithm 4 runs with the label it set, so an FFS-aware host gets
    feedback from its first hop in a default deployment. Congested at τ = 4/3 with rf' = 0.5
    (Table II's s1): RRI = τ / rf' = 8/3 (line 5); uncongested with C/R* = 2 and rf' = 1: RRI =
    max(C/R*, 1/rf') = 2 (lines 7-8). Whatever label the host wrote."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(trust=0, pipeline=FastPipeline if engine == "c" else Pipeline)
    norm = 0.5 if congested else 1.0
    r.set_pair(lm_for(constants.CODE_ONE, encode(norm)))  # the default label 1.0 normalizes to rf'
    if congested:
        r.set_egress(encode(4 / 3))
    else:
        r.set_egress(constants.CODE_MAX, congested=0, lcr=encode(2.0))
    s = shim_of(r.send(labelled(encode(64.0))).frame)
    assert s["flags"] & constants.FLAG_DEFAULTED and s["rf"] == encode(norm)
    assert decode(s["rri"]) == pytest.approx(want, rel=0.006)
    # without the R flag nothing is written
    s = shim_of(r.send(labelled(encode(64.0), flags=0)).frame)
    assert s["rri"] == constants.CODE_MAX


def test_insert_then_strip_restores_the_frame():
    r = rig(insert=1)
    plain = ipv4_frame("10.0.1.1", DST, 500)
    res = r.send(plain)
    out = res.frame
    ip = IP(out[14:])
    assert ip.proto == constants.IP_PROTO_FFS and ip.len == 508
    assert ipv4_checksum(out[14:34]) == struct.unpack("!H", out[24:26])[0]
    s = shim_of(out)
    assert (
        s["version"] == 1
        and s["flags"] == constants.FLAG_DEFAULTED
        and s["nh"] == 17
        and s["rri"] == constants.CODE_MAX
    )
    # strip at the egress port: the original bytes come back
    r.driver.write([Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(OUT)}, "strip_shim"))])
    res2 = r.send(out)
    assert res2.frame == plain


INSERT_CASES = {
    "ipv4": lambda ip_len, ffs: ipv4_frame("10.0.1.1", DST, ip_len, ffs),
    "ipv4-options": lambda ip_len, ffs: ipv4_frame("10.0.1.1", DST, ip_len, ffs, options=bytes([7, 11, 4]) + bytes(9)),
    "ipv4-vlan": lambda ip_len, ffs: ipv4_frame("10.0.1.1", DST, ip_len, ffs, vlan=42),
    "ipv6": lambda ip_len, ffs: ipv6_frame("fc00::1", "fd00::9", ip_len, ffs),
    "ipv6-vlan": lambda ip_len, ffs: ipv6_frame("fc00::1", "fd00::9", ip_len, ffs, vlan=7),
}


def test_no_shim_in_front_of_an_ipv6_hop_by_hop_header():
    """spec §2, RFC 8200 §4.1: Hop-by-Hop Options must follow the IPv6 header, so an insert port
    forwards such a packet without a shim; the same packet without the option gets one."""
    r = rig(insert=1)
    hbh = ipv6_frame("fc00::1", "fd00::9", 200, proto=constants.IP_PROTO_HOPOPT)
    assert r.send(hbh).frame == hbh
    udp = ipv6_frame("fc00::1", "fd00::9", 200)
    assert len(r.send(udp).frame) == len(udp) + constants.SHIM_LEN


@pytest.mark.parametrize("case", INSERT_CASES)
def test_insert_and_strip_byte_exact(case):
    """Spec §2: the inserted shim sits right after the IP header (options included), carries
    version 1, flag D, the old protocol, rf_out, rri = ∞ and rri_echo = 0; lengths grow by 8 and the
    IPv4 checksum is recomputed. Stripping gives the original bytes back."""
    make = INSERT_CASES[case]
    r = rig(insert=1)
    r.set_pair(
        lm_for(constants.CODE_ONE, encode(0.75), 500, "ipv6" in case, "vlan" in case)
    )  # the default label normalizes to 0.75
    plain = make(500, None)
    out = r.send(plain).frame
    expected = make(508, shim(encode(0.75), constants.FLAG_DEFAULTED, 17, constants.CODE_MAX, 0))
    assert out == expected
    if case.startswith("ipv4"):  # scapy recomputes the checksum independently
        pkt = Ether(out)
        got = pkt[IP].chksum
        del pkt[IP].chksum
        assert Ether(bytes(pkt))[IP].chksum == got and pkt[IP].len == 508
    r.driver.write([Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(OUT)}, "strip_shim"))])
    assert r.send(out, port=2).frame == plain  # port 2 -> OUT is not a pair: only the strip acts
    acc = r.driver.read_counters(p4names.ACCEPTED.name, [OUT])[OUT]
    assert (acc.packets, acc.bytes) == (2, 2 * (len(expected) + constants.FCS_LEN))  # as egress sees them, FCS too


def test_checksum_untouched_unless_the_header_changes():
    """A rewritten label changes the shim only: the IPv4 header, even with a wrong checksum, keeps
    its bytes (the deparser recomputes only when insert/strip changed the header)."""
    r = rig()
    r.set_pair(lm_for(encode(0.5), encode(0.25)))
    f = bytearray(labelled(encode(0.5)))
    f[24:26] = b"\xbe\xef"  # a wrong checksum passes through as it came
    out = r.send(bytes(f)).frame
    assert out[:34] == bytes(f[:34])
    assert out[36:38] == encode(0.25).to_bytes(2, "big")  # while the label was rewritten


# --- normalization, γ, rewrite (Algorithm 3) -------------------------------------------------


def test_rf_out_is_min_of_normalized_and_tau_code_exact():
    r = rig(seed=3)
    rf = encode(2.0)
    r.set_pair(lm_for(rf, encode(0.5)))
    r.set_egress(encode(4 / 3))
    res = r.send(labelled(rf))
    assert shim_of(res.frame)["rf"] == encode(0.5)  # unconstrained: rf' < tau stays
    r.set_pair(lm_for(rf, encode(2.0)))
    outs = [r.send(labelled(rf)) for _ in range(20)]
    kept = [o for o in outs if o.egress_port is not None]
    assert kept and all(shim_of(o.frame)["rf"] == encode(4 / 3) for o in kept)  # constrained: rf' -> tau
    assert all(shim_of(o.frame)["echo"] == 0x1234 for o in kept)  # rri_echo never changes


def test_gamma_one_never_drops():
    r = rig()
    rf = encode(2.0)
    r.set_pair(lm_for(rf, encode(2.0)))
    r.set_egress(constants.CODE_MAX, congested=0)  # uncongested: tau = infinity
    assert all(r.send(labelled(rf)).egress_port == OUT for _ in range(2000))
    r.set_egress(encode(2.0))  # rf' == tau: d = 0, the bypass entry
    assert all(r.send(labelled(rf)).egress_port == OUT for _ in range(2000))


@pytest.mark.parametrize("gamma", [1 / 3, 0.5, 0.05])
def test_drop_frequency_binomial(gamma):
    n = 6000
    r = rig(seed=11)
    rf = encode(2.0)
    target = encode(1.0) + round(128 * math.log2(1 / gamma))  # rf_norm = τ / γ with τ = 1
    r.set_pair(lm_for(rf, target))
    r.set_egress(encode(1.0))
    p = tables.gamma_of_code_distance(target - encode(1.0))  # the table's exact probability
    assert p == pytest.approx(gamma, rel=0.006)
    accepted = sum(r.send(labelled(rf)).egress_port is not None for _ in range(n))
    sigma = math.sqrt(n * p * (1 - p))
    assert abs(accepted - n * p) <= 4 * sigma


def test_counters_exact():
    r = rig(seed=5)
    rf = encode(2.0)
    r.set_pair(lm_for(rf, encode(2.0)))
    r.set_egress(encode(1.0))  # gamma = 1/2
    f = labelled(rf)
    res = [r.send(f) for _ in range(400)]
    kept = sum(x.egress_port is not None for x in res)
    rb = r.driver.read_counters(p4names.PAIR_BYTES.name, [5])[5]
    dr = r.driver.read_counters(p4names.PAIR_DROPS.name, [5])[5]
    acc = r.driver.read_counters(p4names.ACCEPTED.name, [OUT])[OUT]
    wire = len(f) + constants.FCS_LEN  # every counter counts the frame with its FCS, as TNA's do
    assert (rb.packets, rb.bytes) == (400, 400 * wire)
    assert (dr.packets, dr.bytes) == (400 - kept, (400 - kept) * wire)
    assert (acc.packets, acc.bytes) == (kept, kept * wire)
    assert events(r) == {constants.EVENT_FFS_DROP: 400 - kept}
    f_est = r.driver.read_registers(p4names.F_EST.name, [5])[5]
    assert f_est == single_packet_f(1000, rf)


@pytest.mark.parametrize("engine", ["python", "c"])
def test_the_shims_an_insert_port_adds_are_counted(engine):
    """spec §4: the port sends a frame the ingress inserts a shim into 8 bytes longer than it
    arrived. 400 packets without a shim and 50 with one on an insert port, γ = 1/2: offered_shims
    (R*_j) counts the 400, admitted_shims (A_j) those γ let through, and A_j's bytes plus 8 per
    admitted shim are the bytes that left OUT, FCS included."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(seed=5, insert=1, pipeline=FastPipeline if engine == "c" else Pipeline)
    r.set_pair(lm_for(encode(1.0), encode(2.0)))
    r.set_egress(encode(1.0))  # gamma = 1/2 for the packets without a shim (label 1.0)
    plain, shimmed = ipv4_frame("10.0.1.1", DST, 500), labelled(encode(1.0))
    res = [r.send(plain) for _ in range(400)]
    kept = sum(x.egress_port is not None for x in res)
    res += [r.send(shimmed) for _ in range(50)]
    sent = sum(len(x.frame) + constants.FCS_LEN for x in res if x.egress_port is not None)
    read = r.driver.read_counters
    offered, admitted = read(p4names.OFFERED_SHIMS.name, [OUT])[OUT], read(p4names.ADMITTED_SHIMS.name, [OUT])[OUT]
    assert 0 < kept < 400
    assert (offered.packets, admitted.packets) == (400, kept)
    assert (offered.bytes, admitted.bytes) == (0, 0)  # PACKETS counters
    a = read(p4names.ADMITTED.name, [OUT])[OUT]
    assert a.bytes + constants.SHIM_LEN * admitted.packets == sent


@pytest.mark.parametrize("engine", ["python", "c"])
def test_the_shims_a_strip_port_takes_off_are_counted(engine):
    """spec §4: a strip port sends a frame that arrived with a shim 8 bytes shorter. On a strip
    port, γ = 1/2: `stripped` counts every frame that left OUT without its shim, and A_j's bytes
    less 8 per stripped frame are the bytes that left OUT, FCS included. Also counted: a frame the
    frame check drops (stripped before it, as the P4 program does). Not counted: a frame without a
    shim, and one of 14 + 48 + 4 = 66 bytes, padded back to 64 once stripped (2 bytes less)."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(seed=5, pipeline=FastPipeline if engine == "c" else Pipeline)
    r.driver.write([Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(OUT)}, "strip_shim"))])
    r.set_pair(lm_for(encode(2.0), encode(2.0)))
    r.set_egress(encode(1.0))  # gamma = 1/2
    res = [r.send(labelled(encode(2.0), ip_len=500)) for _ in range(400)]
    kept = sum(x.egress_port is not None for x in res)
    sent = sum(len(x.frame) + constants.FCS_LEN for x in res if x.egress_port is not None)
    read = r.driver.read_counters
    stripped, a = read(p4names.STRIPPED.name, [OUT])[OUT], read(p4names.ADMITTED.name, [OUT])[OUT]
    assert 0 < kept < 400
    assert {len(x.frame) for x in res if x.egress_port is not None} == {14 + 500 - constants.SHIM_LEN}
    assert (stripped.packets, stripped.bytes) == (kept, 0)  # a PACKETS counter
    assert a.bytes - constants.SHIM_LEN * stripped.packets == sent
    r.set_egress(encode(4.0))  # gamma = 1
    assert r.send(ipv4_frame("10.0.1.1", DST, 500)).egress_port == OUT
    assert r.send(labelled(encode(2.0), ip_len=48)).egress_port == OUT
    assert read(p4names.STRIPPED.name, [OUT])[OUT].packets == kept
    lying = lie_ip_len(labelled(encode(2.0), ip_len=500), 400)
    assert r.send(lying).drop_reason == "malformed"
    assert read(p4names.STRIPPED.name, [OUT])[OUT].packets == kept + 1


# --- RI (Algorithm 4 with the pre-γ normalized label) ----------------------------------------


@pytest.mark.parametrize("rf_norm, expect", [(0.5, 8 / 3), (4.0, 1 / 3), (2.0, 2 / 3)])
def test_rri_congested_table_ii(rf_norm, expect):
    """Table II at tau = 4/3: RRI = tau / rf' = 8/3, 1/3, 2/3 (spec §11.2.1)."""
    r = rig(seed=1)
    rf = encode(2.0)
    r.set_pair(lm_for(rf, encode(rf_norm)))
    r.set_egress(encode(4 / 3))
    for _ in range(50):
        res = r.send(labelled(rf))
        if res.egress_port is not None:
            break
    got = shim_of(res.frame)["rri"]
    assert got == min(encode(4 / 3) - encode(rf_norm) + constants.CODE_BIAS, 0xFFFF)  # code-exact
    assert decode(got) == pytest.approx(expect, rel=0.006)


@pytest.mark.parametrize("rf_norm, expect", [(0.25, 4.0), (1.0, 2.0)])
def test_rri_uncongested(rf_norm, expect):
    """C/R* = 2: RRI = max(C/R*, 1/rf') (Algorithm 4 line 7)."""
    r = rig()
    rf = encode(2.0)
    r.set_pair(lm_for(rf, encode(rf_norm)))
    r.set_egress(constants.CODE_MAX, congested=0, lcr=encode(2.0))
    got = shim_of(r.send(labelled(rf)).frame)["rri"]
    assert got == encode(expect)


def test_rri_upstream_chain():
    """RRI < 1 means upstream congestion: each constraining node multiplies by its γ (vector 13)."""
    r = rig(seed=2)
    rf = encode(2.0)
    r.set_pair(lm_for(rf, encode(2.0)))
    r.set_egress(encode(1.0))  # gamma = 1/2, d = 128
    rri = encode(0.5)
    for _hop in range(2):
        for _ in range(50):
            res = r.send(labelled(rf, rri=rri))
            if res.egress_port is not None:
                break
        rri = shim_of(res.frame)["rri"]
    assert rri == encode(0.125)  # 0.5 * 1/2 * 1/2, exact in codes


def test_no_ri_without_request_flag():
    r = rig()
    rf = encode(2.0)
    r.set_pair(lm_for(rf, encode(0.5)))
    r.set_egress(encode(4 / 3))
    res = r.send(labelled(rf, flags=0, rri=0x1111))
    assert shim_of(res.frame)["rri"] == 0x1111


def test_scapy_sees_a_valid_ipv4_packet():
    r = rig()
    res = r.send(labelled(encode(0.5)))
    pkt = Ether(res.frame)
    assert pkt[IP].proto == constants.IP_PROTO_FFS and pkt[IP].dst == DST


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("claim", [65535, 65528, 65527, 20])
@pytest.mark.parametrize("version", [4, 6])
def test_a_length_wrapped_by_an_inserted_shim_is_still_malformed(engine, claim, version):
    """A 1264-byte frame that lies about its IP length on an insert port: 8 more bytes would wrap a
    claim of 65528..65535 to 0..7, so no shim goes in (shim_room's SHIM_ROOM_MAX, spec §2, counted
    as not inserted); a smaller lie gets its shim. Either way the frame check sees the lie and
    drops it (spec §7.3): it never passes as an unreadable frame, counted in A_j."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(trust=0, insert=1, pipeline=FastPipeline if engine == "c" else Pipeline)
    if version == 4:
        f = bytearray(ipv4_frame("10.0.1.1", DST, 1250))
        f[16:18] = claim.to_bytes(2, "big")
        f[24:26] = ipv4_checksum(f[14:34]).to_bytes(2, "big")
    else:
        f = bytearray(ipv6_frame("fc00::1", "fd00::9", 1250 - 40))
        f[18:20] = claim.to_bytes(2, "big")
    res = r.send(bytes(f))
    assert res.egress_port is None and res.drop_reason == "malformed"
    bad = r.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT]
    # counted as it left the ingress, FCS included; a claim below 64 bytes is a runt: no shim for it
    runt = claim + 14 + (40 if version == 6 else 0) + constants.FCS_LEN < 64
    grown = 0 if runt or claim >= constants.SHIM_ROOM_MAX else constants.SHIM_LEN
    assert bad.packets == 1 and bad.bytes == len(f) + grown + constants.FCS_LEN
    assert events(r) == ({constants.EVENT_NOT_INSERTED: 1} if claim >= constants.SHIM_ROOM_MAX else {})
    assert r.driver.read_counters(p4names.ACCEPTED.name, [OUT])[OUT].packets == 0


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("version", [4, 6])
def test_a_runt_gets_no_shim_and_leaves_padded(engine, version):
    """spec §6: a frame below the Ethernet minimum arrives padded to 60 bytes (the MAC's view,
    spec §8). An insert port forwards it without a shim: the padding would stay behind the IP
    packet, and the next FFS hop's frame check could not tell it from a lie. It leaves as the MAC
    sent it, padded; a frame one byte above the minimum gets its shim."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(insert=1, pipeline=FastPipeline if engine == "c" else Pipeline)
    small = ipv4_frame("10.0.1.1", DST, 28) if version == 4 else ipv6_frame("fd00:1::1", "fd00:2::7", 5)
    res = r.send(small)
    assert res.egress_port == OUT and res.frame == small + bytes(constants.MIN_FRAME - len(small))
    fits = ipv4_frame("10.0.1.1", DST, 46) if version == 4 else ipv6_frame("fd00:1::1", "fd00:2::7", 6)
    assert len(fits) == constants.MIN_FRAME
    res = r.send(fits)
    assert res.egress_port == OUT and len(res.frame) == constants.MIN_FRAME + constants.SHIM_LEN
    # the next FFS hop sees the grown frame whole: no padding behind it, no lie
    assert r.send(res.frame, port=2).egress_port == OUT and malformed(r) == 0


def bridge_tags(frame: bytes, vid: int) -> bytes:
    """What an 802.1Q bridge does to an untagged frame on a trunk: 4 bytes of tag after the source
    MAC, nothing else; a frame already padded to the 60-byte minimum stays padded (64 bytes)."""
    return frame[:12] + struct.pack("!HH", 0x8100, vid) + frame[12:]


def wire_padded(frame: bytes) -> bytes:
    """The frame as a MAC sends it: padded with zeros to the 60-byte Ethernet minimum (FCS aside)."""
    return frame + bytes(max(0, constants.MIN_FRAME - len(frame)))


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("ip_len, shimmed", [(34, True), (32, True), (28, False), (45, False)])
def test_a_tagged_runt_padded_before_its_tag_passes(engine, ip_len, shimmed):
    """Ethernet pads a frame below 60 bytes (FCS aside) to 60; an 802.1Q bridge that tags it on a
    trunk makes it 64 (68 with FCS, as pkt_length counts it), with the padding still inside. Such
    a frame is honest (a bare TCP ACK with a shim crossing a VLAN trunk, IP length 32 or 34): it
    is forwarded, padding and all, and nothing counts it as malformed (spec §7.3)."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(pipeline=FastPipeline if engine == "c" else Pipeline)
    sh = shim(encode(1.0), 0, 6) if shimmed else None
    untagged = ipv4_frame("10.0.1.1", DST, ip_len, sh, proto=6)[: 14 + ip_len]  # the datagram, unpadded
    assert len(untagged) < constants.MIN_FRAME  # a runt: the MAC pads it
    frame = bridge_tags(wire_padded(untagged), 12)
    assert len(frame) == constants.MIN_FRAME + constants.VLAN_TAG_LEN
    res = r.send(frame)
    assert res.egress_port == OUT and res.drop_reason is None and malformed(r) == 0
    assert len(res.frame) == len(frame) and res.frame[12:16] == frame[12:16]  # the tag and the padding stay


@pytest.mark.parametrize("engine", ["python", "c"])
def test_no_lie_hides_behind_the_tagged_minimum(engine):
    """The 68-byte allowance is for a tagged frame whose untagged claim was below 60 bytes only:
    an untagged 64-byte frame (68 with FCS) was never padded, and neither was a tagged frame whose
    untagged claim reaches 60; bytes beyond their claim are a lie (spec §7.3)."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(pipeline=FastPipeline if engine == "c" else Pipeline)
    sh = shim(encode(1.0), 0, 6)

    def frame(ip_len: int, on_wire: int, vlan: int | None) -> bytes:
        l2 = 14 if vlan is None else 18
        f = ipv4_frame("10.0.1.1", DST, ip_len, sh, proto=6, vlan=vlan)[: l2 + ip_len]
        return f + bytes(on_wire - len(f))  # trailing bytes the IP length does not claim

    lies = {
        "untagged, 64 bytes claiming 48": frame(34, 64, None),
        "untagged, 64 bytes claiming 63": frame(49, 64, None),
        # tagged claim 64 (untagged 60): nothing to pad, 4 bytes too many
        "tagged, 68 bytes claiming 64": frame(46, 68, 12),
        # tagged, claim 60 (untagged 56, padded to 60, tagged: 64), 4 more bytes than that
        "tagged, 68 bytes claiming 60": frame(42, 68, 12),
    }
    for what, f in lies.items():
        bad = malformed(r)
        res = r.send(f)
        assert res.egress_port is None and res.drop_reason == "malformed" and malformed(r) == bad + 1, what
    honest = {"tagged, 64 bytes claiming 60": frame(42, 64, 12), "tagged, 64 bytes claiming 64": frame(46, 64, 12)}
    for what, f in honest.items():
        res = r.send(f)
        assert res.egress_port == OUT and len(res.frame) == len(f) and malformed(r) == 4, what


@pytest.mark.parametrize("engine", ["python", "c"])
def test_a_tagged_runt_gets_no_shim_on_an_insert_port(engine):
    """A datagram of 42..45 bytes (an untagged claim of 56..59) is padded to 60 and, tagged by a
    bridge, arrives as 64 bytes with 1..4 bytes of padding behind the IP packet. A shim in front of
    that padding would leave it behind the grown packet, and the next FFS hop would drop the frame
    as a lie: an insert port forwards it as it came, like an untagged runt (spec §6). A tagged claim
    of 64 bytes (46-byte datagram) carries no padding and gets its shim."""
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(insert=1, pipeline=FastPipeline if engine == "c" else Pipeline)
    for ip_len in (42, 45):
        frame = bridge_tags(wire_padded(ipv4_frame("10.0.1.1", DST, ip_len)[: 14 + ip_len]), 12)
        res = r.send(frame)
        assert res.egress_port == OUT and res.frame == frame, ip_len
        assert r.send(res.frame, port=2).egress_port == OUT and malformed(r) == 0, ip_len
    fits = ipv4_frame("10.0.1.1", DST, 46, vlan=12)
    assert len(fits) == constants.MIN_FRAME + constants.VLAN_TAG_LEN
    res = r.send(fits)
    assert res.egress_port == OUT and len(res.frame) == len(fits) + constants.SHIM_LEN
    assert r.send(res.frame, port=2).egress_port == OUT and malformed(r) == 0


# --- IPv4 fragments (spec §2): a fragment is payload to FFS --------------------------------------

# payload bytes that read as a valid shim (version 1, flag R, rf = 2.0, rri = ∞): what 1 in 32
# random first bytes of a non-first fragment look like to a parser that ignores the offset
SHIM_LOOKALIKE = shim(encode(2.0), constants.FLAG_RI, 17, constants.CODE_MAX, 0x1234)
MF = constants.IPV4_MF


def fragment(frag: int, ip_len: int = 500, proto: int = constants.IP_PROTO_FFS, lookalike: bool = True) -> bytes:
    """An IPv4 fragment (`frag`: the flags/offset word) of a protocol-`proto` datagram whose data
    begins with SHIM_LOOKALIKE."""
    f = bytearray(ipv4_frame("10.0.1.1", DST, ip_len, None, proto=proto, frag=frag))
    data = SHIM_LOOKALIKE if lookalike else b""
    f[34 : 34 + min(len(data), ip_len - 20)] = data[: ip_len - 20]
    return bytes(f)


def engine_rig(engine: str, **kw):
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    return rig(pipeline=FastPipeline if engine == "c" else Pipeline, **kw)


def set_strip(r) -> None:
    r.driver.write([Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(OUT)}, "strip_shim"))])


def pair_r(r) -> int:
    return r.driver.read_counters(p4names.PAIR_BYTES.name, [5])[5].packets


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("mode", ["trust", "reset", "insert", "strip"])
@pytest.mark.parametrize("frag", [185, MF | 185, MF | 0x1FFF], ids=["last", "middle", "largest-offset"])
def test_a_non_first_fragment_is_never_a_shim(engine, mode, frag):
    """spec §2: a non-first fragment of a protocol-253 datagram holds payload bytes. Whatever they
    look like, it leaves byte for byte (no label rewritten, no flag D, nothing stripped), counted
    on its pair (R) with the default label, like any packet without a shim; an insert port gives
    it no shim and counts it (EVENT_NOT_INSERTED)."""
    r = engine_rig(engine, trust=int(mode != "reset"), insert=int(mode == "insert"))
    if mode == "strip":
        set_strip(r)
    f = fragment(frag)
    res = r.send(f)
    assert (res.egress_port, res.frame) == (OUT, f)
    assert pair_r(r) == 1
    assert events(r) == ({constants.EVENT_NOT_INSERTED: 1} if mode == "insert" else {})
    # weighed as an unlabelled packet of its length: the same F as a plain one
    f_frag = r.driver.read_registers(p4names.F_EST.name, [5])[5]
    r.send(ipv4_frame("10.0.1.1", DST, 500))
    assert f_frag == r.driver.read_registers(p4names.F_EST.name, [5])[5]


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("data", [0, 1, 4, 7])
def test_a_last_fragment_shorter_than_a_shim_is_forwarded(engine, data):
    """A last fragment with fewer than 8 data bytes cannot hold a shim and is not one: dropping it
    as a truncated shim would lose the whole datagram."""
    r = engine_rig(engine)
    f = fragment(370, ip_len=20 + data)
    res = r.send(f)
    assert (res.egress_port, res.drop_reason) == (OUT, None) and res.frame == f
    assert events(r) == {}


@pytest.mark.parametrize("engine", ["python", "c"])
def test_a_first_fragment_keeps_its_shim_and_protocol(engine):
    """spec §2: the first fragment (MF, offset 0) carries the datagram's real shim, whose label is
    rewritten as any packet's; but a strip port leaves it (the later fragments keep protocol 253,
    and IP reassembles fragments of one protocol only), and an insert port gives a first fragment
    without a shim none (counted)."""
    r = engine_rig(engine)
    f = fragment(MF)
    out = r.send(f).frame
    assert out[:34] == f[:34] and out[42:] == f[42:]
    assert shim_of(out)["rf"] != encode(2.0)  # rewritten: rf' = rf · F / M with this rig's M
    set_strip(r)
    res = r.send(f)
    assert len(res.frame) == len(f) and res.frame[14 + 9] == constants.IP_PROTO_FFS
    # the same datagram unfragmented: the strip port removes its shim
    whole = fragment(0)
    assert len(r.send(whole).frame) == len(whole) - constants.SHIM_LEN
    r2 = engine_rig(engine, insert=1)
    first = fragment(MF, proto=17, lookalike=False)
    assert r2.send(first).frame == first
    assert events(r2) == {constants.EVENT_NOT_INSERTED: 1}
    # DF alone is not a fragment: inserted
    df = fragment(0x4000, proto=17, lookalike=False)
    assert len(r2.send(df).frame) == len(df) + constants.SHIM_LEN


# --- the egress's MTU and an inserted shim (spec §2) ----------------------------------------------


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("version", [4, 6])
def test_no_shim_inserted_beyond_the_egress_mtu(engine, version):
    """spec §2: an insert port adds a shim only where the packet, 8 bytes longer, still fits the
    egress's IP MTU (shim_room, pushed per port from the topology). With an MTU of 508, an IP
    packet of 500 bytes gets its shim and leaves at 508; one of 501 leaves as it came, counted as
    not inserted (EVENT_NOT_INSERTED), whatever DF says."""
    r = engine_rig(engine, insert=1)
    r.driver.write([Update("insert", e) for e in tables.shim_room_entries(OUT, 508)])

    def frame(ip_len: int) -> bytes:
        if version == 4:
            return ipv4_frame("10.0.1.1", DST, ip_len, frag=0x4000)  # DF set: nothing else may fragment it
        return ipv6_frame("fc00::1", "fd00::9", ip_len - 40)

    fits, too_big = frame(500), frame(501)
    res = r.send(fits)
    assert res.egress_port == OUT and len(res.frame) == len(fits) + constants.SHIM_LEN and events(r) == {}
    res = r.send(too_big)
    assert (res.egress_port, res.frame) == (OUT, too_big)
    assert events(r) == {constants.EVENT_NOT_INSERTED: 1}
    assert pair_r(r) == 2  # both counted on their pair, as they arrived


@pytest.mark.parametrize(
    "table, port_key, v4, v6",
    [
        # room for a shim under the egress's IP MTU (spec §2): total_len <= mtu - 8, payload <= mtu - 48
        (p4names.SHIM_ROOM, "egress_port", -7, -47),
        # the longest claim the ingress's frame limit holds (spec §4), + 1: total_len mtu + 4, payload mtu - 36
        (p4names.CLAIM_LIMIT, "ingress_port", 5, -35),
    ],
)
def test_the_agent_pushes_each_ports_mtu(table, port_key, v4, v6):
    """The agent's node state holds shim_room and claim_limit entries for every interface, their
    `thr` from its `mtu`."""

    from ffs.core.program import port_updates
    from ffs.core.topology import load

    node = load(ROOT / "topologies" / "differential.yaml").node("dut")
    got = {
        (u.entry.key[port_key].value, u.entry.key["ipv6"].value): u.entry.params["thr"]
        for u in port_updates(node)
        if u.entry.table == table.name
    }
    want = {}
    for i in node.interfaces.values():
        want[(i.port, 0)], want[(i.port, 1)] = i.mtu + v4, i.mtu + v6
    assert got == want


# --- a claim beyond what the ingress port's MAC admits (spec §4) ---------------------------------


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("version", [4, 6])
@pytest.mark.parametrize("mtu", [1500, 9000])
def test_a_claim_beyond_the_ingress_ports_frame_limit_weighs_nothing(engine, version, mtu):
    """spec §4: a port of IP MTU `mtu` receives frames of at most 14 + 4 + mtu + 4 bytes (Ethernet
    header, one tag, FCS), so no frame that arrived through it holds an IPv4 total length above
    that limit less its shortest header and FCS, mtu + 4 (an IPv6 payload length above mtu - 36).
    A 200-byte frame claiming one byte more is dropped before any pair's state (no R, no F) and
    counted as EVENT_CLAIM_OVERSIZE; one claiming exactly the limit weighs on its pair and is left
    to the frame check (malformed). A port without claim_limit entries limits nothing."""
    r = engine_rig(engine)
    limit = 14 + 4 + mtu + 4
    longest = limit - 14 - 4 - (40 if version == 6 else 0)

    def lying(claim: int) -> bytes:
        if version == 4:
            return lie_ip_len(ipv4_frame("10.0.1.1", DST, 200), claim)
        f = bytearray(ipv6_frame("fc00::1", "fd00::9", 200))
        f[18:20] = claim.to_bytes(2, "big")
        return bytes(f)

    r.send(lying(longest + 1))  # no entry yet: weighed and judged by the frame check
    assert (pair_r(r), malformed(r), events(r)) == (1, 1, {})
    r.driver.write([Update("insert", e) for e in tables.claim_limit_entries(IN, mtu)])
    f_before = r.driver.read_registers(p4names.F_EST.name, [5])[5]
    res = r.send(lying(longest + 1))
    assert res.egress_port is None and events(r) == {constants.EVENT_CLAIM_OVERSIZE: 1}
    assert pair_r(r) == 1 and r.driver.read_registers(p4names.F_EST.name, [5])[5] == f_before
    r.send(lying(longest))
    assert (pair_r(r), malformed(r), events(r)) == (2, 2, {constants.EVENT_CLAIM_OVERSIZE: 1})
    if version == 4:
        r.send(lying(0xFFFF))
        assert events(r) == {constants.EVENT_CLAIM_OVERSIZE: 2} and pair_r(r) == 2


# --- what one hop emits, the next admits (spec §3.1) ----------------------------------------------


@pytest.mark.parametrize("engine", ["python", "c"])
def test_no_label_leaves_a_node_above_what_the_next_admits(engine):
    """spec §3.1: a node writes rf_out = min(rf', ltau) with ltau <= code(2^16) even while the
    egress is uncongested, so a stream 2^18.6 times over its share (rf = 1, F = the whole 1520-byte
    line-rate weight at scale-down 0, M_F = 1) leaves labelled 2^16, the largest label the next hop
    admits; one below that leaves with its rf' (Algorithm 3 line 3 with γ = 1)."""
    r = engine_rig(engine)
    r.driver.set_lpf_spec(p4names.F_LPF.name, [5], LpfSpec("RATE", 1e6, 1e6, 0))
    r.set_pair(0)
    out = shim_of(r.send(labelled(constants.CODE_ONE, ip_len=1500)).frame)
    assert out["rf"] == constants.LTAU_MAX == constants.RF_CODE_MAX
    r.set_pair(lm_for(constants.CODE_ONE, encode(2.0**12), 1000))
    r.driver.set_lpf_spec(p4names.F_LPF.name, [5], LpfSpec("RATE", 1e6, 1e6, SCALE))
    assert shim_of(r.send(labelled(constants.CODE_ONE)).frame)["rf"] == encode(2.0**12)


@pytest.mark.parametrize("engine", ["python", "c"])
def test_a_stream_far_over_its_share_weighs_what_its_label_says_at_the_next_hop(engine):
    """Two hops (spec §3.1): hop A, uncongested, lets a stream s through 2^12 times over its share
    and labels it rf' = 2^12. At hop B, s shares a pair with a stream t of label 1: B's F must be
    the paper's sum of len / rf over both (Eq. 1), so t's normalized label is 1 · F / M with s
    counted at 2^12. A next hop that clamped s to 2^8 counted s 16 times too heavy: with 64 packets
    of s beside one of t, F and t's label came out 23 % high."""
    a, b = engine_rig(engine), engine_rig(engine)
    a.set_pair(lm_for(constants.CODE_ONE, encode(2.0**12), 1000))
    s = a.send(labelled(constants.CODE_ONE, flags=0)).frame
    assert shim_of(s)["rf"] == encode(2.0**12)
    b.driver.set_lpf_spec(p4names.F_LPF.name, [5], LpfSpec("RATE", 1e9, 1e9, SCALE))  # 1 s: no decay at dt = 0
    lm = 128 * 11  # M_F = 2^11 in LPF units
    b.set_pair(lm)
    for _ in range(64):
        b.send(s, gap_ns=0)
    t = b.send(labelled(constants.CODE_ONE, flags=0), gap_ns=0).frame
    wire = tables.wire_len(1000 + 14 + constants.FCS_LEN)
    f_paper = (64 * wire * 2**8 / 2**12 + wire * 2**8) / 2**SCALE  # Eq. 1: the sum of len / rf, LPF units
    want = 1.0 * f_paper / 2 ** (lm / 128)  # t's rf' = rf · F / M
    got = decode(shim_of(t)["rf"])
    assert abs(got / want - 1) <= 0.0093 + 0.0066, (got, want)  # spec §10: the label's and the weight's budgets
