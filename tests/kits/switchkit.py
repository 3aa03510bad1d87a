# SPDX-License-Identifier: Apache-2.0
"""Shared set-up for the software-switch tests: a pipeline with one managed pair and known state."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from ffs.core import constants, p4names, tables
from ffs.core.entries import Exact, LpfSpec, Lpm, TableEntry, Update
from ffs.core.frames import ipv4_frame, shim
from ffs.switch.driver import LocalDriver
from ffs.switch.pipeline import Pipeline

IN, OUT, OTHER = 1, 3, 2
DST = "10.0.3.7"
SCALE = 4


@dataclass
class Rig:
    pipeline: Pipeline
    driver: LocalDriver
    t_ns: int = 0

    def send(self, frame: bytes, port: int = IN, gap_ns: int = 10**9):
        """One packet, `gap_ns` after the previous one (1 s by default: the LPF forgets)."""
        self.t_ns += gap_ns
        return self.pipeline.process(frame, port, self.t_ns)

    def set_pair(self, lm: int, pid: int = 5) -> None:
        key = {"ingress_port": Exact(IN), "egress_port": Exact(OUT)}
        self.driver.write(
            [Update("modify", TableEntry(p4names.PAIRS.name, key, "set_pair", tables.pair_params(pid, lm)))]
        )

    def set_egress(self, ltau: int, congested: int = 1, lcr: int = constants.CODE_MAX) -> None:
        """ltau as a code; an uncongested egress gets ltau_p = 0 (spec §5.3)."""
        ltau_p = ltau - constants.CODE_ONE if congested else 0
        self.driver.write(
            [
                Update(
                    "modify",
                    TableEntry(
                        p4names.EGRESS_PARAMS.name,
                        {"egress_port": Exact(OUT)},
                        "set_egress",
                        {"ltau": ltau, "ltau_p": ltau_p, "congested": congested, "lcr": lcr},
                    ),
                )
            ]
        )


@functools.lru_cache(maxsize=1)
def _generated() -> Pipeline:
    """A pipeline with the generated tables written once through the control interface (which
    checks each of the 15,000 entries against its table); every rig takes a copy of them."""
    p = Pipeline(1)
    LocalDriver(p).write(tables.static_updates())
    return p


def rig(seed: int = 1, trust: int = 1, insert: int = 0, pipeline: type[Pipeline] = Pipeline) -> Rig:
    p = pipeline(seed)
    for name in tables.GENERATED_TABLES:
        p.tables[name].take_entries(_generated().tables[name])
    d = LocalDriver(p)
    ups: list[Update] = []
    for port in (IN, OTHER, OUT):
        ups.append(
            Update(
                "insert",
                TableEntry(
                    p4names.PORT_METADATA.name,
                    {p4names.PORT_METADATA.key.name: Exact(port)},
                    None,
                    {"trust": trust, "insert": insert},
                ),
            )
        )
    ups.append(
        Update(
            "insert", TableEntry(p4names.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000300, 24)}, "route", {"port": OUT})
        )
    )
    ups.append(
        Update(
            "insert",
            TableEntry(p4names.IPV6_ROUTES.name, {"dst_addr": Lpm(0xFD000000 << 96, 8)}, "route", {"port": OUT}),
        )
    )
    ups.append(
        Update(
            "insert",
            TableEntry(
                p4names.PAIRS.name,
                {"ingress_port": Exact(IN), "egress_port": Exact(OUT)},
                "set_pair",
                tables.pair_params(5, 0),
            ),
        )
    )
    ups.append(
        Update(
            "insert",
            TableEntry(
                p4names.EGRESS_PARAMS.name,
                {"egress_port": Exact(OUT)},
                "set_egress",
                tables.egress_params(None, False, None),
            ),
        )
    )
    d.write(ups)
    d.set_lpf_spec(p4names.F_LPF.name, range(constants.NUM_PAIRS), LpfSpec("RATE", 1e6, 1e6, SCALE))
    return Rig(p, d)


def lf_of(f: int) -> int:
    """f_log's output for an LPF value, from the generated buckets."""
    if f == 0:
        return 0
    for value, mask, lo, hi in tables.log_buckets(32):
        if f & mask == value:
            return tables.bucket_log(lo, hi)
    raise AssertionError(f)


def single_packet_f(ip_len: int, rf_code: int, ipv6: bool = False, vlan: bool = False) -> int:
    """The F LPF output for a packet that arrives after the filter has forgotten everything
    (spec §8: y = x), with w from the generated len_log and weight tables (spec §5.1, §5.2): the
    packet weighs the frame its headers claim, FCS included (spec §4)."""
    return tables.packet_weight(ip_len, ipv6, vlan, rf_code) >> SCALE


def labelled(
    rf_code: int,
    ip_len: int = 1000,
    flags: int = constants.FLAG_RI,
    rri: int = constants.CODE_MAX,
    echo: int = 0x1234,
    **kw,
) -> bytes:
    return ipv4_frame("10.0.1.1", DST, ip_len, shim(rf_code, flags, 17, rri, echo), **kw)


def lm_for(rf_code: int, rf_norm_code: int, ip_len: int = 1000, ipv6: bool = False, vlan: bool = False) -> int:
    """The pair's lm that makes a packet's normalized label exactly `rf_norm_code` (spec §7.2:
    rf_norm = rf - lm + lf, with lf the f_log output of the single-packet LPF value)."""
    lm = rf_code + lf_of(single_packet_f(ip_len, rf_code, ipv6, vlan)) - rf_norm_code
    assert 0 <= lm <= constants.LM_MAX, "the agent never pushes lm beyond LM_MAX (M_F <= 2^32)"
    return lm
