# SPDX-License-Identifier: Apache-2.0
"""frame_basis (spec §7.3): the frame check on a chip whose egress pkt_length counts the FCS or not,
and is the arrival length or the ingress deparser's (`PktLength`, the software switch's model of
such hardware), with the basis the agent writes for it. Expectations from the spec's arithmetic:
pkt_length = arrival length (- 4 without the FCS) (+ 8 for an inserted shim where it is the
deparsed length); excess = pkt_length (+ 8 for an inserted shim under basis_arrival) - (L2 header +
IP length); the frame passes where excess is 0 (4 where pkt_length counts the FCS) or where it is
the Ethernet padding of a claim below 60 bytes (spec §4, §7.3)."""

from __future__ import annotations

import pytest

from ffs.core import constants, p4names, tables
from ffs.core.frames import ipv4_frame, lie_ip_len
from ffs.switch.tna import PKT_LENGTHS, PktLength
from switchkit import DST, OUT, labelled, rig

FCS, SHIM = constants.FCS_LEN, constants.SHIM_LEN
SIZES = (64, 100, 1500)  # on the wire, FCS included


def _rig(engine: str, model: PktLength):
    from ffs.switch.fast import FastPipeline, available
    from ffs.switch.pipeline import Pipeline

    if engine == "c" and not available():
        pytest.skip("the compiled engine is not built")
    r = rig(trust=0, insert=1, pipeline=FastPipeline if engine == "c" else Pipeline)
    r.pipeline.pkt_length_model = model
    return r


def _basis(model: PktLength) -> tuple[int, bool]:
    """What the agent's bring-up writes for the chip `model` describes."""
    return (constants.FCS_COUNTED if model.fcs else constants.FCS_NOT_COUNTED), model.deparsed


def _frames(size: int, vlan: bool) -> dict[str, bytes]:
    """A truthful frame of `size` wire bytes, plain and labelled, without its FCS; the IP length
    fills the frame (no padding)."""
    l2 = constants.ETH_HDR_LEN + (constants.VLAN_TAG_LEN if vlan else 0)
    ip_len = size - FCS - l2
    tag = 42 if vlan else None
    return {
        "plain": ipv4_frame("10.0.1.1", DST, ip_len, vlan=tag),
        "labelled": labelled(constants.CODE_ONE, ip_len=ip_len, vlan=tag),
    }


def _padding(frame_len: int, claim: int, vlan: bool) -> bool:
    """spec §7.3: bytes beyond a claim below 60 are Ethernet padding to 60 (64 where a bridge tagged
    the padded frame); `frame_len` and `claim` without the FCS."""
    untagged_claim = claim - (constants.VLAN_TAG_LEN if vlan else 0)
    return untagged_claim < constants.MIN_FRAME and frame_len == constants.MIN_FRAME + (
        constants.VLAN_TAG_LEN if vlan else 0
    )


def _malformed(r) -> int:
    return r.driver.read_counters(p4names.MALFORMED.name, [OUT])[OUT].packets


def _inserted(frame: bytes, vlan: bool) -> bool:
    """An insert port adds a shim to a plain frame whose claim is 64 bytes or more with FCS (68
    tagged): a runt gets none (spec §6)."""
    runt = len(frame) + FCS < constants.MIN_FRAME + FCS + (constants.VLAN_TAG_LEN if vlan else 0)
    return frame[14 + (4 if vlan else 0) + 9] != constants.IP_PROTO_FFS and not runt


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("name", list(PKT_LENGTHS))
def test_the_measured_basis_passes_the_truth_and_drops_a_4_byte_lie(engine, name):
    """For each chip and its basis: truthful frames (plain into an insert port, which gets a shim,
    and labelled; 64, 100, 1500 bytes; tagged and untagged) leave; the same frame 4 bytes longer
    than its claim, or claiming 4 bytes more than it has, is dropped as malformed, unless the spec
    calls the extra bytes padding."""
    model = PKT_LENGTHS[name]
    r = _rig(engine, model)
    r.driver.write([tables.frame_basis_update(*_basis(model))])
    for size in SIZES:
        for vlan in (False, True):
            l2 = constants.ETH_HDR_LEN + (constants.VLAN_TAG_LEN if vlan else 0)
            for kind, f in _frames(size, vlan).items():
                grown = SHIM if _inserted(f, vlan) else 0
                res = r.send(f)
                assert res.egress_port == OUT and len(res.frame) == len(f) + grown, (name, size, vlan, kind, res)
                claim = len(f)
                for lie, frame_len, claim_len in (
                    ("4 bytes longer", len(f) + 4, claim),
                    ("claims 4 more", len(f), claim + 4),
                ):
                    g = f + bytes(4) if frame_len > len(f) else lie_ip_len(f, claim_len - l2, l3=l2)
                    before = _malformed(r)
                    res = r.send(g)
                    legal = _padding(frame_len, claim_len, vlan)
                    assert (res.egress_port == OUT) == legal, (name, size, vlan, kind, lie, res)
                    assert _malformed(r) - before == (0 if legal else 1), (name, size, vlan, kind, lie)
                    if not legal:
                        assert res.drop_reason == "malformed"


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize(
    "name,fcs,deparsed",
    [
        ("deparsed+fcs", constants.FCS_COUNTED, False),  # the shim counted twice: excess 4 + 8
        ("arrival+fcs", constants.FCS_COUNTED, True),  # the shim not counted: excess 4 - 8
        ("deparsed", constants.FCS_NOT_COUNTED, False),  # excess 0 + 8
        ("arrival", constants.FCS_COUNTED, False),  # the FCS expected but not counted: excess 0
        ("arrival+fcs", constants.FCS_NOT_COUNTED, False),  # the FCS counted but not expected: 4
    ],
)
def test_a_basis_that_is_not_the_chip_drops_truthful_frames(engine, name, fcs, deparsed):
    """A basis that does not describe the chip: a truthful 1500-byte frame that got a shim on the
    insert port is dropped as malformed (the excesses above, none of them allowed under the basis's
    fcs); a labelled one (no shim inserted) fares as the fcs alone decides."""
    model = PKT_LENGTHS[name]
    r = _rig(engine, model)
    r.driver.write([tables.frame_basis_update(fcs, deparsed)])
    frames = _frames(1500, False)
    res = r.send(frames["plain"])
    assert res.drop_reason == "malformed" and _malformed(r) == 1
    fcs_right = (fcs == constants.FCS_COUNTED) == model.fcs
    res = r.send(frames["labelled"])
    assert (res.egress_port == OUT) == fcs_right and _malformed(r) == (1 if fcs_right else 2)


@pytest.mark.parametrize("engine", ["python", "c"])
@pytest.mark.parametrize("name", ["arrival+fcs", "arrival"])
def test_before_the_agent_measures_either_fcs_passes(engine, name):
    """frame_basis's default, basis_arrival(FCS_EITHER): today's check, on a chip whose pkt_length
    is the arrival length with or without the FCS. A truthful frame passes on both, and so does
    the 4-byte lie the measured basis closes: excess 0 or 4 both pass, so with the FCS counted a
    claim 4 bytes above the frame (excess 0), without it 4 bytes beyond the claim (excess 4); 1 or
    5 bytes beyond the claim do not."""
    r = _rig(engine, PKT_LENGTHS[name])
    f = _frames(1500, False)["plain"]
    assert r.send(f).egress_port == OUT
    hole = lie_ip_len(f, len(f) - constants.ETH_HDR_LEN + 4) if name == "arrival+fcs" else f + bytes(4)
    assert r.send(hole).egress_port == OUT
    assert r.send(f + bytes(1)).drop_reason == "malformed"  # excess 5 (FCS counted) or 1
    assert r.send(f + bytes(5)).drop_reason == "malformed"  # excess 9 or 5
    assert r.pipeline.egress_acct.frame_basis.default() == ("basis_arrival", {"fcs": constants.FCS_EITHER})


def test_frame_basis_update_refuses_an_unknown_fcs():
    with pytest.raises(ValueError, match="fcs must be"):
        tables.frame_basis_update(3, False)
    u = tables.frame_basis_update(constants.FCS_NOT_COUNTED, True)
    assert u.kind == "set_default" and u.entry.table == p4names.FRAME_BASIS.name and u.entry.key == {}
    assert u.entry.action.endswith("basis_deparsed") and u.entry.params == {"fcs": constants.FCS_NOT_COUNTED}
