# SPDX-License-Identifier: Apache-2.0
"""One lying sender among N honest ones behind one neighbour (docs/security.md, "One liar behind a
neighbour"): what the honest senders get, with and without the liar, in virtual time at line rate
through the software switch in Tofino's order (γ, the traffic manager's queue at the egress's
speed, the egress's frame check), the agent every 5 ms.

    python bench/one_liar.py [--senders 1,4,9] [--claim 20] [--liar-len 1250] [--resetting]
                             [--lie-fraction F] [--duration 2.2] [--json]

p3 is a 100 Mb/s egress shared by p1 (the victim, 60 Mb/s, share 50) and p2 (share 50), behind which
N honest senders send 20 Mb/s each and one liar 20 (`--lie-fraction` λ: 20·N·λ/(1 − λ)); the
liar's frames of IPv4 length `--liar-len` (1250) claim an IPv4 length of 20 (`--claim`: 65535 for
a claim beyond p2's frame limit, which its ingress drops, spec §4; 100-byte frames claiming 1492,
heavy within the MTU). p2 trusts labels unless
`--resetting` (a port to hosts: the agent reads the pair's weight w = F/R, spec §9). The data
plane sees one pair (p2, p3) for all of them. Rates over the second half of `--duration` s of
virtual time: 1.1-2.2 s, after the agent's first telemetry (as tests/switch/test_attacks.py measures
them; its heavy-within-the-MTU case over 2.1-4.2 s). "lies": the liar's frames the switch counted
(malformed at the egress, or beyond the frame limit at the ingress).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent.parent / "controlplane")]


def main() -> int:
    from ffs.lab.attacks import M, replay_one_liar

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--senders", default="1,4,9", help="numbers of honest senders behind p2")
    ap.add_argument("--claim", type=int, default=20, help="the IPv4 length the liar's 1250-byte frames claim")
    ap.add_argument("--liar-len", type=int, default=1250, help="the IPv4 length of the liar's frames")
    ap.add_argument("--resetting", action="store_true", help="p2 resets labels (the agent reads w = F/R)")
    ap.add_argument(
        "--lie-fraction", type=float, help="λ, the liar's part of p2's line rate (default 1/(N + 1): 20 Mb/s)"
    )
    ap.add_argument("--duration", type=float, default=2.2, help="virtual seconds, measured over the second half")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    if a.lie_fraction is not None and not 0 < a.lie_fraction < 1:
        ap.error(f"--lie-fraction {a.lie_fraction}: a fraction strictly between 0 and 1")
    rate, share = 20 * M, 50 * M
    if not a.json:
        print(
            f"{'honest':>6} {'lie fraction':>12} {'honest alone':>12} {'honest, liar':>12} {'min(d, M(1-λ))':>14} "
            f"{'victim':>7} {'liar':>5} {'lies':>9}  (Mb/s)"
        )
    for n in (int(x) for x in a.senders.split(",")):
        kw = {"duration": a.duration, "resetting": a.resetting}
        _, alone, _ = replay_one_liar(n, liar=False, **kw)
        lam = 1 / (n + 1) if a.lie_fraction is None else a.lie_fraction
        liar_rate = rate * n * lam / (1 - lam)
        _, got, lies = replay_one_liar(n, claim=a.claim, liar_len=a.liar_len, liar_rate=liar_rate, **kw)
        row = {
            "honest_senders": n,
            "lie_fraction": lam,
            "honest_alone_bps": alone["honest"],
            "honest_bps": got["honest"],
            "proportionate_bps": min(n * rate, share * (1 - lam)),
            "victim_bps": got["victim"],
            "liar_bps": got["liar"],
            "lies_counted": lies,
        }
        print(
            json.dumps(row)
            if a.json
            else f"{n:6} {lam:12.2f} {alone['honest'] / M:12.2f} {got['honest'] / M:12.2f} "
            f"{row['proportionate_bps'] / M:14.2f} "
            f"{got['victim'] / M:7.2f} {got['liar'] / M:5.1f} {lies:9}",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
