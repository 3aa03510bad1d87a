# SPDX-License-Identifier: Apache-2.0
"""ffs-agent: run the FFS control plane for one node of a topology, against a switch."""

from __future__ import annotations

import grp
import ipaddress
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any, Literal

import click

from ffs import __version__
from ffs.agent.core import Agent
from ffs.agent.notify import Notifier
from ffs.agent.owner import OwnerError, run_dir, take_ownership
from ffs.agent.selftest import RawSender, SelftestError, path_from, run_on_node
from ffs.agent.service import AgentService, ServiceConfig
from ffs.agent.state import StateStore, default_state_dir
from ffs.cli.common import CliError, CliUsageError, one_line_errors, version_option
from ffs.core.matrix import MatrixError, validate_saved
from ffs.core.ports import PortError
from ffs.core.program import LpfConfig
from ffs.core.tau import TauParams
from ffs.core.topology import Topology, TopologyError, load
from ffs.core.unixsock import can_give_to_group
from ffs.driver.base import Driver, DriverError
from ffs.driver.bfrt import BfrtDriver
from ffs.driver.model import ModelDriver
from ffs.driver.wire import default_control_address


class KeyValueFormatter(logging.Formatter):
    """One line per record: ts=... level=... logger=... msg="..." (the messages carry key=value pairs)."""

    def format(self, record: logging.LogRecord) -> str:
        msg = record.getMessage()
        if record.exc_info:
            msg += " | " + self.formatException(record.exc_info).replace("\n", " | ")
        msg = msg.replace("\\", "\\\\").replace('"', '\\"')
        ts = self.formatTime(record, '%Y-%m-%dT%H:%M:%S')
        return f"ts={ts} level={record.levelname.lower()} logger={record.name} msg=\"{msg}\""


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        rec = {
            "ts": record.created,
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            rec["exc"] = self.formatException(record.exc_info)
        return json.dumps(rec)


def make_driver(target: str, switch: str, rpc_timeout_s: float | None = None) -> Driver:
    if target == "model":
        return ModelDriver(switch) if rpc_timeout_s is None else ModelDriver(switch, rpc_timeout_s=rpc_timeout_s)
    return BfrtDriver(switch) if rpc_timeout_s is None else BfrtDriver(switch, rpc_timeout_s=rpc_timeout_s)


WAIT_NOTE_S = 5.0  # how often a start-up waiting for its switch says so


def connect_saying_so(
    driver: Driver, target: str, address: str, timeout_s: float, log: logging.Logger, notifier: Notifier | None = None
) -> None:
    """Connect within `timeout_s`, saying every few seconds what the agent waits for (a silent
    minute looks like a hang), in the log and to systemd (`systemctl status`)."""
    start = time.monotonic()
    what = "bf_switchd's BF-Runtime" if target == "tofino" else "the software switch's control service"
    while True:
        left = timeout_s - (time.monotonic() - start)
        try:
            driver.connect(timeout_s=max(0.1, min(WAIT_NOTE_S, left)))
            return
        except DriverError as e:
            if time.monotonic() - start >= timeout_s:
                raise DriverError(
                    f"{what} at {address} did not answer within {timeout_s:g} s (--connect-timeout); last attempt: {e}"
                ) from None
            waited = (
                f"waiting for {what} at {address} ({time.monotonic() - start:.0f} of {timeout_s:.0f} s; "
                "--connect-timeout)"
            )
            log.info("%s", waited)
            if notifier is not None:
                notifier.status(waited)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--topology", required=True, type=click.Path(dir_okay=False), help="Topology file (topologies/README.md)."
)
@click.option("--node", required=True, help="The node of the topology this switch is.")
@click.option(
    "--target",
    type=click.Choice(["model", "tofino"]),
    default="model",
    show_default=True,
    help="model: the software switch (ffs-switch); tofino: bf_switchd over BF-Runtime gRPC.",
)
@click.option(
    "--switch",
    "switch",
    default=None,
    help="Control address: unix:PATH or host:port (default: ffs-switch run's socket for model, "
    "localhost:50052 for tofino).",
)
@click.option("--socket", "sock", default=None, help="Unix socket of the control API for ffsctl.")
@click.option("--group", default=None, help="Let this group use the control socket (mode 0660).")
@click.option(
    "--state-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="Where the applied matrix, tau and the audit log live (default /var/lib/ffs/NODE as root, "
    "$XDG_STATE_HOME/ffs/NODE otherwise; FFS_STATE_DIR replaces the parent).",
)
@click.option(
    "--adopt-state-of",
    "adopt",
    default=None,
    metavar="OTHER",
    help="Take over saved state files that name node OTHER (a state directory copied from another "
    "switch); without it a file naming another node is refused.",
)
@click.option(
    "--no-ports",
    is_flag=True,
    help="Leave the front-panel ports to the operator (by default, on --target tofino, the agent adds and "
    "enables the ports the topology names with fp:, docs/hardware.md).",
)
@click.option(
    "--from-topology",
    is_flag=True,
    help="Start from the topology's matrix, not the last one applied (saved in the state directory; "
    "the next change replaces it; the audit log stays).",
)
@click.option("--period-ms", default=100.0, show_default=True, help="Control period.")
@click.option(
    "--lpf-time-constant-us",
    default=None,
    type=float,
    help="F estimator time constant (default: derived from the node's smallest share and largest MTU; "
    "docs/control-plane.md).",
)
@click.option(
    "--lpf-scale-down",
    type=int,
    default=None,
    help="F estimator output scale-down (0..31); default: sized for the node's fastest port (spec §4).",
)
@click.option(
    "--guard-timer-us",
    default=None,
    type=float,
    help="The queue guard's timer period (the packet generator drains each egress's virtual queue this "
    "often, docs/spec.md §7.7); default: sized for the node's ports, at most 100 us; 0 turns the guard "
    "off. tofino-model generates a few hundred packets a second: give it 100000 or more there.",
)
@click.option("--delta-fraction", default=0.01, show_default=True, help="tau damping: delta = this * target.")
@click.option("--max-decrease", default=0.25, show_default=True, help="Largest tau decrease per period.")
@click.option(
    "--wire-overhead",
    default=20,
    show_default=True,
    help="Bytes a frame costs its port beyond what the counters count (preamble and inter-frame gap): "
    "every rate, share and target is a line rate (spec §4).",
)
@click.option("--metrics-port", default=None, type=int, help="Serve Prometheus metrics on PORT (off by default).")
@click.option(
    "--metrics-address",
    default="127.0.0.1",
    show_default=True,
    help="Address of the metrics server; anything but loopback only if you mean it.",
)
@click.option(
    "--check-period-s",
    default=10.0,
    show_default=True,
    help="Read the owned tables back and repair out-of-band changes this often (0: never).",
)
@click.option(
    "--quarantine-s",
    default=10.0,
    show_default=True,
    help="Withhold from a pair whose frames lie about their length the fraction of its share that lied, "
    "for this long (0: never).",
)
@click.option(
    "--quarantine-fraction",
    default=0.01,
    show_default=True,
    help="... once its lying frames exceed this fraction of its admitted bytes in a period.",
)
@click.option(
    "--telemetry-period-s",
    default=1.0,
    show_default=True,
    help="Read the pairs' counters and F (status, metrics, quarantine) this often; the tau step reads "
    "per-egress counters only; an egress that counts a lying frame brings the read forward, at "
    "most once per period.",
)
@click.option(
    "--selftest-iface",
    default=None,
    metavar="IFACE",
    help="At start, measure what the switch's pkt_length counts by frames sent on this Linux interface "
    "(needs CAP_NET_RAW) and set the frame check for it, or refuse to start (docs/hardware.md, "
    "\"Bring-up self-test\").",
)
@click.option(
    "--selftest-port",
    default=None,
    metavar="INTERFACE",
    help="The topology interface of this node that --selftest-iface is wired to.",
)
@click.option("--connect-timeout", default=60.0, show_default=True, help="Seconds to wait for the switch.")
@click.option(
    "--rpc-timeout",
    type=float,
    default=None,
    help="Seconds one call to the switch may take (default: the driver's, 10 on BF-Runtime); "
    "tofino-models sharing a machine may need more.",
)
@click.option(
    "--log-format",
    type=click.Choice(["kv", "json"]),
    default="kv",
    show_default=True,
    help="Log lines on stderr as key=value or as JSON objects.",
)
@click.option("-v", "--verbose", count=True, help="-vv logs every period's tau per egress.")
@click.option(
    "--check",
    is_flag=True,
    help="Check the configuration (options, topology, node, state directory and saved matrix, the SDE's "
    "client for --target tofino, the directories of the locks and the socket), say so in one line, and exit "
    "without touching the switch (the unit's ExecStartPre).",
)
@version_option("ffs-agent")
@one_line_errors(
    TopologyError, MatrixError, DriverError, OwnerError, PortError, SelftestError, ValueError, OSError, error=CliError
)
def main(**o: Any) -> None:
    """Program the switch for NODE, keep tau per egress, and serve fairness-matrix changes."""
    _log_to_stderr(o["log_format"], o["verbose"])
    topo = load(o["topology"])
    topo.node(o["node"])
    _check_options(o)
    if o["selftest_port"]:
        path_from(topo.node(o["node"]), o["selftest_port"])  # a path the self-test can take, before the switch
    guard_timer_ns = _guard_timer_ns(o["guard_timer_us"])
    rpc_timeout = o["rpc_timeout"]
    if rpc_timeout is not None and not 0 < rpc_timeout <= 3600:
        raise CliUsageError("--rpc-timeout must be positive (and at most 3600 s)")
    # everything that can be wrong with the options fails before the switch is touched
    tau_params = TauParams(delta_fraction=o["delta_fraction"], max_decrease=o["max_decrease"])
    us = o["lpf_time_constant_us"]
    lpf = LpfConfig(us * 1e3 if us is not None else None, o["lpf_scale_down"])
    store = StateStore(o["state_dir"] or default_state_dir(o["node"]), adopt=o["adopt"])
    address = _switch_address(o["switch"], o["target"])
    if o["check"]:
        click.echo(check_configuration(o, topo, lpf, store, address))
        return
    notifier = Notifier()
    owner = take_ownership(address, o["sock"])  # before the switch or the socket is touched; held until exit
    try:  # every refusal from here on, and a clean stop, removes the lock files again
        driver = make_driver(o["target"], address, rpc_timeout)
        connect_saying_so(driver, o["target"], address, o["connect_timeout"], logging.getLogger("ffs.agent"), notifier)
        agent = Agent(
            driver,
            topo,
            o["node"],
            lpf=lpf,
            tau_params=tau_params,
            wire_overhead_bytes=o["wire_overhead"],
            store=store,
            quarantine_s=o["quarantine_s"],
            quarantine_fraction=o["quarantine_fraction"],
            telemetry_period_s=o["telemetry_period_s"],
            use_saved_matrix=not o["from_topology"],
            manage_ports=o["target"] == "tofino" and not o["no_ports"],
            guard_timer_ns=guard_timer_ns,
        )
        _log_matrix_source(logging.getLogger("ffs.agent"), agent, store, o)
        agent.install()
        if o["selftest_iface"]:
            _selftest(agent, o["selftest_iface"], o["selftest_port"])
        logging.getLogger("ffs.agent").info(
            "agent running node=%s target=%s period_ms=%g version=%s",
            o["node"],
            o["target"],
            o["period_ms"],
            __version__,
        )
        config = ServiceConfig(
            o["period_ms"] / 1e3, o["sock"], o["group"], o["metrics_port"], o["metrics_address"], o["check_period_s"]
        )
        AgentService(agent, config, notifier).run()
    finally:
        owner.close()  # a lock file left behind names an owner that was killed


def _selftest(agent: Agent, iface: str, ingress: str) -> None:
    """The bring-up self-test (ffs.agent.selftest) on the switch just taken over; its frames are no
    pair's traffic, so the counters are read afresh after it."""
    send = RawSender(iface)
    try:
        agent.selftest = run_on_node(agent.driver, agent.node, ingress, send)
    finally:
        send.close()
    agent.baseline()


def check_configuration(o: dict[str, Any], topo: Topology, lpf: LpfConfig, store: StateStore, address: str) -> str:
    """What `ffs-agent --check` verifies beyond the options main checks (the topology, the node, the
    state directory): the saved matrix fits the topology, the SDE's client loads (--target tofino),
    the lock and socket directories are writable, --group can be handed the socket. One line back."""
    node = topo.node(o["node"])
    saved = None if o["from_topology"] else store.load_matrix(node.name)
    if saved is not None:
        validate_saved(node, saved, store.matrix_path(node.name))
    make_driver(o["target"], address)  # imports the SDE's bfrt_grpc for tofino; connects nowhere
    dirs = [run_dir()] + ([Path(o["sock"]).parent] if o["sock"] else [])
    for d in dirs:
        probe = d if d.exists() else d.parent
        if not os.access(probe, os.W_OK | os.X_OK):
            raise OSError(
                f"{d}: not writable by this agent's user (uid {os.geteuid()}): the locks and the socket live there"
            )
    matrix = f"the saved {store.matrix_path(node.name)}" if saved is not None else f"{o['topology']}'s"
    tau_f_ms = (lpf.for_node(node).time_constant_ns or 0) / 1e6
    return (
        f"ffs-agent: configuration of node {node.name} is usable: {o['target']} switch at {address}, "
        f"state in {store.dir}, {matrix} matrix, F time constants per pair, at most {tau_f_ms:.3g} ms"
    )


def _log_to_stderr(log_format, verbose) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else KeyValueFormatter())
    logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO, handlers=[handler])


def _log_matrix_source(log: logging.Logger, agent: Agent, store: StateStore, o: dict[str, Any]) -> None:
    source = _matrix_source(store, o["topology"], o["node"], o["from_topology"])
    log.info(
        "matrix loaded from %s; state and audit in %s; F estimator time constant %s%.3g ms, scale-down %s",
        source,
        store.dir,
        "" if o["lpf_time_constant_us"] is not None else "per pair, at most ",
        (agent.lpf.time_constant_ns or 0) / 1e6,
        agent.lpf.scale_down,
    )


def _check_options(o: dict[str, Any]) -> None:
    """The option values main cannot use, as usage errors (before the switch is touched)."""
    lpf_scale_down, period_ms, check_period_s = o["lpf_scale_down"], o["period_ms"], o["check_period_s"]
    lpf_time_constant_us, quarantine_s, quarantine_fraction = (
        o["lpf_time_constant_us"],
        o["quarantine_s"],
        o["quarantine_fraction"],
    )
    telemetry_period_s, metrics_port, metrics_address, group = (
        o["telemetry_period_s"],
        o["metrics_port"],
        o["metrics_address"],
        o["group"],
    )
    if (lpf_scale_down is not None and not 0 <= lpf_scale_down <= 31) or not period_ms > 0 or not check_period_s >= 0:
        raise CliUsageError("--lpf-scale-down must be 0..31, --period-ms positive and --check-period-s >= 0")
    if lpf_time_constant_us is not None and not 0 < lpf_time_constant_us < 1e7:
        raise CliUsageError("--lpf-time-constant-us must be positive (and below 10 s)")
    if not (0 <= quarantine_s < 1e6 and 0 <= quarantine_fraction < 1):
        raise CliUsageError("--quarantine-s must be 0..1e6 and --quarantine-fraction in [0, 1)")
    if not 0 <= telemetry_period_s <= 3600:
        raise CliUsageError("--telemetry-period-s must be 0..3600 (0: every period)")
    if metrics_port is not None and not 0 < metrics_port < 65536:
        raise CliUsageError("--metrics-port must be 1..65535")
    if bool(o["selftest_iface"]) != bool(o["selftest_port"]):
        raise CliUsageError(
            "--selftest-iface and --selftest-port go together: the interface and the port it is wired to"
        )
    if group is not None:
        try:
            gid = grp.getgrnam(group).gr_gid
        except KeyError:
            raise CliUsageError(f"--group {group}: no such group") from None
        if not can_give_to_group(gid):
            raise CliUsageError(
                f"--group {group}: this agent's user (uid {os.geteuid()}) is not in the group and lacks CAP_CHOWN, "
                f"so it cannot hand the socket to it (the unit: SupplementaryGroups={group})"
            )
    if metrics_port is not None and not ipaddress.ip_address(metrics_address).is_loopback:
        logging.getLogger("ffs.agent").warning("metrics served on a non-loopback address=%s, as asked", metrics_address)


def _guard_timer_ns(us: float | None) -> int | Literal["auto"] | None:
    """--guard-timer-us as the agent takes it: sized for the node when not given, None (off) for 0,
    else whole nanoseconds."""
    if us is None:
        return "auto"
    if not 0 <= us <= 4e6:
        raise CliUsageError("--guard-timer-us must be 0 (off) .. 4000000 (the generator's timer holds 4.29 s)")
    return None if us == 0 else max(1, round(us * 1e3))


def _switch_address(switch, target) -> str:
    if switch:
        return switch
    if target == "model":
        return default_control_address()  # where `ffs-switch run` listens by default
    return "localhost:50052"


def _matrix_source(store, topology, node, from_topology) -> str:
    """Where the matrix the agent starts from comes from, for the log."""
    saved = store.matrix_path(node)
    if saved.exists() and not from_topology:
        return f"{saved} (the last matrix applied wins over the topology's; --from-topology starts from the topology)"
    if saved.exists():
        return f"{topology} (node {node}; --from-topology: the saved {saved} is ignored, the next change replaces it)"
    return f"{topology} (node {node})"


if __name__ == "__main__":
    sys.argv[0] = "ffs-agent"  # errors name the command, also under `python -m ffs.cli.agent`
    main()
