# SPDX-License-Identifier: Apache-2.0
"""ffsctl: the operator's command line to a running ffs-agent (over its Unix socket, on this machine
or over SSH: ffs.cli.remote), and to a fleet of them (ffs.cli.fleet)."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from ffs.cli import fleet as fleet_mod
from ffs.cli import remote
from ffs.cli.common import CliError, dump_json, one_line_errors, version_option
from ffs.core.api_client import ApiError, call
from ffs.core.matrix import MatrixError, read_matrix_text
from ffs.core.units import format_rate

DEFAULT_SOCKET = "/run/ffs/agent.sock"


def _rate(v) -> str:
    return "inf" if v is None else format_rate(v)


def _tau(e: dict) -> str:
    """The agent's one τ display; an older agent sends none."""
    if "tau_display" in e:
        return e["tau_display"]
    return f"{e['tau']:.4f}" + ("" if e.get("congested") else " (uncongested)")


class JsonAnywhere(click.Group):
    """`--json` is accepted anywhere on the command line (`ffsctl status --json`, `ffsctl --json status`)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            head, tail = args[: args.index("--")], args[args.index("--") :]
        else:
            head, tail = args, []
        if "--json" in head:
            head = ["--json"] + [a for a in head if a != "--json"]
        return super().parse_args(ctx, head + tail)


@click.group(cls=JsonAnywhere, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--socket",
    "sock",
    envvar="FFS_AGENT_SOCKET",
    default=DEFAULT_SOCKET,
    show_default=True,
    help="The agent's control socket (or FFS_AGENT_SOCKET).",
)
@click.option(
    "--host",
    envvar="FFS_AGENT_HOST",
    default=None,
    metavar="ssh://[USER@]HOST[:PORT]",
    help="An agent on another machine, reached over SSH (or FFS_AGENT_HOST); --socket is then its path there.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output (anywhere on the command line).")
@version_option("ffsctl")
@click.pass_context
def main(ctx: click.Context, sock: str, host: str | None, as_json: bool) -> None:
    """Inspect and change a running FFS agent."""
    ctx.obj = {"socket": sock, "host": host, "json": as_json}


def _call(ctx: click.Context, req: dict):
    if ctx.obj["host"]:
        return remote.call(ctx.obj["host"], ctx.obj["socket"], req)
    return call(ctx.obj["socket"], req)


errors = one_line_errors(ApiError, MatrixError, OSError, ValueError, error=CliError)


def _queue(e: dict) -> str:
    """The queue guard's column: the virtual queue against its threshold in kB, and ↓ while τ aims
    below the target to drain it (spec §7.7, §9); "off" without the guard."""
    if e.get("queue_threshold") is None:
        return "off"
    q = f"{e['queue_bytes'] / 1e3:.0f}/{e['queue_threshold'] / 1e3:.0f}k"
    return q + ("↓" if e.get("draining") else "")


@main.command()
@click.pass_context
@errors
def status(ctx) -> None:
    """Per egress: capacity, target, A, R*, tau and its state; per pair: R, F, drops."""
    s = _call(ctx, {"op": "status"})
    if ctx.obj["json"]:
        return dump_json(s)
    c = Console()
    if "agent_version" in s:  # an older agent does not say
        c.print(f"node {s['node']}: agent {s['agent_version']} (Python {s['python']}), program {s['program']}")
    t = Table(title=f"node {s['node']}: egresses")
    for col in ("egress", "capacity", "target", "accepted A", "offered R*", "tau", "state", "queue"):
        # the state whole on an 80-column terminal: the rates give way first
        t.add_column(col, justify="left" if col == "egress" else "right", min_width=11 if col == "state" else None)
    for e in s["egresses"]:
        t.add_row(
            e["egress"],
            _rate(e["capacity"]),
            _rate(e["target"]),
            _rate(e["accepted_bps"]),
            _rate(e["offered_bps"]),
            f"{e['tau']:.4f}",
            "congested" if e["congested"] else "uncongested",
            _queue(e),
        )
    c.print(t)
    for e in s["egresses"]:  # a port that drains slower than its speed (spec §9, item 8); older agents: none
        if e.get("drain_factor", 1.0) < 1.0:
            c.print(
                f"egress {e['egress']}: the port drains {_rate(e['drained_bps'])} and its queue dropped "
                f"{e['tm_drops']} frames last period: the target follows it, {e['drain_factor']:.1%} of "
                f"{_rate(e['target'] / e['drain_factor'])}"
            )
    p = Table(title="pairs")
    for col in ("ingress", "egress", "share M", "R", "F", "dropped", "drops"):
        p.add_column(col, justify="left" if col in ("ingress", "egress") else "right")
    for x in s["pairs"]:
        if x["rate_bps"] or x["share_bps"]:
            p.add_row(
                x["ingress"],
                x["egress"],
                _rate(x["share_bps"]),
                _rate(x["rate_bps"]),
                _rate(x["f_bps"]),
                _rate(x["drop_bps"]),
                str(x["drops"]),
            )
    c.print(p)
    if s.get("ports"):
        q = Table(title="front-panel ports")
        for col in ("interface", "port", "device port", "pipe", "speed", "enabled", "link"):
            q.add_column(col, justify="left" if col in ("interface", "port", "speed") else "right")
        for x in s["ports"]:
            q.add_row(
                x["interface"],
                x["fp"],
                str(x["dev_port"]),
                str(x["pipe"]),
                x["speed"].replace("BF_SPEED_", ""),
                "yes" if x["enabled"] else "no",
                "up" if x["up"] else "down",
            )
        c.print(q)


@main.group()
def matrix() -> None:
    """Show, change, compare and plan fairness matrices."""


def _print_matrix(fairness: dict) -> None:
    t = Table(title="fairness matrix M(ingress, egress)")
    t.add_column("egress")
    t.add_column("ingress")
    t.add_column("share", justify="right")
    for e in sorted(fairness):
        for i in sorted(fairness[e]):
            t.add_row(e, i, format_rate(fairness[e][i]))
    Console().print(t)


@matrix.command("show")
@click.pass_context
@errors
def matrix_show(ctx) -> None:
    """The applied matrix."""
    m = _call(ctx, {"op": "matrix_show"})
    dump_json(m) if ctx.obj["json"] else _print_matrix(m["fairness"])


def _print_changes(ctx, r: dict) -> None:
    if ctx.obj["json"]:
        return dump_json(r)
    if not r["changes"]:
        click.echo("no change")
    for c in r["changes"]:
        old = "-" if c["old"] is None else format_rate(c["old"])
        new = "-" if c["new"] is None else format_rate(c["new"])
        click.echo(f"M({c['ingress']},{c['egress']}): {old} -> {new}")


def _matrix_request(op: str, file: str) -> dict:
    """The file's text, as `matrix set` sends its rate: the agent parses and validates both."""
    return {"op": op, "text": read_matrix_text(file), "source": file}


@matrix.command("set")
@click.option("--ingress", required=True)
@click.option("--egress", required=True)
@click.option("--rate", required=True, help="e.g. 400Mbps")
@click.pass_context
@errors
def matrix_set(ctx, ingress, egress, rate) -> None:
    """Change one entry M(INGRESS, EGRESS)."""
    _print_changes(ctx, _call(ctx, {"op": "matrix_set", "ingress": ingress, "egress": egress, "rate": rate}))


@matrix.command("load")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
@errors
def matrix_load(ctx, file) -> None:
    """Replace the whole matrix with FILE ({egress: {ingress: rate}}), atomically."""
    _print_changes(ctx, _call(ctx, _matrix_request("matrix_load", file)))


@matrix.command("diff")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
@errors
def matrix_diff(ctx, file) -> None:
    """What loading FILE would change."""
    _print_changes(ctx, _call(ctx, _matrix_request("matrix_diff", file)))


@matrix.command("plan")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
@errors
def matrix_plan(ctx, file) -> None:
    """The exact FFS allocation of the measured demands under FILE, before pushing it."""
    r = _call(ctx, _matrix_request("matrix_plan", file))
    if ctx.obj["json"]:
        return dump_json(r)
    t = Table(title="predicted (exact FFS, current demands)")
    for col in ("pair", "demand", "rate"):
        t.add_column(col, justify="left" if col == "pair" else "right")
    for p in r["pairs"]:
        t.add_row(p["pair"], _rate(p["demand"]), _rate(p["rate"]))
    if r["pairs"]:
        Console().print(t)
    elif r.get("why_empty"):
        click.echo(f"nothing to predict: {r['why_empty']}")
    for e in r["egresses"]:
        click.echo(f"egress {e['egress']}: target {_rate(e['target'])}, offered {_rate(e['offered'])}, tau {_tau(e)}")


@main.group()
def tau() -> None:
    """The fairness parameter per egress."""


@tau.command("show")
@click.pass_context
@errors
def tau_show(ctx) -> None:
    r = _call(ctx, {"op": "tau_show"})
    if ctx.obj["json"]:
        return dump_json(r)
    for e in r:
        click.echo(f"{e['egress']}: {_tau(e)}")


@main.command()
@click.pass_context
@errors
def selftest(ctx) -> None:
    """What the agent's bring-up self-test found pkt_length to count, and the frame check it set."""
    r = _call(ctx, {"op": "selftest"})
    if ctx.obj["json"]:
        return dump_json(r)
    if not r["measured"]:
        click.echo(r["summary"])
        return
    click.echo(
        f"selftest {r['ingress']} -> {r['egress']}: {r['summary']} "
        f"(a truthful frame's excess {r['excess']:+d} bytes, {r['frames']} frames); the frame check is set for it"
    )


@main.command("log")
@click.option("--limit", default=20, show_default=True)
@click.pass_context
@errors
def audit_log(ctx, limit) -> None:
    """The audit log of matrix changes (who, when, what)."""
    r = _call(ctx, {"op": "log", "limit": limit})
    if ctx.obj["json"]:
        return dump_json(r)
    import time

    for rec in r:
        if not isinstance(rec, dict) or not isinstance(rec.get("time"), (int, float)):
            continue  # not a record this version understands
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(rec["time"]))
        who = rec["who"] if rec.get("uid") is None else f"{rec['who']} (uid {rec['uid']})"
        status = rec.get("status", "committed")  # aborted: never held by the state file (docs/control-plane.md)
        note = "" if status == "committed" else f" [{status}{': ' + str(rec['why']) if rec.get('why') else ''}]"
        for c in rec.get("changes") or []:
            old = "-" if c.get("old") is None else format_rate(c["old"])
            new = "-" if c.get("new") is None else format_rate(c["new"])
            click.echo(f"{when} {who}: M({c.get('ingress')},{c.get('egress')}): {old} -> {new}{note}")


@main.command("dial-stdio", hidden=True)
@click.option("--socket", "sock", default=DEFAULT_SOCKET, show_default=True)
@one_line_errors(ApiError, OSError, error=CliError)
def dial_stdio(sock: str) -> None:
    """Relay stdin/stdout to the agent's socket: the far end of `ffsctl --host ssh://...`."""
    remote.dial_stdio(sock)


@main.group()
def fleet() -> None:
    """One matrix file per node across a list of switches (a fleet file; docs/hardware.md)."""


def _say_planned(ctx, sw: fleet_mod.Switch) -> None:
    if ctx.obj["json"]:
        return
    if sw.state == "failed":
        click.echo(f"{sw.node} ({sw.where}): error: {sw.error}")
        return
    click.echo(
        f"{sw.node} ({sw.where}): agent {sw.agent_version}, program {sw.program}: "
        f"{len(sw.changes) or 'no'} change{'' if len(sw.changes) == 1 else 's'}"
    )
    for c in sw.changes:
        old = "-" if c["old"] is None else format_rate(c["old"])
        new = "-" if c["new"] is None else format_rate(c["new"])
        click.echo(f"  M({c['ingress']},{c['egress']}): {old} -> {new}")
    p = sw.plan or {}
    for x in p.get("pairs", []):
        click.echo(f"  plan {x['pair']}: demand {_rate(x['demand'])}, rate {_rate(x['rate'])}")
    if not p.get("pairs") and p.get("why_empty"):
        click.echo(f"  plan: nothing to predict: {p['why_empty']}")


def _say_pushed(ctx, sw: fleet_mod.Switch) -> None:
    if ctx.obj["json"]:
        return
    if sw.state == "refused":
        click.echo(f"{sw.node} ({sw.where}): refused: {sw.error}")
    else:
        click.echo(f"{sw.node} ({sw.where}): {sw.state}" + (f" ({len(sw.changes)} entries)" if sw.changes else ""))


def _fleet_end(ctx, switches: list, ok: bool, failure: str) -> None:
    warnings = fleet_mod.differences(switches)
    if ctx.obj["json"]:
        dump_json({"ok": ok, "warnings": warnings, "switches": [sw.report() for sw in switches]})
        if not ok:
            ctx.exit(1)
        return
    for w in warnings:
        click.echo(f"warning: {w}")
    click.echo(fleet_mod.summary(switches))
    if not ok:
        raise CliError(failure)


@fleet.command("plan")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
@errors
def fleet_plan(ctx, file) -> None:
    """What each node's matrix would change, and FFS's prediction for it; nothing changes."""
    switches = fleet_mod.load_fleet(file)
    ok = fleet_mod.plan(switches, ctx.obj["socket"], lambda sw: _say_planned(ctx, sw))
    bad = [sw.node for sw in switches if sw.state == "failed"]
    _fleet_end(ctx, switches, ok, f"fleet plan: {', '.join(bad)} failed")


@fleet.command("apply")
@click.argument("file", type=click.Path(dir_okay=False))
@click.pass_context
@errors
def fleet_apply(ctx, file) -> None:
    """Plan every node, then push node by node, stopping at the first refusal."""
    switches = fleet_mod.load_fleet(file)
    if not fleet_mod.plan(switches, ctx.obj["socket"], lambda sw: _say_planned(ctx, sw)):
        for sw in switches:
            sw.state = "failed" if sw.state == "failed" else "not pushed"
        bad = [sw.node for sw in switches if sw.state == "failed"]
        return _fleet_end(ctx, switches, False, f"fleet apply: the plan failed at {', '.join(bad)}; nothing was pushed")
    for sw in switches:
        sw.state = "not pushed"
    ok = fleet_mod.apply(switches, ctx.obj["socket"], lambda sw: _say_pushed(ctx, sw))
    refused = next((sw for sw in switches if sw.state == "refused"), None)
    changed = [sw.node for sw in switches if sw.state == "changed"]
    why = (
        ""
        if refused is None
        else (
            f"fleet apply stopped at {refused.node}: {refused.error}; changed before it: {', '.join(changed) or 'none'}"
        )
    )
    _fleet_end(ctx, switches, ok, why)


if __name__ == "__main__":
    import sys

    sys.argv[0] = "ffsctl"  # errors name the command, also under `python -m ffs.cli.ctl`
    main()
