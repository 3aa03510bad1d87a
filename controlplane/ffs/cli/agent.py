# SPDX-License-Identifier: Apache-2.0
"""ffs-agent: run the FFS control plane for one node of a topology, against a switch."""

from __future__ import annotations

import grp
import ipaddress
import json
import logging
import sys
import time

import click

from ffs.agent.core import Agent
from ffs.agent.matrix import MatrixError
from ffs.agent.owner import OwnerError, take_ownership
from ffs.agent.program import LpfConfig
from ffs.agent.service import AgentService, ServiceConfig
from ffs.agent.state import StateStore, default_state_dir
from ffs.cli.common import CliError, CliUsageError, one_line_errors
from ffs.driver.base import Driver, DriverError
from ffs.driver.bfrt import BfrtDriver
from ffs.driver.model import ModelDriver
from ffs.driver.wire import default_control_address
from ffs.ports import PortError
from ffs.tau import TauParams
from ffs.topology import TopologyError, load


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


def connect_saying_so(driver: Driver, target: str, address: str, timeout_s: float, log: logging.Logger) -> None:
    """Connect within `timeout_s`, saying every few seconds what the agent waits for (a silent
    minute looks like a hang)."""
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
            log.info(
                "waiting for %s at %s (%.0f of %.0f s; --connect-timeout)",
                what,
                address,
                time.monotonic() - start,
                timeout_s,
            )


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
@one_line_errors(TopologyError, MatrixError, DriverError, OwnerError, PortError, ValueError, OSError, error=CliError)
def main(
    topology,
    node,
    target,
    switch,
    sock,
    group,
    state_dir,
    adopt,
    no_ports,
    from_topology,
    period_ms,
    lpf_time_constant_us,
    lpf_scale_down,
    delta_fraction,
    max_decrease,
    wire_overhead,
    metrics_port,
    metrics_address,
    check_period_s,
    quarantine_s,
    quarantine_fraction,
    telemetry_period_s,
    connect_timeout,
    rpc_timeout,
    log_format,
    verbose,
) -> None:
    """Program the switch for NODE, keep tau per egress, and serve fairness-matrix changes."""
    _log_to_stderr(log_format, verbose)
    topo = load(topology)
    topo.node(node)
    _check_options(
        lpf_scale_down,
        period_ms,
        check_period_s,
        lpf_time_constant_us,
        quarantine_s,
        quarantine_fraction,
        telemetry_period_s,
        metrics_port,
        metrics_address,
        group,
    )
    if rpc_timeout is not None and not 0 < rpc_timeout <= 3600:
        raise CliUsageError("--rpc-timeout must be positive (and at most 3600 s)")
    # everything that can be wrong with the options fails before the switch is touched
    tau_params = TauParams(delta_fraction=delta_fraction, max_decrease=max_decrease)
    log = logging.getLogger("ffs.agent")
    lpf = LpfConfig(lpf_time_constant_us * 1e3 if lpf_time_constant_us is not None else None, lpf_scale_down)
    store = StateStore(state_dir or default_state_dir(node), adopt=adopt)
    address = _switch_address(switch, target)
    owner = take_ownership(address, sock)  # before the switch or the socket is touched; held until exit
    driver = make_driver(target, address, rpc_timeout)
    connect_saying_so(driver, target, address, connect_timeout, logging.getLogger("ffs.agent"))
    agent = Agent(
        driver,
        topo,
        node,
        lpf=lpf,
        tau_params=tau_params,
        wire_overhead_bytes=wire_overhead,
        store=store,
        quarantine_s=quarantine_s,
        quarantine_fraction=quarantine_fraction,
        telemetry_period_s=telemetry_period_s,
        use_saved_matrix=not from_topology,
        manage_ports=target == "tofino" and not no_ports,
    )
    _log_matrix_source(log, agent, store, topology, node, from_topology, lpf_time_constant_us)
    agent.install()
    logging.getLogger("ffs.agent").info("agent running node=%s target=%s period_ms=%g", node, target, period_ms)
    AgentService(
        agent, ServiceConfig(period_ms / 1e3, sock, group, metrics_port, metrics_address, check_period_s)
    ).run()
    owner.close()  # removed: a lock file left behind names an owner that was killed


def _log_to_stderr(log_format, verbose) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else KeyValueFormatter())
    logging.basicConfig(level=logging.DEBUG if verbose > 1 else logging.INFO, handlers=[handler])


def _log_matrix_source(log, agent, store, topology, node, from_topology, lpf_time_constant_us) -> None:
    source = _matrix_source(store, topology, node, from_topology)
    log.info(
        "matrix loaded from %s; state and audit in %s; F estimator time constant %.3g ms%s, scale-down %s",
        source,
        store.dir,
        (agent.lpf.time_constant_ns or 0) / 1e6,
        "" if lpf_time_constant_us is not None else " (derived)",
        agent.lpf.scale_down,
    )


def _check_options(
    lpf_scale_down,
    period_ms,
    check_period_s,
    lpf_time_constant_us,
    quarantine_s,
    quarantine_fraction,
    telemetry_period_s,
    metrics_port,
    metrics_address,
    group,
) -> None:
    """The option values main cannot use, as usage errors (before the switch is touched)."""
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
    if group is not None:
        try:
            grp.getgrnam(group)
        except KeyError:
            raise CliUsageError(f"--group {group}: no such group") from None
    if metrics_port is not None and not ipaddress.ip_address(metrics_address).is_loopback:
        logging.getLogger("ffs.agent").warning("metrics served on a non-loopback address=%s, as asked", metrics_address)


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
