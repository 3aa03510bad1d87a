# SPDX-License-Identifier: Apache-2.0
"""The twin of `p4src/include/header.p4`: `ffs_metadata_t`: the ingress metadata every control reads
and writes."""

from __future__ import annotations

from dataclasses import dataclass

from ffs.core import constants


@dataclass(slots=True)
class Meta:
    """Ingress metadata (the P4 `ffs_metadata_t`, zero-initialized like @pa_auto_init_metadata);
    widths in spec §7, values held in Python ints and kept inside their width by the actions."""

    # port metadata ($PORT_METADATA)
    trust: int = 0
    insert: int = 0
    # the parser's reading of the packet
    frag: int = 0
    ffs_state: int = constants.FFS_STATE_NONE
    ri_req: int = 0
    rri_ge_one: int = 0
    # the claim
    l3_len: int = 0
    runt: int = 0
    wlen: int = 0  # its line-rate bytes, for the queue guard
    claim_room: int = 0  # its distance below the ingress port's frame limit; 0: a lie (claim_limit)
    # a timer packet of the packet generator (spec §7.1, §7.7)
    timer: int = 0
    timer_id: int = 0
    # forwarding
    routed: int = 0
    egress_port: int = 0
    # the label
    rf_hdr: int = constants.CODE_ONE
    rf: int = 0
    rri_n: int = 0
    # the pair and its egress (PairMap)
    managed: int = 0
    pid: int = 0
    held: int = 0
    rf_over_m: int = 0
    ltau: int = 0
    ltau_p: int = 0
    congested: int = 0
    lcr: int = 0
    room: int = 0
    grows: int = 0  # fate inserts a shim into it if admitted (ShimCount)
    tau_over_k: int = 0
    # the estimator (RateEstimation)
    lw: int = 0
    llen: int = 0
    pkt_weight: int = 0
    f_rate: int = 0
    rf_norm: int = 0
    c_cong: int = 0
    # gamma (Normalize)
    rnd: int = 0
    admit_margin: int = 0
    # RI (RiUpdate)
    c_ri: int = 0
    # the queue guard (QueueGuard)
    qhi: int = 0
    drain: int = 0
    guard: int = 0
