# SPDX-License-Identifier: Apache-2.0
"""The shared base of the FFS PTF tests: one `Driver` to the chosen target, helpers that program it
with the project's generators, packet builders on the scapy shim layer, and a tearDown that puts
back every table, default entry, port-metadata entry and LPF spec the test touched.

Test params (ptf --test-params "k='v';..."):
  target     'model' (default): the software switch over its control service at `control`
             (unix:PATH or host:port); 'tofino' (also the SDE's 'asic-model' and 'hw'): bf_switchd
             over BF-Runtime gRPC at `grpc_addr` (default: the SDE's grpc_server:bfrt_grpc_port).
  ports      the three device ports "in,out,other" (default "1,2,3", as in port_maps/).
  packets    'large' or 'small' sizes for the tests that send thousands of packets, or a number;
             default 'small' on tofino (tofino-model manages a few thousand packets/s), else 'large'.
  send_gap_ms  pause between packets of a burst (default 0; the tofino-model runner sets 1).
  counter_byte_adjust  bytes a target counts per packet beyond the frame and its FCS (the SDE's runner
             passes 0; every counter counts the frame with its FCS, on tofino-model, hardware and
             the software switch, spec §7.3).
Test bodies use only the Driver interface, never bfrt_grpc.
"""

from __future__ import annotations

import atexit
import ipaddress
import math
import socket
import sys
import time
from dataclasses import dataclass

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet

import expect
from ffs.core import constants, p4names, tables
from ffs.core.entries import COUNTER_WRAP, CounterValue, Exact, LpfSpec, Lpm, TableEntry, Update, counter_delta
from ffs.core.labels import decode
from ffs.driver.base import Driver
from ffs.lab.scapy_ffs import FFS

# --- test params ------------------------------------------------------------------------------


def params() -> dict:
    return tu.test_params_get() or {}


def target() -> str:
    """'model' (the software switch) or 'tofino' (bf_switchd: tofino-model or hardware)."""
    t = str(params().get("target", "model")).lower()
    if t == "model":
        return "model"
    if t in ("tofino", "asic-model", "hw"):
        return "tofino"
    raise ValueError(f"unknown target {t!r}: use 'model' or 'tofino'")


def _ports() -> tuple[int, int, int]:
    p = [int(x) for x in str(params().get("ports", "1,2,3")).split(",")]
    if len(p) != 3 or len(set(p)) != 3:
        raise ValueError(f"test param ports wants three distinct device ports, got {params().get('ports')!r}")
    return p[0], p[1], p[2]


IN, OUT, OTHER = _ports()  # PTF port numbers = device ports (the port maps say so)
PID = 5  # the managed pair (IN -> OUT)
SCALE = constants.LPF_SCALE_DOWN
# An F estimator that forgets between packets (time constant 1 ns, packets microseconds apart):
# F is the packet's own weight w >> s (spec §8), so a test can choose rf' exactly through lm.
FORGETFUL = LpfSpec("RATE", 1.0, 1.0, SCALE)

NET4, NET4_OTHER, NET6 = "10.0.2.0/24", "10.0.3.0/24", "fd00:2::/32"
SRC4, DST4, DST4_OTHER, DST4_MISS = "10.0.1.1", "10.0.2.7", "10.0.3.7", "192.0.2.1"
SRC6, DST6, DST6_MISS = "fd00:1::1", "fd00:2::7", "2001:db8::1"
MAC_SRC, MAC_DST = "02:00:00:00:00:01", "02:00:00:00:00:02"


def packets(large: int, small: int) -> int:
    """The size of a many-packet test on this target (test param `packets`)."""
    p = str(params().get("packets", "small" if target() == "tofino" else "large"))
    if p.isdigit():
        return int(p)
    if p not in ("small", "large"):
        raise ValueError(f"test param packets wants 'small', 'large' or a number, got {p!r}")
    return large if p == "large" else small


def byte_adjust() -> int:
    """Bytes a counter counts per packet beyond the frame PTF sent: its FCS, and whatever more the
    target's `counter_byte_adjust` says."""
    return constants.FCS_LEN + int(params().get("counter_byte_adjust", 0))


def make_driver() -> Driver:
    p = params()
    if target() == "model":
        from ffs.switch.driver import ModelDriver

        return ModelDriver(str(p.get("control", "localhost:50052")))
    from ffs.driver.bfrt import BfrtDriver

    addr = p.get("grpc_addr") or f"{p.get('grpc_server', 'localhost')}:{p.get('bfrt_grpc_port', 50052)}"
    # p4_name: the SDE's runner passes the program it runs (make install-example's l2l3_acl, or ffs).
    # sync_always=(): a test reads a few cells of a counter per packet, which the device gives cell by
    # cell; the agent's Sync of a whole table (its τ step, any number of egress ports) costs ten times
    # that on tofino-model for the same values
    return BfrtDriver(
        str(addr),
        client_id=int(p.get("client_id", 1)),
        program=str(p.get("p4_name", p4names.P4_NAME)),
        sync_always=(),
    )


# --- saving and restoring what a test touches --------------------------------------------------

TEST_TABLES = (
    p4names.IPV4_ROUTES,
    p4names.IPV6_ROUTES,
    p4names.PAIRS,
    p4names.EGRESS_PARAMS,
    p4names.EGRESS_PORTS,
    p4names.SHIM_ROOM,
    p4names.EGRESS_QUEUE,  # cleared: no queue guard on any egress unless a test sets one
    p4names.TIMER_PORTS,
    p4names.CLAIM_LIMIT,  # cleared: no port limits claims unless a test sets it
    p4names.FRAME_BASIS,  # the P4 default (either FCS) unless a test measures it (test_selftest)
)
TEST_TABLE_NAMES = tuple(t.name for t in TEST_TABLES)


def canon(e: TableEntry) -> tuple:
    """An entry without the naming differences between targets (qualified or short action names)."""
    return tuple(sorted(e.key.items())), e.action_name, tuple(sorted(e.params.items())), e.priority


@dataclass
class TableState:
    name: str
    entries: list[TableEntry]
    default: TableEntry | None  # None for $PORT_METADATA (no default entry)

    @classmethod
    def read(cls, driver: Driver, name: str, with_default: bool = True) -> TableState:
        return cls(name, driver.read_table(name), driver.read_default(name) if with_default else None)

    def updates(self) -> list[Update]:
        ups = [Update("insert", e) for e in self.entries]
        if self.default is not None:
            ups.append(Update("set_default", TableEntry(self.name, {}, self.default.action, dict(self.default.params))))
        return ups


def restore(driver: Driver, states: list[TableState]) -> None:
    for s in states:
        driver.clear_table(s.name)
    driver.write([u for s in states for u in s.updates()])


@dataclass
class Saved:
    """The state a test may change, read before it starts."""

    tables: list[TableState]
    lpf: dict[int, LpfSpec]

    @classmethod
    def capture(
        cls, driver: Driver, lpf_indices: tuple[int, ...], test_tables: tuple[str, ...] = TEST_TABLE_NAMES
    ) -> Saved:
        tables = [TableState.read(driver, name) for name in test_tables]
        tables.append(TableState.read(driver, p4names.PORT_METADATA.name, with_default=False))
        return cls(tables, {i: driver.read_lpf_spec(p4names.F_LPF.name, i) for i in lpf_indices})

    def restore(self, driver: Driver) -> None:
        restore(driver, self.tables)
        by_spec: dict[LpfSpec, list[int]] = {}
        for i, spec in self.lpf.items():
            by_spec.setdefault(spec, []).append(i)
        for spec, idx in by_spec.items():
            driver.set_lpf_spec(p4names.F_LPF.name, idx, spec)


class _StaticTables:
    """len_log, weight, weight_reset, f_log and gamma hold the generated entries of ffs.core.tables on every target.
    They are checked once per run (and after an agent rewrote them); if the target held anything
    else they are loaded, and what was there is put back when the run ends."""

    verified = False
    before: list[TableState] | None = None

    @classmethod
    def ensure(cls, driver: Driver) -> None:
        if cls.verified:
            return
        want: dict[str, set] = {name: set() for name in tables.GENERATED_TABLES}
        for u in tables.static_updates():
            want[u.entry.table].add(canon(u.entry))
        states = [TableState.read(driver, name) for name in tables.GENERATED_TABLES]
        if any(
            {canon(e) for e in s.entries} != want[s.name] or canon(s.default) != canon(driver_default(s.name))
            for s in states
        ):
            if cls.before is None:
                cls.before = states
                atexit.register(cls.restore_at_exit)
            for s in states:
                driver.clear_table(s.name)
            driver.write(tables.static_updates())
        cls.verified = True

    @classmethod
    def restore_at_exit(cls) -> None:
        if cls.before is None:
            return
        try:
            d = make_driver()
            d.connect(timeout_s=10)
            try:
                restore(d, cls.before)
            finally:
                d.close()
        except Exception as e:  # noqa: BLE001 - report, never hide the run's own result
            print(f"ptf: could not restore the generated tables to their state before the run: {e}", file=sys.stderr)


def driver_default(table: str) -> TableEntry:
    """The P4 default action of a table (what clear_table restores)."""
    t = p4names.table(table)
    return TableEntry(t.name, {}, t.default_action, {})


# --- the base test -----------------------------------------------------------------------------

SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
RECEIVE_BUFFER = 64 << 20
RECEIVE_QUEUE = 1 << 20  # frames per port in PTF's queue


def _grow_receive_buffers(dataplane) -> None:
    """PTF's raw sockets keep the kernel's default receive buffer (about 200 kB): a burst of a
    thousand packets overflows it while the test thread is still sending, and the count looks
    like drops. Root may force a larger buffer; without root the default stays. PTF's own queue
    per port keeps the newest 100 frames and drops the oldest: a target that forwards a burst
    faster than the test reads it (tofino-model without its packet log) would lose one there."""
    dataplane.set_qlen(RECEIVE_QUEUE)
    for port in getattr(dataplane, "ports", {}).values():
        sock = getattr(port, "socket", None)
        for opt in (SO_RCVBUFFORCE, socket.SO_RCVBUF) if sock is not None else ():
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, RECEIVE_BUFFER)
                break
            except OSError:
                continue


@dataclass(frozen=True)
class Counts:
    """Counter deltas the tests check: R (pair_bytes), drops (pair_drops), per egress port R*
    (offered), A (admitted: what γ let through, before the TM) and what left (accepted), and the
    events cells."""

    r: CounterValue
    drops: CounterValue
    accepted: dict[int, CounterValue]
    events: tuple[int, ...]
    offered: dict[int, CounterValue]
    admitted: dict[int, CounterValue]


class FfsTest(BaseTest):
    """Programs the node every test starts from (base_setup) and restores the target afterwards."""

    lpf_indices: tuple[int, ...] = (PID,)
    # the tables a test may change, cleared by base_setup and put back after it
    test_tables: tuple[str, ...] = TEST_TABLE_NAMES

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        _grow_receive_buffers(self.dataplane)
        self.dataplane.flush()
        self.driver: Driver | None = None
        self.saved: Saved | None = None
        self._f_cache: dict[tuple, int] = {}
        try:
            self.driver = make_driver()
            self.driver.connect(timeout_s=60)
            self.saved = Saved.capture(self.driver, self.lpf_indices, self.test_tables)
            _StaticTables.ensure(self.driver)
            self.base_setup()
        except BaseException:
            # unittest does not run tearDown when setUp raises: without this the binding stays open,
            # bf_switchd keeps client 1 for this process, and every later test's connect waits 60 s
            self._undo_and_release()
            BaseTest.tearDown(self)
            raise

    def tearDown(self) -> None:
        try:
            self.dataplane.flush()
        finally:
            try:
                if self.saved is not None and self.driver is None:
                    self.reconnect()
            finally:
                self._undo_and_release()
                BaseTest.tearDown(self)

    def _undo_and_release(self) -> None:
        """Put back what the test changed (if it got as far as saving it), then always close the
        binding, whatever the restore raised."""
        try:
            if self.saved is not None and self.driver is not None:
                self.saved.restore(self.driver)
        finally:
            self.release()

    def reconnect(self) -> None:
        self.driver = make_driver()
        self.driver.connect(timeout_s=60)

    def release(self) -> None:
        """Hand the target to another client (BF-Runtime lets one client own a program)."""
        if self.driver is not None:
            self.driver.close()
            self.driver = None

    # -- programming ---------------------------------------------------------------------------
    def base_setup(self) -> None:
        """Ports IN, OUT, OTHER trusted; the pair IN -> OUT managed as PID (lm = LM_MAX, the largest
        share: normalized labels low); IN -> OTHER unmanaged; OUT uncongested (tau = infinity); and
        the forwarding of forwarding_updates."""
        d = self.driver
        for name in self.test_tables:
            d.clear_table(name)
        d.clear_table(p4names.PORT_METADATA.name)
        ups = [self.port_update(p, trust=1, insert=0) for p in (IN, OUT, OTHER)]
        ups += self.forwarding_updates()
        ups.append(self.pair_update(constants.LM_MAX))
        ups.append(
            Update(
                "insert",
                TableEntry(
                    p4names.EGRESS_PARAMS.name, {"egress_port": Exact(OUT)}, "set_egress", expect.Egress().params()
                ),
            )
        )
        d.write(ups)
        d.set_lpf_spec(p4names.F_LPF.name, [PID], FORGETFUL)
        d.write_register(p4names.F_EST.name, PID, 0)
        self.lm, self.m, self.egress = (
            constants.LM_MAX,
            2.0 ** (constants.LM_MAX / constants.CODE_STEPS_PER_OCTAVE),
            expect.Egress(),
        )

    def forwarding_updates(self) -> list[Update]:
        """ffs.p4's routes: 10.0.2.0/24 and fd00:2::/32 -> OUT, 10.0.3.0/24 -> OTHER."""
        return [self.route_update(NET4, OUT), self.route_update(NET4_OTHER, OTHER), self.route_update(NET6, OUT)]

    @staticmethod
    def port_update(port: int, trust: int, insert: int, kind: str = "insert") -> Update:
        return Update(
            kind,
            TableEntry(
                p4names.PORT_METADATA.name,
                {p4names.PORT_METADATA.key.name: Exact(port)},
                None,
                {"trust": trust, "insert": insert},
            ),
        )

    @staticmethod
    def route_update(prefix: str, port: int, kind: str = "insert") -> Update:
        net = ipaddress.ip_network(prefix)
        table = p4names.IPV4_ROUTES if net.version == 4 else p4names.IPV6_ROUTES
        return Update(
            kind,
            TableEntry(table.name, {"dst_addr": Lpm(int(net.network_address), net.prefixlen)}, "route", {"port": port}),
        )

    @staticmethod
    def pair_update(lm: int, kind: str = "insert") -> Update:
        return Update(
            kind,
            TableEntry(
                p4names.PAIRS.name,
                {"ingress_port": Exact(IN), "egress_port": Exact(OUT)},
                "set_pair",
                tables.pair_params(PID, lm),
            ),
        )

    def set_port(self, port: int, trust: int = 1, insert: int = 0) -> None:
        self.driver.write([self.port_update(port, trust, insert, kind="modify")])

    def set_lm(self, lm: int) -> None:
        """The pair's lm as the control plane pushes it; its share is M_F = 2^(lm/128) (spec §4)."""
        self.driver.write([self.pair_update(lm, kind="modify")])
        self.lm, self.m = lm, 2.0 ** (lm / constants.CODE_STEPS_PER_OCTAVE)

    def set_m(self, m_f: float) -> None:
        """The pair's share M_F in estimator units (spec §4), pushed as lm; expectations use M_F."""
        self.set_lm(expect.lm_of(m_f))
        self.m = m_f

    def set_egress(self, egress: expect.Egress) -> None:
        self.driver.write(
            [
                Update(
                    "modify",
                    TableEntry(p4names.EGRESS_PARAMS.name, {"egress_port": Exact(OUT)}, "set_egress", egress.params()),
                )
            ]
        )
        self.egress = egress

    def set_strip(self, port: int) -> None:
        self.driver.write(
            [Update("insert", TableEntry(p4names.EGRESS_PORTS.name, {"egress_port": Exact(port)}, "strip_shim"))]
        )

    # -- reading the target --------------------------------------------------------------------
    def counts(self) -> Counts:
        d = self.driver
        return Counts(
            d.read_counters(p4names.PAIR_BYTES.name, [PID])[PID],
            d.read_counters(p4names.PAIR_DROPS.name, [PID])[PID],
            d.read_counters(p4names.ACCEPTED.name, [OUT, OTHER]),
            tuple(
                v.packets for _, v in sorted(d.read_counters(p4names.EVENTS.name, range(p4names.EVENTS.size)).items())
            ),
            d.read_counters(p4names.OFFERED.name, [OUT, OTHER]),
            d.read_counters(p4names.ADMITTED.name, [OUT, OTHER]),
        )

    def since(self, before: Counts) -> Counts:
        now = self.counts()
        return Counts(
            counter_delta(now.r, before.r),
            counter_delta(now.drops, before.drops),
            {p: counter_delta(now.accepted[p], before.accepted[p]) for p in now.accepted},
            tuple((a - b) % COUNTER_WRAP for a, b in zip(now.events, before.events, strict=False)),
            {p: counter_delta(now.offered[p], before.offered[p]) for p in now.offered},
            {p: counter_delta(now.admitted[p], before.admitted[p]) for p in now.admitted},
        )

    def assert_events(self, delta: Counts, **cells: int) -> None:
        """Exactly these events cells moved, by these amounts (spec §7.6: one cell per packet)."""
        names = {
            "parse_error": constants.EVENT_PARSE_ERROR,
            "route_miss": constants.EVENT_ROUTE_MISS,
            "opaque": constants.EVENT_OPAQUE_SHIM,
            "no_pair": constants.EVENT_NO_PAIR,
            "ffs_drop": constants.EVENT_FFS_DROP,
            "not_inserted": constants.EVENT_NOT_INSERTED,
            "guard_drop": constants.EVENT_GUARD_DROP,
            "claim_oversize": constants.EVENT_CLAIM_OVERSIZE,
        }
        want = [0] * len(delta.events)
        for k, v in cells.items():
            want[names[k]] = v
        self.assertEqual(list(delta.events), want, "events counter cells (spec §7.6)")

    def f_est(self) -> int:
        return self.driver.read_registers(p4names.F_EST.name, [PID])[PID]

    # -- the queue guard (spec §7.7) -----------------------------------------------------------
    def set_queue(self, port: int, qhi: int | None) -> None:
        """The egress's virtual-queue threshold (set_queue), or none (None: no_queue, the guard off)."""
        key = {"egress_port": Exact(port)}
        self.driver.write(
            [Update("delete", TableEntry(p4names.EGRESS_QUEUE.name, key))]
            if qhi is None
            else [Update("insert", TableEntry(p4names.EGRESS_QUEUE.name, key, "set_queue", {"qhi": qhi}))]
        )

    def set_drain(self, packet_id: int, port: int, drain: int) -> None:
        """A timer packet's egress and the line-rate bytes it drains from its virtual queue."""
        self.driver.write(
            [
                Update(
                    "insert",
                    TableEntry(
                        p4names.TIMER_PORTS.name,
                        {"packet_id": Exact(packet_id)},
                        "set_drain",
                        {"port": port, "drain": drain},
                    ),
                )
            ]
        )

    def queue_pipes(self, port: int) -> list[int]:
        """The egress's virtual queue in every pipe (each ingress pipe keeps its own, pipe 0 first)."""
        return self.driver.read_register_pipes(p4names.GUARD_QUEUE.name, [port])[port]

    def timer_counts(self) -> dict[int, int]:
        """Timer packets counted by the egress each drained (guard.timers, summed over pipes)."""
        return {i: v.packets for i, v in self.driver.read_counters(p4names.GUARD_TIMERS.name).items()}

    # -- packets -------------------------------------------------------------------------------
    def send(self, pkt: Packet | bytes, port: int = IN, count: int = 1) -> None:
        gap = float(params().get("send_gap_ms", 0)) / 1e3
        for _ in range(count):
            tu.send_packet(self, port, pkt)
            if gap:
                time.sleep(gap)

    def recv(self, port: int = OUT, timeout: float = 2.0) -> bytes | None:
        r = tu.dp_poll(self, port_number=port, timeout=timeout)
        return bytes(r.packet) if isinstance(r, self.dataplane.PollSuccess) else None

    def expect_frame(self, exp: Packet | bytes, port: int = OUT, got: bytes | None = None, what: str = "") -> bytes:
        """The next frame on `port` is exactly `exp`, byte for byte."""
        if got is None:
            got = self.recv(port)
        self.assertIsNotNone(got, f"no frame on port {port} {what}".strip())
        want = bytes(exp)
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b), min(len(got), len(want)))
            self.fail(
                f"frame on port {port} {what} differs from byte {at} (got {len(got)} bytes, want {len(want)}):\n"
                f"got:  {Ether(got)!r}\nwant: {Ether(want)!r}"
            )
        return got

    def expect_nothing(self, timeout: float = 0.5) -> None:
        """No frame on any of the tests' ports within `timeout` (independent of ptf's --relax): one
        wait for all of them, not one after another."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            r = tu.dp_poll(self, port_number=None, timeout=left)
            if not isinstance(r, self.dataplane.PollSuccess):
                return
            self.assertNotIn(r.port, (IN, OUT, OTHER), f"unexpected frame on port {r.port}: {Ether(bytes(r.packet))!r}")

    def send_counted(self, pkt: Packet, n: int, chunk: int = 50, timeout_s: float = 60.0) -> int:
        """Send `n` copies of `pkt` on the managed pair in chunks, each once the target has taken in
        the last (its R counter), and return how many frames left on OUT. A target slower than PTF's
        sender (tofino-model forwards a few hundred packets/s) then loses no input."""
        d = self.driver
        r0 = d.read_counters(p4names.PAIR_BYTES.name, [PID])[PID].packets
        a0 = d.read_counters(p4names.ADMITTED.name, [OUT])[OUT].packets
        sent = got = 0
        while sent < n:
            k = min(chunk, n - sent)
            self.send(pkt, count=k)
            sent += k
            deadline = time.monotonic() + timeout_s
            while (d.read_counters(p4names.PAIR_BYTES.name, [PID])[PID].packets - r0) % COUNTER_WRAP < sent:
                if time.monotonic() > deadline:
                    self.fail(f"the target took in fewer than {sent} of the packets sent within {timeout_s:g} s")
                time.sleep(0.02)
            admitted = (d.read_counters(p4names.ADMITTED.name, [OUT])[OUT].packets - a0) % COUNTER_WRAP
            while got < admitted and self.recv(OUT, timeout=2.0) is not None:
                got += 1
        return got

    def lengths_received(self, port: int, expected_at_most: int, timeout: float = 1.0) -> list[int]:
        """The frames that left `port`, each as the counters count it (its length plus byte_adjust)."""
        out: list[int] = []
        while len(out) < expected_at_most and (frame := self.recv(port, timeout=timeout)) is not None:
            out.append(len(frame) + byte_adjust())
        return out

    def count_received(self, port: int, expected_at_most: int, timeout: float = 1.0) -> int:
        got = 0
        while got < expected_at_most and self.recv(port, timeout=timeout) is not None:
            got += 1
        return got

    def one(self, pkt: Packet, trust: bool = True, timeout: float = 2.0) -> tuple[bytes | None, expect.Paper, Counts]:
        """Send one packet on the managed pair IN -> OUT. Returns the frame that left OUT (None if
        none did within `timeout`), what Algorithms 3 and 4 make of the packet in real numbers with
        the F the estimator used for it (read back from f_est) and the pair's M_F, and the counter
        deltas."""
        before = self.counts()
        self.send(pkt)
        got = self.recv(OUT, timeout=timeout)
        valid = shim_valid(pkt)
        ri = bool(valid and int(pkt[FFS].flags) & constants.FLAG_RI)  # on a resetting port too (spec §6)
        rri = code_value(pkt[FFS].rri) if valid else float("inf")
        p = expect.paper(label_in(pkt, trust), self.f_est(), self.m, self.egress, rri=rri, ri=ri)
        return got, p, self.since(before)

    def expect_emitted(self, got: bytes | None, pkt: Packet, p: expect.Paper, what: str = "", **fields: int) -> bytes:
        """`got` is `pkt` with the label Algorithm 3 gives (rf' · γ) and, where RI ran, the RRI of
        Algorithm 4, each within spec §10's budget of the real value; every other byte as it came,
        but for `fields` (e.g. flags)."""
        self.assertIsNotNone(got, f"no frame {what}")
        shim = Ether(got)[FFS]
        label_budget = expect.LABEL_BUDGET if math.isinf(self.egress.tau_real) else expect.GAMMA_BUDGET
        self.assertTrue(
            expect.close(shim.rf, p.rf_out, label_budget),
            f"{what}: rf out {decode(shim.rf):.5g}, the paper's rf' · gamma = {p.rf_out:.5g}",
        )
        if p.rri_out is not None:
            self.assertTrue(
                expect.close(shim.rri, p.rri_out, expect.GAMMA_BUDGET),
                f"{what}: rri out {decode(shim.rri):.5g}, Algorithm 4 gives {p.rri_out:.5g}",
            )
            fields = dict(fields, rri=shim.rri)
        return self.expect_frame(rewritten(pkt, rf=shim.rf, **fields), got=got, what=what)

    def first_survivor(self, pkt: Packet, tries: int = 60) -> tuple[bytes, expect.Paper]:
        """Send until one copy is forwarded (gamma < 1 states); that copy and its outcome."""
        for _ in range(tries):
            got, o, _ = self.one(pkt, timeout=0.3)
            if got is not None:
                return got, o
        self.fail(f"none of {tries} packets was forwarded")

    def f_of(self, pkt: Packet) -> int:
        """F as the target's estimator reads it for this packet (the f_est register, spec §7.2
        stage 3), with OUT uncongested so that the packet is forwarded. The estimator forgets
        between packets, so every packet of the same length and label reads the same F."""
        key = (claim(pkt), label_in(pkt))
        if key not in self._f_cache:
            self.set_egress(expect.Egress())
            self.send(pkt)
            self.assertIsNotNone(self.recv(OUT), "the F probe was not forwarded")
            self._f_cache[key] = self.f_est()
        return self._f_cache[key]


# --- packet builders (scapy, the ffs.lab.scapy_ffs shim layer) --------------------------------------


def udp_payload(n: int) -> Packet:
    return UDP(sport=40000, dport=5001, chksum=0) / bytes(n)


def ffs_v4(
    rf: int,
    flags: str | int = "R",
    rri: int = constants.CODE_MAX,
    echo: int = 0x1234,
    ip_len: int = 500,
    dst: str = DST4,
    options: bytes = b"",
    vlan: int | None = None,
    **shim,
) -> Packet:
    """Ether / [802.1Q] / IPv4 (IHL from the options) / FFS / UDP, IP total length `ip_len`."""
    pkt = (
        _l2(vlan)
        / IP(src=SRC4, dst=dst, id=7, ttl=64, options=options)
        / FFS(flags=flags, rf=rf, rri=rri, rri_echo=echo, **shim)
        / udp_payload(0)
    )
    return Ether(bytes(pkt / bytes(ip_len - len(pkt[IP]))))


def _l2(vlan: int | None) -> Packet:
    l2 = Ether(src=MAC_SRC, dst=MAC_DST)
    return l2 / Dot1Q(vlan=vlan) if vlan is not None else l2


def ffs_v6(
    rf: int,
    flags: str | int = "R",
    rri: int = constants.CODE_MAX,
    echo: int = 0x1234,
    payload_len: int = 500,
    dst: str = DST6,
    vlan: int | None = None,
    **shim,
) -> Packet:
    pkt = (
        _l2(vlan)
        / IPv6(src=SRC6, dst=dst, hlim=64)
        / FFS(flags=flags, rf=rf, rri=rri, rri_echo=echo, **shim)
        / udp_payload(0)
    )
    return Ether(bytes(pkt / bytes(payload_len - len(pkt[IPv6].payload))))


def plain_v4(ip_len: int = 500, dst: str = DST4) -> Packet:
    pkt = Ether(src=MAC_SRC, dst=MAC_DST) / IP(src=SRC4, dst=dst, id=7, ttl=64) / udp_payload(0)
    return Ether(bytes(pkt / bytes(ip_len - len(pkt[IP]))))


def plain_v6(payload_len: int = 500, dst: str = DST6) -> Packet:
    pkt = Ether(src=MAC_SRC, dst=MAC_DST) / IPv6(src=SRC6, dst=dst, hlim=64) / udp_payload(0)
    return Ether(bytes(pkt / bytes(payload_len - len(pkt[IPv6].payload))))


def claim(pkt: Packet) -> tuple[int, bool, bool]:
    """What the pipeline weighs (spec §4): the IP length and the header class, from which len_log
    knows the frame the headers claim, FCS included."""
    if IP in pkt:
        return pkt[IP].len, False, Dot1Q in pkt
    return pkt[IPv6].plen, True, Dot1Q in pkt


def claimed_len(pkt: Packet) -> int:
    """The frame the headers claim, FCS included (spec §4)."""
    return tables.claimed_frame_len(*claim(pkt))


def shim_valid(pkt: Packet) -> bool:
    """ffs_state = 1 (spec §7.1): a shim of version 1 with the reserved flag clear."""
    return (
        FFS in pkt and pkt[FFS].version == constants.SHIM_VERSION and not int(pkt[FFS].flags) & constants.FLAG_RESERVED
    )


def code_value(code: int) -> float:
    """The real number a label code stands for (spec §3), 0xFFFF as ∞."""
    return float("inf") if code == constants.CODE_MAX else decode(code)


def label_in(pkt: Packet, trust: bool = True) -> float:
    """The label the node uses (spec §3.1, §6): a valid shim's rf, clamped to the admitted range
    [2^-8, 2^16], on a trusted port, else the default 1.0."""
    if trust and shim_valid(pkt):
        return min(max(decode(pkt[FFS].rf), expect.LABEL_MIN), expect.LABEL_MAX)
    return 1.0


def rewritten(pkt: Packet, **fields: int) -> Packet:
    """`pkt` with shim fields changed (IP headers, checksum included, are not touched by a rewrite)."""
    out = Ether(bytes(pkt))
    for k, v in fields.items():
        setattr(out[FFS], k, v)
    return Ether(bytes(out))
