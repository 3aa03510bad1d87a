# SPDX-License-Identifier: Apache-2.0
"""ffs-agent as a process: the τ loop on a timer, the slow read-back of the switch, the control
API, metrics, clean shutdown.

Everything that writes the switch (the τ loop, a matrix change, the read-back's repair) runs under
one lock, so a matrix change never interleaves with a τ push. Reads (status, tau, matrix show,
log) take no lock: they answer from the last snapshot even while a switch call hangs.
"""

from __future__ import annotations

import dataclasses
import logging
import platform
import signal
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable

import ffs
from ffs.agent.api import ControlServer, Peer
from ffs.agent.core import Agent, tau_display
from ffs.agent.metrics import Metrics
from ffs.agent.notify import Notifier
from ffs.core.allocator import allocate
from ffs.core.api_client import ApiError
from ffs.core.jsonsafe import finite
from ffs.core.matrix import MatrixError, diff_matrices, parse_matrix, parse_matrix_text
from ffs.core.topology import Hop, Stream, Topology
from ffs.core.units import parse_rate
from ffs.driver.base import Driver, DriverError

log = logging.getLogger("ffs.agent")


def _field(req: dict[str, Any], key: str) -> Any:
    if key not in req:
        raise ApiError(f"{req['op']}: missing {key!r}")
    return req[key]


def _proposed(req: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The matrix of a load, diff or plan: a file's text as ffsctl sends it ("text", with the file's
    name as "source"), or the matrix itself ("fairness"); rates are parsed here, nowhere else."""
    if "text" in req:
        text, source = req["text"], req.get("source", "matrix")
        if not isinstance(text, str) or not isinstance(source, str):
            raise ApiError(f"{req['op']}: 'text' and 'source' are strings")
        return parse_matrix_text(text, source)
    return parse_matrix(_field(req, "fairness"))


def build_info(driver: Driver) -> dict[str, str]:
    """What this agent and its switch run: `ffsctl status` and `ffsctl fleet plan` show it, the
    metric ffs_build_info carries it."""
    return {"agent_version": ffs.__version__, "python": platform.python_version(), "program": driver.program_identity()}


@dataclass
class ServiceConfig:
    period_s: float = 0.1
    socket: str | None = None
    group: str | None = None
    metrics_port: int | None = None  # None: no metrics server
    metrics_address: str = "127.0.0.1"  # loopback unless the operator asks for another address
    check_period_s: float = 10.0  # read back the owned tables and repair what changed (0: never)


class AgentService:
    def __init__(self, agent: Agent, config: ServiceConfig, notifier: Notifier | None = None) -> None:
        self.agent = agent
        self.config = config
        self.lock = threading.RLock()
        self.stop_event = threading.Event()
        self.api: ControlServer | None = None
        self.metrics: Metrics | None = None
        # systemd's READY, STATUS, STOPPING and watchdog, when it runs the agent
        self.notifier = notifier if notifier is not None else Notifier()
        self.build: dict[str, str] = {}
        self.handlers: dict[str, Callable[[dict[str, Any], Peer | str], Any]] = {
            "status": self._status,
            "tau_show": self._tau_show,
            "selftest": self._selftest,
            "matrix_show": self._matrix_show,
            "matrix_plan": self._matrix_plan,
            "matrix_diff": self._matrix_diff,
            "log": self._log,
            "matrix_set": self._matrix_set,
            "matrix_load": self._matrix_load,
        }

    # -- requests ------------------------------------------------------------------------------
    def handle(self, req: dict[str, Any], who: Peer | str) -> Any:
        """One API request (docs/control-plane.md); `who` is the peer from SO_PEERCRED."""
        handler = self.handlers.get(req["op"])
        if handler is None:
            raise ApiError(f"unknown op {req['op']!r}")
        return handler(req, who)

    # read-only requests: no lock, no switch call (snapshot and matrix are replaced, never mutated)
    def _status(self, req: dict[str, Any], who: Peer | str) -> Any:
        a = self.agent
        snap = a.snapshot.to_dict()
        for e in snap["egresses"]:
            e["state"] = "congested" if e["congested"] else "uncongested"
            e["tau_display"] = tau_display(e["tau"], e["congested"])
        return finite({"node": a.node.name, **self.build, **snap})

    def _selftest(self, req: dict[str, Any], who: Peer | str) -> Any:
        """What the bring-up self-test found and configured (ffs.agent.selftest), or that none ran."""
        r = self.agent.selftest
        if r is None:
            return {
                "measured": False,
                "summary": (
                    "no self-test ran at start (ffs-agent --selftest-iface): "
                    "the frame check accepts pkt_length with or without the FCS"
                ),
            }
        return {"measured": True, **r.as_dict()}

    def _tau_show(self, req: dict[str, Any], who: Peer | str) -> Any:
        return finite(
            [
                {
                    "egress": e.egress,
                    "tau": e.tau,
                    "congested": e.congested,
                    "state": "congested" if e.congested else "uncongested",
                    "tau_display": tau_display(e.tau, e.congested),
                }
                for e in self.agent.snapshot.egresses
            ]
        )

    def _matrix_show(self, req: dict[str, Any], who: Peer | str) -> Any:
        return {"node": self.agent.node.name, "fairness": self.agent.fairness}

    def _matrix_plan(self, req: dict[str, Any], who: Peer | str) -> Any:
        return finite(self.plan(_proposed(req)))

    def _matrix_diff(self, req: dict[str, Any], who: Peer | str) -> Any:
        """What loading the proposed matrix would change (validated as a load validates it)."""
        a = self.agent
        return {"changes": diff_matrices(a.fairness, a.validate(_proposed(req)))}

    def _log(self, req: dict[str, Any], who: Peer | str) -> Any:
        store = self.agent.store
        if store is None:
            return []
        try:
            limit = int(req.get("limit", 50))
        except (TypeError, ValueError, OverflowError):
            raise ApiError("limit must be an integer") from None
        return store.read_audit(limit)

    # changes: under the lock, so they never interleave with a τ push
    def _matrix_set(self, req: dict[str, Any], who: Peer | str) -> Any:
        ingress, egress, rate_text = (_field(req, k) for k in ("ingress", "egress", "rate"))
        try:
            rate = parse_rate(rate_text)
        except ValueError as e:
            raise MatrixError(f"M({ingress},{egress}): {e}") from None
        with self.lock:
            new = {e: dict(col) for e, col in self.agent.fairness.items()}
            new.setdefault(str(egress), {})[str(ingress)] = rate
            return self._apply(new, who)

    def _matrix_load(self, req: dict[str, Any], who: Peer | str) -> Any:
        proposed = _proposed(req)
        with self.lock:
            return self._apply(proposed, who)

    def _apply(self, new: dict[str, dict[str, float]], who: Peer | str) -> Any:
        name, uid = (who.name, who.uid) if isinstance(who, Peer) else (str(who), None)
        try:
            return {"changes": self.agent.apply_matrix(new, name, uid)}
        except DriverError as e:
            raise ApiError(f"the switch refused the change, nothing applied: {e}") from None

    def plan(self, proposed: dict[str, dict[str, float]]) -> dict[str, Any]:
        """The exact FFS allocation of the measured pair demands under a proposed matrix."""
        a = self.agent
        fairness = a.validate(proposed)
        node = dataclasses.replace(a.current_node(), fairness=fairness)
        streams = []
        for p in a.snapshot.pairs:
            if p.egress in fairness and p.rate_bps > 0:
                streams.append(
                    Stream(
                        f"{p.ingress}->{p.egress}",
                        (Hop(node.name, p.ingress, p.egress),),
                        p.rate_bps,
                        p.rate_bps,
                        p.rate_bps,
                    )
                )
        alloc = allocate(Topology("plan", {node.name: node}, tuple(streams)))
        why = None
        if not streams:
            why = (
                "no measurement yet (the agent has not completed a period)"
                if not a.snapshot.pairs
                else "no pair toward the proposed egresses carries traffic now: the plan predicts from measured demands"
            )
        return {
            "why_empty": why,
            "pairs": [{"pair": s.name, "demand": s.demand, "rate": s.rate} for s in alloc.streams],
            "egresses": [
                {
                    "egress": e.egress,
                    "target": e.target,
                    "offered": e.offered,
                    "tau": e.tau,
                    "state": "uncongested" if e.tau is None or e.tau == float("inf") else "congested",
                    "tau_display": tau_display(e.tau, not (e.tau is None or e.tau == float("inf"))),
                }
                for e in alloc.egresses
            ],
        }

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> None:
        """Serve until SIGINT/SIGTERM. The control socket comes up last: once it answers, the switch
        is programmed and the metrics are served (scripts wait for the socket; systemd is told READY)."""
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self.stop_event.set())
        if self.config.metrics_port:
            self.metrics = Metrics(self.config.metrics_port, self.config.metrics_address)
            log.info("metrics on http://%s:%d/metrics", self.config.metrics_address, self.config.metrics_port)
        self._identify()
        self.agent.min_interval_s = self.config.period_s / 2
        snap = self.agent.step()  # the first reading (a baseline): status and metrics have rows from the start
        if self.metrics is not None:
            self.metrics.update(snap)
        if self.config.socket:
            self.api = ControlServer(self.config.socket, self.handle, self.config.group)
            self.api.start()
        self.notifier.ready(
            f"node {self.agent.node.name}: {len(snap.egresses)} egresses, every {self.config.period_s * 1e3:g} ms"
        )
        self.agent.on_step = lambda _snap: self.notifier.watchdog()  # a hung step stops the pings
        next_t = time.monotonic()
        next_check = next_t + self.config.check_period_s
        try:
            while True:
                # wait first: every step measures over (about) one full period
                next_t += self.config.period_s
                if self.stop_event.wait(max(0.0, next_t - time.monotonic())):
                    break
                if time.monotonic() - next_t > self.config.period_s:
                    # a step or the switch stalled: start again from now rather than run the
                    # missed steps back to back, each of which would measure a sliver of time
                    next_t = time.monotonic()
                try:
                    with self.lock:
                        self.agent.ensure_installed()
                        snap = self.agent.step()
                        if self.config.check_period_s > 0 and time.monotonic() >= next_check:
                            next_check = time.monotonic() + self.config.check_period_s
                            self.agent.check()  # logs what it repaired
                    if self.metrics is not None:
                        self.metrics.update(snap)
                    for e in snap.egresses:
                        log.debug(
                            "egress=%s tau=%.4f A=%.0f R=%.0f congested=%s",
                            e.egress,
                            e.tau,
                            e.accepted_bps,
                            e.offered_bps,
                            e.congested,
                        )
                except DriverError as e:
                    log.error("switch unreachable or refusing: %s (retrying)", e)
                    self._reconnect()
        finally:
            self.notifier.stopping()
            if self.api is not None:
                self.api.stop()
            if self.metrics is not None:
                self.metrics.close()
            log.info("agent stopped")

    def _identify(self) -> None:
        """What runs here, again after each reconnect (the switch may have loaded another program)."""
        self.build = build_info(self.agent.driver)
        if self.metrics is not None:
            self.metrics.set_build(self.build)

    def _reconnect(self) -> None:
        # a loop that waits for its switch, each attempt bounded, is alive: it keeps the watchdog fed
        self.notifier.watchdog()
        try:
            self.agent.driver.close()
            self.agent.driver.connect(timeout_s=5.0)
            self._identify()
        except DriverError as e:
            log.error("reconnect failed: %s", e)
            self.notifier.status(f"switch unreachable, retrying: {e}")
            self.stop_event.wait(1.0)
