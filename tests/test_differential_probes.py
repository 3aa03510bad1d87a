"""The differential run's probes (ffs.differential.generate) cover what the data plane must tell
apart, without an SDE: IPv4 fragments, QinQ, IPv6 extension headers beside Hop-by-Hop, payloads of
random bytes; and the software switch, on the differential's node, gives fragments the fate of
spec §2."""

import struct

from ffs import constants
from ffs.differential import generate
from ffs.switch.packet import parse

PREFIXES4, PREFIXES6 = ["10.0.1.0/24", "10.0.2.0/24"], ["fd00:1::/32", "fd00:2::/32"]


def test_probes_cover_fragments_qinq_extensions_and_payloads():
    probes = generate(7, 3000, (1, 2, 3), PREFIXES4, PREFIXES6)
    kinds = " ".join(p.kind for p in probes)
    for what in ("frag=0x2000", "frag=0x20b9", "frag=0x00b9", "frag=0x0172", "qinq", "ext=43", "ext=44", "ext=60",
                 "ext=0", "+shim", "random-payload", "lying-length", "shim=cut"):
        assert what in kinds, what
    # a non-first fragment whose data reads as a valid shim, and one shorter than a shim
    later = [p for p in probes if "frag=0x0172" in p.kind or "frag=0x00b9" in p.kind or "frag=0x20b9" in p.kind]
    assert any(p.frame[14 + 9] == constants.IP_PROTO_FFS and p.frame[34] >> 4 == 1 for p in later if p.frame[12:14] == b"\x08\x00")
    assert any(struct.unpack("!H", p.frame[16:18])[0] < 28 for p in later if p.frame[12:14] == b"\x08\x00")
    # no probe's fragment is read as a shim by the ingress parser unless it is a first fragment
    for p in later:
        if p.frame[12:14] == b"\x08\x00" and p.frame[14] >> 4 == 4:
            assert parse(p.frame + bytes(max(0, 64 - len(p.frame)))).shim == 0, p.kind
    clean = generate(7, 1000, (1, 2, 3), PREFIXES4, PREFIXES6, malformed=False)
    assert not any("lying-length" in p.kind or "shim=cut" in p.kind for p in clean)
