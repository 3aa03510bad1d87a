# SPDX-License-Identifier: Apache-2.0
"""The node's front-panel ports on a Tofino (`$PORT`): brought up from the topology, reconciled like
the tables, reported in status and metrics.

An interface that names its front-panel port (`fp: 1/0`) gets a port at the speed of its capacity,
with its FEC and autonegotiation (ffs.core.ports). At start-up the agent maps each name to its device
port through `$PORT_STR_INFO` (and refuses a topology whose `port` says otherwise), reads what
`$PORT` holds, and writes only the difference: a missing port is added, a port at another speed,
FEC or autonegotiation is deleted and added again (the only way BF-Runtime changes them), a
disabled one is enabled, and a port that is right is never touched, so it never flaps.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ffs.core import ports
from ffs.core.ports import PortError, PortSpec
from ffs.core.topology import Node
from ffs.driver.base import Driver, DriverError

log = logging.getLogger("ffs.agent")


@dataclass
class PortStatus:
    interface: str
    fp: str
    dev_port: int
    pipe: int
    speed: str
    enabled: bool
    up: bool


class FrontPanel:
    def __init__(self, driver: Driver, node: Node) -> None:
        self.driver, self.node = driver, node
        self.specs: dict[str, tuple[str, PortSpec]] = {}  # interface -> (front-panel name, spec)

    def resolve(self) -> dict[str, tuple[str, PortSpec]]:
        """Each front-panel interface's name and port spec, its device port checked against
        `$PORT_STR_INFO`."""
        out = {}
        for name, i in sorted(self.node.interfaces.items()):
            if i.fp is None:
                continue
            dev = self.driver.port_of(i.fp)
            if dev != i.port:
                raise PortError(
                    f"interface {name}: front-panel port {i.fp} is device port {dev} on this switch, "
                    f"the topology says port {i.port}"
                )
            out[name] = (i.fp, ports.spec(dev, i.speed, i.fec, i.autoneg, i.mtu))
        self.specs = out
        return out

    def reconcile(self) -> int:
        """Bring the ports to the topology, writing only what differs; the number of ports written."""
        specs = self.resolve()
        if not specs:
            return 0
        held = self.driver.read_ports(s.dev_port for _, s in specs.values())
        adds: list[PortSpec] = []
        enables: list[int] = []
        limits: list[PortSpec] = []
        readds = 0
        for name, (fp, s) in specs.items():
            h = held.get(s.dev_port)
            if h is None:
                adds.append(s)
            elif (h.spec.speed, h.spec.fec, h.spec.autoneg) != (s.speed, s.fec, s.autoneg):
                self._readd(name, fp, h.spec, s)
                readds += 1
            else:
                if h.spec.frame_limit != s.frame_limit:  # the MAC's limit changes in place, no flap
                    limits.append(s)
                if not h.spec.enable:
                    enables.append(s.dev_port)
        if adds or enables or limits:
            try:
                self.driver.write_ports(adds=adds, enables=enables, limits=limits)
            except DriverError as e:
                raise PortError(
                    f"the switch refused the ports {', '.join(fp for fp, s in specs.values() if s in adds)} "
                    f"or their enable or frame limit: {e}"
                ) from None
        written = {s.dev_port for s in adds + limits} | set(enables)
        if written or readds:
            log.info(
                "ports: %d added, %d re-added, %d enabled, %d given their frame limit, %d already right",
                len(adds),
                readds,
                len(enables),
                len(limits),
                len(specs) - len(written) - readds,
            )
        return len(written) + readds

    def _readd(self, name: str, fp: str, old: PortSpec, new: PortSpec) -> None:
        """Speed, FEC and autonegotiation change only by deleting the port and adding it again; if
        the switch refuses the new port (a 100G port on lane 1, say), the old one is put back."""
        log.warning(
            "port %s (%s, device port %d) re-added: %s %s %s -> %s %s %s",
            fp,
            name,
            new.dev_port,
            old.speed,
            old.fec,
            old.autoneg,
            new.speed,
            new.fec,
            new.autoneg,
        )
        self.driver.write_ports(deletes=[new.dev_port])
        try:
            self.driver.write_ports(adds=[new])
        except DriverError as e:
            self.driver.write_ports(adds=[old])
            raise PortError(
                f"interface {name}: the switch refused port {fp} at {new.speed} {new.fec} {new.autoneg} "
                f"({e}); it is back as it was, {old.speed}"
            ) from None

    def status(self) -> list[PortStatus]:
        """The oper state of every front-panel interface (one `$PORT` read)."""
        if not self.specs:
            return []
        held = self.driver.read_ports(s.dev_port for _, s in self.specs.values())
        out = []
        for name, (fp, s) in sorted(self.specs.items()):
            h = held.get(s.dev_port)
            out.append(
                PortStatus(
                    name,
                    fp,
                    s.dev_port,
                    ports.pipe_of(s.dev_port),
                    h.spec.speed if h else "absent",
                    bool(h and h.spec.enable),
                    bool(h and h.up),
                )
            )
        return out
