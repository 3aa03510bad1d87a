# SPDX-License-Identifier: Apache-2.0
"""The bring-up self-test: what this switch's `eg_intr_md.pkt_length` counts, measured, and the
frame check configured for it (docs/spec.md §7.3, "The length basis"; docs/hardware.md).

The frame check compares a frame's bytes with its IP length. Two facts decide what "its bytes"
read on a chip: whether pkt_length counts the 4-byte FCS, and whether it is the length the frame
arrived with or the one the ingress deparser emitted (a shim inserted at an insert port). Both are
known on tofino-model, not on hardware, so the agent measures them at start:

  frames of one size, sent on a Linux interface wired to a switch port (the CPU Ethernet port of
  a Tofino, a veth of tofino-model) and routed to one egress, each with its IP length short of
  its bytes by s
  -> under the strict basis (arrival length, FCS counted) a frame passes exactly when its excess
     e + s is FCS_LEN: the first s that passes gives e, the excess of a truthful frame
  -> e names the basis (FCS counted or not; on an insert port, arrival or deparsed length)
  -> the frame_basis default action, then a check that truthful frames pass and frames lying by
     FCS_LEN either way are dropped; any other outcome refuses with one line and leaves the P4
     default (the check accepts both FCS bases) in place.

Each probe is one frame and one read of the egress's `accepted` and `malformed` counters: other
traffic toward the egress while it runs shows as more frames than were sent, and is retried.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

from ffs.core import constants, frames, p4names
from ffs.core.entries import CounterValue, Update, counter_delta
from ffs.core.tables import frame_basis_update
from ffs.core.topology import Node
from ffs.driver.base import Driver, DriverError

log = logging.getLogger("ffs.agent")

Send = Callable[[bytes], None]

FRAME_LEN = 514  # no padding rule of the frame check applies to it (spec §7.3)
SRC = "192.0.2.1"  # TEST-NET-1: the probes are not any host's traffic
# the truthful frame's excess under the strict basis, for each basis the program can configure
BASES_PLAIN: dict[int, tuple[bool, bool | None]] = {constants.FCS_LEN: (True, None), 0: (False, None)}
BASES_INSERTED: dict[int, tuple[bool, bool | None]] = {
    constants.FCS_LEN: (True, False),
    0: (False, False),
    constants.SHIM_LEN + constants.FCS_LEN: (True, True),
    constants.SHIM_LEN: (False, True),
}
SWEEP = 24  # excesses beyond the known bases are looked for this far, to name the difference
SETTLE_S = 0.02  # after a probe is counted, the least wait for a frame counted beside it
ATTEMPTS = 3  # probes disturbed by other traffic toward the egress are sent again this often


def basis_update(fcs_counted: bool, deparsed: bool) -> Update:
    """The frame_basis default action for a measured basis."""
    return frame_basis_update(constants.FCS_COUNTED if fcs_counted else constants.FCS_NOT_COUNTED, deparsed)


class SelftestError(Exception):
    """The self-test could not measure, or found a switch the frame check cannot be set for."""


@dataclass(frozen=True)
class Basis:
    """What pkt_length counts: the FCS or not; the deparsed length (True), the arrival length
    (False), or not measured (None: no shim was inserted on the self-test's path)."""

    fcs_counted: bool
    deparsed: bool | None

    def describe(self) -> str:
        fcs = "counts the FCS" if self.fcs_counted else "does not count the FCS"
        if self.deparsed is None:
            return f"pkt_length {fcs}; arrival or deparsed length not measured (no insert port on the path)"
        length = "the length the ingress deparser emitted" if self.deparsed else "the length the frame arrived with"
        return f"pkt_length {fcs} and is {length}"


@dataclass(frozen=True)
class SelftestResult:
    basis: Basis
    excess: int  # a truthful frame's pkt_length (+ the arrival change) minus its L2 + IP length
    ingress: str
    egress: str
    frames: int  # frames sent, probes and checks

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["summary"] = self.basis.describe()
        return d


class RawSender:
    """Frames out of a Linux interface (AF_PACKET): the port the switch receives them on is the
    one the interface is wired to. Needs CAP_NET_RAW."""

    def __init__(self, iface: str) -> None:
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
            self.sock.bind((iface, 0))
        except PermissionError:
            raise SelftestError(f"cannot send on {iface}: the self-test needs CAP_NET_RAW") from None
        except OSError as e:
            raise SelftestError(f"cannot send on {iface}: {e.strerror or e}") from None

    def __call__(self, frame: bytes) -> None:
        self.sock.send(frame)

    def close(self) -> None:
        self.sock.close()


class _Probe:
    """One frame at a time toward `port`, and whether the frame check let it through."""

    def __init__(self, driver: Driver, send: Send, port: int, dst: str, timeout_s: float) -> None:
        self.driver, self.send, self.port, self.dst, self.timeout_s = driver, send, port, dst, timeout_s
        self.sent = 0

    def _read(self) -> tuple[CounterValue, CounterValue]:
        acc = self.driver.read_counters(p4names.ACCEPTED.name, [self.port])[self.port]
        bad = self.driver.read_counters(p4names.MALFORMED.name, [self.port])[self.port]
        return acc, bad

    def _counted(self, acc0: CounterValue, bad0: CounterValue) -> tuple[int, int]:
        acc, bad = self._read()
        return counter_delta(acc, acc0).packets, counter_delta(bad, bad0).packets

    def passes(self, short: int) -> bool:
        """Send a frame whose IP length is `short` bytes below what it carries (negative: above):
        True if it left the egress, False if the frame check dropped it."""
        good = frames.ipv4_frame(SRC, self.dst, FRAME_LEN - constants.ETH_HDR_LEN)
        frame = frames.lie_ip_len(good, FRAME_LEN - constants.ETH_HDR_LEN - short)
        for _ in range(ATTEMPTS):
            acc0, bad0 = self._read()
            t0 = time.monotonic()
            self.send(frame)
            self.sent += 1
            while self._counted(acc0, bad0) == (0, 0):
                if time.monotonic() - t0 > self.timeout_s:
                    raise SelftestError(
                        f"a frame sent toward port {self.port} ({self.dst}) did not reach its frame check "
                        f"within {self.timeout_s:g} s: is the interface wired to the port named, and routed?"
                    )
                time.sleep(0.005)
            # another frame counted first would pass for the probe's: as long again for a second one
            time.sleep(max(SETTLE_S, time.monotonic() - t0))
            n_acc, n_bad = self._counted(acc0, bad0)
            if n_acc + n_bad == 1:
                return n_acc == 1
            log.info("selftest: other traffic reached port %d during a probe; sending it again", self.port)
        raise SelftestError(
            f"other traffic toward port {self.port} kept disturbing the self-test: run it on a quiet port"
        )


def _excess(probe: _Probe, known: dict[int, tuple[bool, bool | None]]) -> int | None:
    """The truthful frame's excess under the strict basis: the known bases first, then a sweep."""
    order = list(known) + [e for e in range(-SWEEP, SWEEP + 1) if e not in known]
    for e in order:
        if probe.passes(constants.FCS_LEN - e):
            return e
    return None


def run_selftest(
    driver: Driver,
    send: Send,
    *,
    egress_port: int,
    dst: str,
    inserts: bool,
    ingress: str = "",
    egress: str = "",
    timeout_s: float = 2.0,
) -> SelftestResult:
    """Measure the basis on the path to `egress_port` and configure the frame check for it; on
    any refusal the frame check is left at its P4 default (both FCS bases) and SelftestError says why."""
    probe = _Probe(driver, send, egress_port, dst, timeout_s)
    known = BASES_INSERTED if inserts else BASES_PLAIN
    try:
        driver.write([basis_update(fcs_counted=True, deparsed=False)])  # the strict probe basis
        e = _excess(probe, known)
        if e is None:
            raise SelftestError(
                f"no frame passed the frame check with its IP length within {SWEEP} bytes of its own: "
                "pkt_length is not a frame length the program knows"
            )
        if e not in known:
            where = "with a shim inserted" if inserts else "as it arrived"
            raise SelftestError(
                f"pkt_length reads {e:+d} bytes beside a {FRAME_LEN}-byte frame {where} (expected one of "
                f"{', '.join(f'{k:+d}' for k in sorted(known))}): the frame check has no basis for it"
            )
        fcs_counted, deparsed = known[e]
        basis = Basis(fcs_counted, deparsed)
        driver.write([basis_update(fcs_counted, bool(deparsed))])
        if not all(probe.passes(0) for _ in range(3)):
            raise SelftestError(f"truthful frames failed the frame check configured for: {basis.describe()}")
        for lie in (constants.FCS_LEN, -constants.FCS_LEN):
            if probe.passes(lie):
                raise SelftestError(
                    f"a frame lying by {lie:+d} bytes passed the frame check configured for: {basis.describe()}"
                )
    except (SelftestError, DriverError):
        try:
            driver.clear_table(p4names.FRAME_BASIS.name)  # the P4 default: the arrival length, either FCS
        except DriverError as e:
            log.error("selftest: the frame check's default basis could not be restored: %s", e)
        raise
    return SelftestResult(basis, e, ingress, egress, probe.sent)


def path_from(node: Node, ingress: str) -> tuple[str, int, str, bool]:
    """The self-test's path from the interface `ingress`: an IPv4 route of the node that leaves by
    another interface, one toward a managed egress first (only a managed pair's frames get a shim at
    an insert port). Its egress, that egress's device port, an address it routes, and whether the
    ingress inserts a shim into the frames."""
    if ingress not in node.interfaces:
        raise SelftestError(
            f"node {node.name} has no interface {ingress!r} (one of {', '.join(sorted(node.interfaces))})"
        )
    routes = [
        r for r in node.routes if r.interface != ingress and ipaddress.ip_network(r.prefix, strict=False).version == 4
    ]
    if not routes:
        raise SelftestError(f"node {node.name} has no IPv4 route leaving by another interface than {ingress}")
    r = min(routes, key=lambda r: r.interface not in node.fairness)  # the first toward a managed egress
    net = ipaddress.ip_network(r.prefix, strict=False)
    dst = net.network_address + 1 if net.num_addresses > 2 else net.network_address
    inserts = node.interfaces[ingress].insert and r.interface in node.fairness
    return r.interface, node.interfaces[r.interface].port, str(dst), inserts


def run_on_node(driver: Driver, node: Node, ingress: str, send: Send, timeout_s: float = 2.0) -> SelftestResult:
    """The self-test from `ingress` (the interface `send` reaches) along the node's own routes."""
    egress, port, dst, inserts = path_from(node, ingress)
    result = run_selftest(
        driver,
        send,
        egress_port=port,
        dst=dst,
        inserts=inserts,
        ingress=ingress,
        egress=egress,
        timeout_s=timeout_s,
    )
    log.info(
        "selftest ingress=%s egress=%s frames=%d excess=%+d: %s; the frame check is set for it",
        ingress,
        egress,
        result.frames,
        result.excess,
        result.basis.describe(),
    )
    return result
