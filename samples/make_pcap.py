# SPDX-License-Identifier: Apache-2.0
"""Writes samples/table2.pcap, the capture the docs replay (`ffs-switch replay topologies/table2.yaml
--pcap samples/table2.pcap --ingress n.i1 ...`): 48 IPv4 frames with the FFS shim toward 10.0.3.1,
16 from each of Table II's senders (10.0.0.1, 10.0.1.1, 10.0.2.1, labels 1/2, 4 and 2), taken 1 ms
apart, 500 bytes of IP each. The output is the same byte for byte on every run (tests check it).

    python samples/make_pcap.py [OUT]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "controlplane"))

from ffs.core import constants  # noqa: E402
from ffs.core.frames import ipv4_frame, shim  # noqa: E402
from ffs.core.labels import encode  # noqa: E402
from ffs.switch.trace import write_pcap  # noqa: E402

OUT = Path(__file__).resolve().parent / "table2.pcap"
SENDERS = (("10.0.0.1", 3 / 6), ("10.0.1.1", 4 / 1), ("10.0.2.1", 16 / 8))  # source, r/f (Table II)
FRAMES_EACH = 16
GAP_S = 1e-3
IP_LEN = 500
EPOCH_S = 1_700_000_000


def frames() -> list[tuple[float, bytes]]:
    out = []
    for k in range(FRAMES_EACH * len(SENDERS)):
        src, rf = SENDERS[k % len(SENDERS)]
        out.append((k * GAP_S, ipv4_frame(src, "10.0.3.1", IP_LEN, shim(encode(rf), constants.FLAG_RI))))
    return out


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else OUT
    write_pcap(out, frames(), epoch_s=EPOCH_S)
    print(f"{out}: {FRAMES_EACH * len(SENDERS)} frames")


if __name__ == "__main__":
    main(sys.argv[1:])
