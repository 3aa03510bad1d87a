# SPDX-License-Identifier: Apache-2.0
"""The compiled fast path against the Python pipeline (the executable specification): random table
states, port modes, LPF specs and packets (IPv4 with options, 802.1Q, IPv6, valid / opaque /
truncated shims, non-IP, mangled headers), with control writes between packets. Every packet must
leave with the same bytes on the same port or be dropped for the same reason, and afterwards every
counter, register, LPF cell and the random generator's state must be identical."""

from __future__ import annotations

import dataclasses
import random

import pytest

from ffs.core import constants, p4names, tables
from ffs.core.entries import Exact, LpfSpec, Lpm, TableEntry, Ternary, TimerSpec, Update
from ffs.core.frames import ipv4_frame, ipv6_frame, shim
from ffs.core.labels import encode
from ffs.switch import fast
from ffs.switch.driver import LocalDriver
from ffs.switch.host_vlan import HostVlan
from ffs.switch.pipeline import Pipeline
from ffs.switch.pktgen import timer_frame
from switchkit import DST, labelled, lm_for, rig


def test_fast_path_is_built():
    """pip install -e . builds the extension; a missing build is a failure, not a skip."""
    fast.require()


PORTS = (1, 2, 3, 4, 7)
V4_NETS = [(0x0A000000, 8), (0x0A000300, 24), (0x0A000307, 32), (0x0A010000, 16), (0, 0)]
V6_NETS = [(0xFD << 120, 8), (0xFD00_0000_0000_0001 << 64, 64), (0xFC << 120, 7)]


def _updates_initial(rng: random.Random) -> list[Update]:
    # f_log at priority 10 so that extra overlapping entries below can win, lose and tie
    ups = [
        Update(u.kind, dataclasses.replace(u.entry, priority=10)) if u.entry.table == p4names.F_LOG.name else u
        for u in tables.static_updates()
    ]
    ups += _port_and_route_updates(rng)
    ups += _pair_updates(rng)
    ups += _egress_updates(rng)
    ups += _f_log_overlaps(rng, ups)
    ups += _guard_updates(rng)
    if rng.random() < 0.5:
        ups.append(
            Update("set_default", TableEntry(p4names.IPV6_ROUTES.name, {}, "route", {"port": rng.choice(PORTS)}))
        )
    return ups


def _port_and_route_updates(rng: random.Random) -> list[Update]:
    """Each port's metadata, and IPv4 and IPv6 routes (sometimes no IPv4 default route)."""
    ups: list[Update] = []
    for port in PORTS:
        ups.append(
            Update(
                "insert",
                TableEntry(
                    p4names.PORT_METADATA.name,
                    {p4names.PORT_METADATA.key.name: Exact(port)},
                    None,
                    {"trust": rng.randint(0, 1), "insert": rng.randint(0, 1)},
                ),
            )
        )
    for value, plen in V4_NETS:
        if plen == 0 and rng.random() < 0.5:
            continue  # sometimes no default route: route misses
        ups.append(
            Update(
                "insert",
                TableEntry(
                    p4names.IPV4_ROUTES.name, {"dst_addr": Lpm(value, plen)}, "route", {"port": rng.choice(PORTS)}
                ),
            )
        )
    for value, plen in V6_NETS:
        ups.append(
            Update(
                "insert",
                TableEntry(
                    p4names.IPV6_ROUTES.name, {"dst_addr": Lpm(value, plen)}, "route", {"port": rng.choice(PORTS)}
                ),
            )
        )
    return ups


def _pair_updates(rng: random.Random) -> list[Update]:
    """About 60 % of the (ingress, egress) pairs, pids spaced at random."""
    ups: list[Update] = []
    pid = 0
    for i in PORTS:
        for j in PORTS:
            if rng.random() < 0.6:
                ups.append(
                    Update(
                        "insert",
                        TableEntry(
                            p4names.PAIRS.name,
                            {"ingress_port": Exact(i), "egress_port": Exact(j)},
                            "set_pair",
                            tables.pair_params(pid, _lm(rng)),
                        ),
                    )
                )
                pid += rng.randint(1, 300)
    return ups


def _egress_updates(rng: random.Random) -> list[Update]:
    """Per port: its LPF entry, shim stripping and the MTU entries (as egress and ingress), each at random."""
    ups: list[Update] = []
    for j in PORTS:
        if rng.random() < 0.8:
            ups.append(_egress(rng, j, "insert"))
        if rng.random() < 0.4:
            ups.append(Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(j)}, "strip_shim")))
        if rng.random() < 0.7:  # MTUs the frames reach: packets a shim would not fit (spec §2)
            ups += [Update("insert", e) for e in tables.shim_room_entries(j, rng.choice([576, 1000, 1500, 9000]))]
        if rng.random() < 0.7:  # the claims a frame through port j can make (spec §4): lies above them dropped
            ups += [Update("insert", e) for e in tables.claim_limit_entries(j, rng.choice([576, 1000, 1500, 9000]))]
    return ups


def _guard_updates(rng: random.Random) -> list[Update]:
    """The queue guard (spec §7.7): thresholds from always-high to never, for most egresses, and
    timer packets that drain some of them, some packet_ids without an entry."""
    ups: list[Update] = []
    for j in PORTS:
        if rng.random() < 0.8:
            qhi = rng.choice([0, 0, 1500, 1500, 20_000, 200_000, constants.QHI_OFF])
            ups.append(
                Update(
                    "insert",
                    TableEntry(p4names.EGRESS_QUEUE.name, {"egress_port": Exact(j)}, "set_queue", {"qhi": qhi}),
                )
            )
    for packet_id in range(6):
        if rng.random() < 0.7:
            params = {"port": rng.choice(PORTS), "drain": rng.choice([0, 100, 1250, 12_500, rng.getrandbits(32)])}
            ups.append(
                Update(
                    "insert", TableEntry(p4names.TIMER_PORTS.name, {"packet_id": Exact(packet_id)}, "set_drain", params)
                )
            )
    return ups


def _timer_frame(rng: random.Random) -> bytes:
    """What may enter on the generator's port: a timer packet of the FFS application or another."""
    app = rng.choice([constants.TIMER_APP_ID] * 3 + [0, 2, 7])
    return timer_frame(rng.randint(0, 3), app, rng.getrandbits(16), rng.randint(0, 7), rng.choice([64, 80]))


def _f_log_overlaps(rng: random.Random, ups: list[Update]) -> list[Update]:
    """Overlapping ternary f_log entries, none a duplicate of one in `ups`."""
    new: list[Update] = []
    # overlapping ternary entries of equal and different priorities: BF-RT's tie rules
    extra = {
        (rng.getrandbits(32) & m & 0x00FFFFFF, m, rng.choice([0, 10, 10, 20]))
        for m in rng.choices([0xFFFF0000, 0xFFFFFF00, 0xFF000000], k=6)
    }
    taken = {
        (u.entry.key["f"].value, u.entry.key["f"].mask, u.entry.priority)
        for u in ups
        if u.entry.table == p4names.F_LOG.name
    }
    for value, mask, prio in sorted(extra - taken):
        lf = rng.randint(0, constants.D_OFFSET)
        new.append(
            Update(
                "insert",
                TableEntry(
                    p4names.F_LOG.name,
                    {"f": Ternary(value, mask)},
                    "set_lf",
                    {"lf": lf, "nlf": -lf & 0xFFFF},
                    priority=prio,
                ),
            )
        )
    return new


def _lm(rng: random.Random) -> int:
    # around the F_lpf scale of these packets, so that every γ regime (1, fraction, 0) happens
    return rng.choice([0, rng.randint(0, constants.LM_MAX), rng.randint(2400, 3600), rng.randint(2900, 3300)])


def _egress(rng: random.Random, port: int, kind: str) -> Update:
    # any τ the control interface admits (τ in [1, 2^16] while congested, spec §5.3), any lcr
    congested = rng.randint(0, 1)
    ltau = (
        rng.choice(
            [
                constants.CODE_ONE,
                rng.randint(constants.CODE_ONE, 0x8400),
                rng.randint(constants.CODE_ONE, constants.LTAU_MAX),
            ]
        )
        if congested
        else 0xFFFF
    )
    lcr = rng.choice([0xFFFF, rng.getrandbits(16)])
    params = {"ltau": ltau, "ltau_p": ltau - constants.CODE_ONE if congested else 0, "congested": congested, "lcr": lcr}
    return Update(kind, TableEntry(p4names.EGRESS_PARAMS.name, {"egress_port": Exact(port)}, "set_egress", params))


def _lpf_specs(rng: random.Random) -> list[tuple[list[int], LpfSpec]]:
    out = [(list(range(constants.NUM_PAIRS)), LpfSpec("RATE", 1e6, 1e6, 4))]
    for _ in range(8):
        idx = rng.sample(range(0, 2000), 40)
        kind = rng.choice(["RATE", "SAMPLE"])
        gain = rng.uniform(1e3, 1e7)
        decay = gain if kind == "RATE" else rng.uniform(1e3, 1e7)  # a RATE filter has one constant (spec §4)
        out.append((idx, LpfSpec(kind, gain, decay, rng.randint(0, 31))))
    return out


def _frame(rng: random.Random, lies: random.Random) -> bytes:
    """A random frame; `lies` (a generator of its own, so the other draws stay as they were)
    makes some IP frames lie about their length."""
    kind = rng.random()
    ffs = None
    r = rng.random()
    if r < 0.6:
        flags = rng.choice([constants.FLAG_RI, 0, constants.FLAG_RI | constants.FLAG_ECHO, constants.FLAG_DEFAULTED])
        rf = rng.choice([rng.getrandbits(16), 0x8000, 0xFFFF, 0, 0x8000 + rng.randint(-600, 600)])
        rri = rng.choice([0xFFFF, rng.getrandbits(16), 0x7FFF, 0x8000])
        ffs = shim(rf, flags, 17, rri, rng.getrandbits(16))
        if rng.random() < 0.1:  # opaque: another version or the reserved bit
            ffs = bytes([rng.choice([0x28, 0x19, 0x01])]) + ffs[1:]
    vlan = rng.choice([None, None, None, rng.randint(0, 4095)])
    size = rng.choice([40, 60, 100, 576, 1000, 1250, 1500, rng.randint(36, 9000)])
    if kind < 0.65:
        dst = rng.choice(["10.0.3.7", "10.0.3.9", "10.1.2.3", "10.9.9.9", "192.0.2.1"])
        opts = rng.choice([b"", b"", b"\x01\x01\x01\x00", b"\x01" * 40])
        size = max(size, 20 + len(opts) + (8 if ffs else 0))
        # fragments (spec §2; `lies` draws them, so the other draws stay as they were): first,
        # later and last, of shim datagrams and others, DF alone
        frag = lies.choice([0] * 6 + [constants.IPV4_MF, constants.IPV4_MF | 7, 185, 0x1FFF, 0x4000])
        f = ipv4_frame("10.0.1.1", dst, size, ffs, options=opts, vlan=vlan, frag=frag)
    elif kind < 0.9:
        dst = rng.choice(["fd00::1", "fd00:0:0:1::5", "fc00::1", "2001:db8::1"])
        size = max(size, 8 if ffs else 0)
        f = ipv6_frame("fc00::9", dst, size, ffs, vlan=vlan)
    else:
        f = bytes(12) + rng.choice([b"\x08\x06", b"\x81\x00\x08\x06", b"\x88\xcc"]) + bytes(rng.randint(0, 60))
    f = bytearray(f)
    m = rng.random()
    if m < 0.05:
        del f[rng.randint(0, len(f)) :]  # truncated anywhere
    elif m < 0.08 and len(f) > 20:
        f[rng.randrange(len(f) // 2)] = rng.getrandbits(8)  # one mangled header byte
    elif m < 0.1 and len(f) > 18:
        f[14 + (4 if vlan is not None else 0)] = rng.choice([0x44, 0x41, 0x4F, 0x60, 0x45])  # IHL / version
    if lies.random() < 0.08 and kind < 0.9 and len(f) > 24:  # a lying length: the field or the bytes (spec §7.3)
        at = 14 + (4 if vlan is not None else 0) + (2 if kind < 0.65 else 4)
        real = (f[at] << 8) | f[at + 1]
        if lies.random() < 0.3:
            f += bytes(lies.choice([1, 4, 5, 46, 1000]))  # trailing bytes the field does not count
        else:
            lie = lies.choice(
                [lies.getrandbits(16), real - lies.randint(1, 60), real + lies.choice([1, 4, 8]), 0xFFFF, 20]
            )
            f[at : at + 2] = (lie & 0xFFFF).to_bytes(2, "big")
    return bytes(f)


def _state(p: Pipeline):
    lpf = p.rate_est.f_lpf
    return (
        {n: (list(c.packets), list(c.bytes)) for n, c in p.counters.items()},
        {n: list(r.cells) for n, r in p.registers.items()},
        (list(p.pktgen.cfg), list(p.pktgen.next_ns), list(p.pktgen.now_ns)),
        list(lpf.state),
        list(lpf.last),
        list(lpf.seen),
    )


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_random_packets_and_tables_identical(seed):
    fast.require()
    rng, lies = random.Random(seed), random.Random(-seed)
    ref, fp = Pipeline(seed), fast.FastPipeline(seed)
    drivers = (LocalDriver(ref), LocalDriver(fp))
    ups = _updates_initial(rng)
    specs = _lpf_specs(rng)
    timer = TimerSpec(rng.choice([50_000, 400_000, 3_000_000]), rng.randint(1, 8))
    for d in drivers:
        d.write(ups)
        for idx, spec in specs:
            d.set_lpf_spec(p4names.F_LPF.name, idx, spec)
        d.set_timer(timer)
    t = 10**9
    outcomes = {
        "sent": 0,
        "parse_error": 0,
        "route_miss": 0,
        "ffs_drop": 0,
        "malformed": 0,
        "guard_drop": 0,
        "timer": 0,
        "claim_drop": 0,
    }
    for n in range(3000):
        if n % 250 == 249:  # the agent's period: egress parameters change, sometimes a pair
            present = {e.key["egress_port"].value for e in drivers[0].read_table(p4names.EGRESS_PARAMS.name)}
            batch = [_egress(rng, j, "modify" if j in present else "insert") for j in rng.sample(PORTS, 2)]
            if rng.random() < 0.3:
                batch.append(
                    Update(
                        "set_default", TableEntry(p4names.IPV4_ROUTES.name, {}, "route", {"port": rng.choice(PORTS)})
                    )
                )
            for d in drivers:
                d.write(batch)
        if n % 700 == 699:
            for d in drivers:
                d.write(
                    [
                        Update(
                            "modify",
                            TableEntry(
                                p4names.PORT_METADATA.name,
                                {p4names.PORT_METADATA.key.name: Exact(1)},
                                None,
                                {"trust": n % 2, "insert": 1},
                            ),
                        )
                    ]
                )
        t += rng.choice([0, 1, 800, 6_000, 60_000, 2_000_000, -500])  # equal and (rarely) earlier times too
        frame, port = _frame(rng, lies), rng.choice(PORTS + (9,))
        if lies.random() < 0.03:  # the generator's port of pipe 0 or 1 (its own timer, or another application's)
            frame, port = _timer_frame(lies), lies.choice([constants.PKTGEN_PORT, 128 | constants.PKTGEN_PORT])
        a, b = ref.process(frame, port, t), fp.process(frame, port, t)
        assert (a.egress_port, a.frame, a.drop_reason, a.pid) == (b.egress_port, b.frame, b.drop_reason, b.pid), (
            n,
            frame.hex(),
        )
        outcomes["sent" if a.egress_port is not None else a.drop_reason] += 1
    assert _state(ref) == _state(fp)
    assert ref.normalize.rng.getstate()[1] == fp.rng_state()
    # the run exercised every fate
    assert all(v > 30 for v in outcomes.values()), str(outcomes)
    for d in drivers:  # a control-plane read runs what is due in every pipe, in both engines
        d.read_registers(p4names.GUARD_QUEUE.name, [0])
    assert _state(ref) == _state(fp)


def test_gamma_fractions_draw_the_same_numbers():
    """A long run at γ = 1/3: identical accept/drop sequences (same seed, same draws)."""
    fast.require()
    runs = []
    for cls in (Pipeline, fast.FastPipeline):
        r = rig(seed=9, pipeline=cls)
        rf = encode(2.0)
        r.set_pair(lm_for(rf, encode(1.0) + 203))
        r.set_egress(encode(1.0))  # d = 203: γ = 2^(-203/128) ≈ 1/3
        f = labelled(rf)
        runs.append([r.send(f).egress_port is not None for _ in range(10_000)])
    assert runs[0] == runs[1]
    assert abs(sum(runs[0]) - 10_000 * tables.gamma_of_code_distance(203)) <= 4 * (10_000 * 0.33 * 0.67) ** 0.5


def test_compiled_tables_follow_control_writes():
    """A write through the driver reaches the compiled tables before the next packet."""
    fast.require()
    fp = fast.FastPipeline(1)
    d = LocalDriver(fp)
    d.write(tables.static_updates())
    f = ipv4_frame("10.0.1.1", DST, 100)
    assert fp.process(f, 1, 1).drop_reason == "route_miss"
    d.write(
        [
            Update(
                "insert", TableEntry(p4names.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000300, 24)}, "route", {"port": 4})
            )
        ]
    )
    assert fp.process(f, 1, 2).egress_port == 4
    d.clear_table(p4names.IPV4_ROUTES.name)
    assert fp.process(f, 1, 3).drop_reason == "route_miss"
    with pytest.raises(ValueError, match="out of range"):
        fp.process(f, 512, 4)


@pytest.mark.parametrize("name", ["arrival+fcs", "arrival", "deparsed+fcs", "deparsed"])
def test_every_pkt_length_and_frame_basis_identical(name):
    """The chip models of PktLength under every frame_basis, the matching one and those that are
    not: random frames (lies among them, shims inserted) meet the same fate, bytes and counters in
    both engines (the frame check of spec §7.3)."""
    from ffs.switch.tna import PKT_LENGTHS

    fast.require()
    rng, lies = random.Random(name), random.Random(name + "lies")
    ref, fp = Pipeline(7), fast.FastPipeline(7)
    drivers = (LocalDriver(ref), LocalDriver(fp))
    ups = _updates_initial(rng)
    for p, d in zip((ref, fp), drivers, strict=True):
        p.pkt_length_model = PKT_LENGTHS[name]
        d.write(ups)
    t, malformed = 10**9, 0
    bases = [(fcs, deparsed) for fcs in (0, 1, 2) for deparsed in (False, True)]
    for n in range(1800):
        if n % 300 == 0:
            for d in drivers:
                d.write([tables.frame_basis_update(*bases[n // 300])])
        t += rng.choice([800, 60_000, 2_000_000])
        frame, port = _frame(rng, lies), rng.choice(PORTS)
        a, b = ref.process(frame, port, t), fp.process(frame, port, t)
        assert (a.egress_port, a.frame, a.drop_reason, a.pid) == (b.egress_port, b.frame, b.drop_reason, b.pid), (
            n,
            frame.hex(),
        )
        malformed += a.drop_reason == "malformed"
    assert _state(ref) == _state(fp)
    assert malformed > 30  # the check was at work


@pytest.mark.parametrize("name", ["arrival+fcs", "deparsed+fcs", "deparsed"])
def test_a_host_that_pops_and_pushes_tags_identical(name):
    """A host program's access ports and pushing ports (`HostVlan`) under the chip models of
    PktLength and a matching and a strict frame_basis: random frames (tagged ones among them, lies,
    shims inserted) meet the same fate, bytes and counters in both engines, tag_changed's cells of
    both kinds counted."""
    from ffs.switch.tna import PKT_LENGTHS

    fast.require()
    rng, lies = random.Random(name + "vlan"), random.Random(name + "vlan-lies")
    ref, fp = Pipeline(7), fast.FastPipeline(7)
    drivers = (LocalDriver(ref), LocalDriver(fp))
    ups = _updates_initial(rng)
    for p, d in zip((ref, fp), drivers, strict=True):
        p.pkt_length_model = PKT_LENGTHS[name]
        p.host_vlan = HostVlan(access={1, 4}, push={3: 7, 7: 4095})
        d.write(ups)
    t = 10**9
    for n in range(1500):
        if n % 500 == 0:
            for d in drivers:
                d.write([tables.frame_basis_update(n // 500, n // 500 == 1)])
        t += rng.choice([800, 60_000, 2_000_000])
        frame, port = _frame(rng, lies), rng.choice(PORTS)
        a, b = ref.process(frame, port, t), fp.process(frame, port, t)
        assert (a.egress_port, a.frame, a.drop_reason, a.pid) == (b.egress_port, b.frame, b.drop_reason, b.pid), (
            n,
            frame.hex(),
        )
    assert _state(ref) == _state(fp)
    cells = ref.counters[p4names.TAG_CHANGED.name].packets
    half = p4names.TAG_CHANGED.size // 2
    assert sum(cells[i] for i in (3, 7)) > 30 and sum(cells[half + i] for i in (3, 7)) > 10, list(cells[:8])
