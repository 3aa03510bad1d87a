"""The shared base of the FFS PTF tests: one Driver to the target, helpers that program it with
the project's own generators, and a tearDown that restores every table a test touched.

Targets (test param `target`): `model` — the software switch, driven over its gRPC control service
at `control` (e.g. unix:/tmp/ffs-ptf/switch.sock); `tofino` — bf_switchd (tofino-model or hardware)
over BF-Runtime gRPC at `grpc_addr`. Test bodies only use the Driver interface.
"""

from __future__ import annotations

import math

import ptf
import ptf.testutils as tu
from ptf.base_tests import BaseTest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ffs import constants as C
from ffs import p4names as N
from ffs import tables as T
from ffs.driver.base import Exact, LpfSpec, Lpm, TableEntry, Update
from ffs.scapy_ffs import FFS  # noqa: F401 - binds the shim to IPv4/IPv6 protocol 253

IN, OUT, OTHER = 1, 2, 3  # device ports of the port map
DST = "10.0.2.7"
SCALE = 4
# An LPF that forgets between test packets (ms apart): its output is the last weight, so F and
# rf' are deterministic (spec §8: y <- y e^(-dt/tau) + x).
FORGETFUL = LpfSpec("RATE", 1.0, 1.0, SCALE)


def params() -> dict:
    return tu.test_params_get()


def make_driver():
    p = params()
    if p.get("target", "model") == "model":
        from ffs.driver.model import ModelDriver

        return ModelDriver(p.get("control", "unix:/tmp/ffs-ptf/switch.sock"))
    from ffs.driver.bfrt import BfrtDriver

    return BfrtDriver(p.get("grpc_addr", "localhost:50052"))


def packets(small: int, large: int) -> int:
    """Test sizes per target: tofino-model manages a few thousand packets per second."""
    return small if params().get("target", "model") == "tofino" else large


class FfsTest(BaseTest):
    touched = (N.PAIRS, N.EGRESS_PARAMS, N.IPV4_ROUTES, N.IPV6_ROUTES, N.EGRESS_PORTS)

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = ptf.dataplane_instance
        self.dataplane.flush()
        self.driver = make_driver()
        self.driver.connect(timeout_s=60)
        self.saved = {t.name: self.driver.read_table(t.name) for t in self.touched}
        self.saved_defaults = {t.name: self.driver.read_default(t.name) for t in self.touched}
        self.saved_ports = self.driver.read_table(N.PORT_METADATA.name)
        if len(self.driver.read_table(N.WEIGHT.name)) != C.WEIGHT_KEYS:
            for t in (N.LEN_LOG, N.WEIGHT, N.F_LOG, N.GAMMA):
                self.driver.clear_table(t.name)
            self.driver.write(T.static_updates())
        self.driver.set_lpf_spec(N.F_LPF.name, range(16), FORGETFUL)
        self.base_setup()

    def tearDown(self) -> None:
        for t in self.touched:
            self.driver.clear_table(t.name)
        ups = [Update("insert", e) for name in self.saved for e in self.saved[name]]
        ups += [Update("set_default", TableEntry(n, {}, e.action, e.params)) for n, e in self.saved_defaults.items()]
        self.driver.clear_table(N.PORT_METADATA.name)
        ups += [Update("insert", e) for e in self.saved_ports]
        self.driver.write(ups)
        self.driver.close()
        BaseTest.tearDown(self)

    # -- programming helpers -------------------------------------------------------------------
    def base_setup(self, trust: int = 1, insert: int = 0) -> None:
        """Ports 1..3 known, 10.0.2.0/24 -> port 2, pair (1 -> 2) managed with pid 5."""
        for t in self.touched:
            self.driver.clear_table(t.name)
        self.driver.clear_table(N.PORT_METADATA.name)
        ups = [self.port(p, trust=trust, insert=insert) for p in (IN, OUT, OTHER)]
        ups.append(Update("insert", TableEntry(N.IPV4_ROUTES.name, {"dst_addr": Lpm(0x0A000200, 24)}, "route", {"port": OUT})))
        ups.append(Update("insert", TableEntry(N.IPV6_ROUTES.name, {"dst_addr": Lpm(0xFD00 << 112, 16)}, "route", {"port": OUT})))
        ups.append(self.pair(0))
        ups.append(Update("insert", TableEntry(N.EGRESS_PARAMS.name, {"egress_port": Exact(OUT)}, "set_egress", T.egress_params(None, False, None))))
        self.driver.write(ups)
        self.driver.reset_counters(N.PAIR_BYTES.name)
        self.driver.reset_counters(N.PAIR_DROPS.name)
        self.driver.reset_counters(N.ACCEPTED.name)
        self.driver.reset_counters(N.EVENTS.name)

    def port(self, p: int, trust: int = 1, insert: int = 0, kind: str = "insert") -> Update:
        return Update(kind, TableEntry(N.PORT_METADATA.name, {N.PORT_METADATA.key.name: Exact(p)}, None,
                                       {"ifindex": p, "trust": trust, "insert": insert}))

    def pair(self, lm: int, pid: int = 5, kind: str = "insert") -> Update:
        return Update(kind, TableEntry(N.PAIRS.name, {"ingress_port": Exact(IN), "egress_port": Exact(OUT)}, "set_pair", {"pid": pid, "lm": lm}))

    def set_lm(self, lm: int) -> None:
        self.driver.write([self.pair(lm, kind="modify")])

    def set_tau(self, ltau: int, congested: int = 1, lcr: int = C.CODE_MAX) -> None:
        self.driver.write([Update("modify", TableEntry(N.EGRESS_PARAMS.name, {"egress_port": Exact(OUT)}, "set_egress",
                                                       {"ltau": ltau, "ntau": C.WIDE_OFFSET - ltau, "congested": congested, "lcr": lcr}))])

    def lm_for(self, rf_code: int, rf_norm_code: int, ip_len: int) -> int:
        """The lm that makes a packet normalize to exactly `rf_norm_code` with a forgetful LPF
        (spec §7.2: rf' = rf - lm + log F, F = w >> s, w from the generated tables)."""
        llen = next(T.llen_code(lo, hi) for v, m, lo, hi in T.log_buckets(16) if ip_len & m == v)
        lw = max(llen - rf_code, 0)
        f = (T.weight_value(lw) if lw < C.WEIGHT_KEYS else C.WEIGHT_MAX) >> SCALE
        lf = next(T.bucket_log(lo, hi) for v, m, lo, hi in T.log_buckets(32) if f & m == v)
        return rf_code + lf - rf_norm_code

    # -- packets -------------------------------------------------------------------------------
    def ffs_pkt(self, rf: int, flags: str = "R", rri: int = C.CODE_MAX, echo: int = 0x1234, ip_len: int = 500, **ip):
        pkt = Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") / IP(src="10.0.1.1", dst=DST, **ip) / \
            FFS(flags=flags, rf=rf, rri=rri, rri_echo=echo) / UDP(sport=4000, dport=5001, chksum=0)
        pad = ip_len - len(pkt[IP])
        return pkt / bytes(max(0, pad))

    def counter(self, name: str, index: int):
        return self.driver.read_counters(name, [index])[index]

    def count_received(self, port: int, n_sent: int, timeout: float = 1.0) -> int:
        got = 0
        while True:
            r = tu.dp_poll(self, port_number=port, timeout=timeout)
            if not isinstance(r, self.dataplane.PollSuccess):
                return got
            got += 1
            if got >= n_sent:
                return got


def binomial_bounds(n: int, p: float, sigmas: float = 4.0) -> tuple[float, float]:
    s = math.sqrt(n * p * (1 - p))
    return n * p - sigmas * s, n * p + sigmas * s
