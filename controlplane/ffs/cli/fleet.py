# SPDX-License-Identifier: Apache-2.0
"""One matrix file per node across a list of switches (`ffsctl fleet plan|apply FLEET`).

A fleet file lists the switches in the order they are pushed:

    switches:
      - {node: s1, host: ssh://ops@sw1, matrix: s1.yaml}
      - {node: s2, host: ssh://ops@sw2, matrix: s2.yaml, socket: /run/ffs/agent.sock, ffsctl: /opt/ffs/bin/ffsctl}

`host` is omitted for an agent on this machine; `socket` defaults to ffsctl's, `ffsctl` to ffsctl on
the remote PATH; matrix paths are relative to the fleet file. First every node is asked, without
changing anything, which node its agent is (it must be the one named), what loading its matrix
would change (diff) and what FFS would give its measured demands under it (plan); any failure there
stops the run with nothing pushed. The plan also says which agent version and which program each
node runs, and warns where the nodes differ (a fleet half upgraded). Then the nodes with a change
are pushed one by one, and the first refusal stops the run: the nodes pushed before it keep their
new matrix, and the result says which nodes changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ffs.cli import remote
from ffs.core.api_client import ApiError
from ffs.core.api_client import call as local_call
from ffs.core.matrix import MatrixError, read_matrix_text
from ffs.core.safeload import LoadError, load_yaml_file

SWITCH_KEYS = {"node", "host", "matrix", "socket", "ffsctl"}


@dataclass
class Switch:
    node: str
    matrix: Path
    host: str | None = None
    socket: str | None = None
    ffsctl: str | None = None
    # filled in by the run
    text: str = ""
    changes: list[dict[str, Any]] = field(default_factory=list)
    plan: dict[str, Any] | None = None
    state: str = "not pushed"  # planned, changed, unchanged, refused, not pushed, failed
    error: str | None = None
    agent_version: str | None = None  # what the node's agent said it runs (an older agent says nothing)
    program: str | None = None

    @property
    def where(self) -> str:
        return self.host or "this machine"

    def report(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "host": self.host,
            "matrix": str(self.matrix),
            "state": self.state,
            "error": self.error,
            "changes": self.changes,
            "plan": self.plan,
            "agent_version": self.agent_version,
            "program": self.program,
        }


def load_fleet(path: str) -> list[Switch]:
    try:
        doc = load_yaml_file(path)
    except LoadError as e:
        raise MatrixError(str(e)) from None
    items = doc.get("switches") if isinstance(doc, dict) else None
    if not isinstance(items, list) or not items:
        raise MatrixError(f"{path}: a fleet file lists `switches:`, each {{node, matrix, host, socket, ffsctl}}")
    out: list[Switch] = []
    for i, it in enumerate(items):
        if not isinstance(it, dict) or not {"node", "matrix"} <= set(it) or set(it) - SWITCH_KEYS:
            raise MatrixError(
                f"{path}: switch {i + 1}: give node and matrix (and host, socket, ffsctl if needed), nothing else"
            )
        if not all(isinstance(v, str) and v for v in it.values()):
            raise MatrixError(f"{path}: switch {i + 1}: every value is a non-empty string")
        if any(s.node == it["node"] for s in out):
            raise MatrixError(f"{path}: node {it['node']} is listed twice")
        out.append(
            Switch(it["node"], Path(path).parent / it["matrix"], it.get("host"), it.get("socket"), it.get("ffsctl"))
        )
    return out


class Session:
    """Requests to one switch's agent: over SSH, or its socket on this machine."""

    def __init__(self, sw: Switch, default_socket: str) -> None:
        self.sw = sw
        self.socket = sw.socket or default_socket
        self.remote = remote.Remote(sw.host, self.socket, sw.ffsctl) if sw.host else None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.remote is not None:
            self.remote.close()

    def call(self, req: dict[str, Any]) -> Any:
        return self.remote.call(req) if self.remote is not None else local_call(self.socket, req)


def plan(fleet: list[Switch], default_socket: str, say: Callable[[Switch], None]) -> bool:
    """Ask every node; True when all answered and none refused its matrix."""
    ok = True
    for sw in fleet:
        try:
            sw.text = read_matrix_text(sw.matrix)
            req = {"text": sw.text, "source": str(sw.matrix)}
            with Session(sw, default_socket) as s:
                shown = s.call({"op": "status"})
                if shown.get("node") != sw.node:
                    raise ApiError(f"the agent at {sw.where} is node {shown.get('node')}, not {sw.node}")
                sw.agent_version = shown.get("agent_version") or "unknown (the agent does not say)"
                sw.program = shown.get("program") or "unknown"
                sw.changes = s.call({"op": "matrix_diff", **req})["changes"]
                sw.plan = s.call({"op": "matrix_plan", **req})
            sw.state = "planned"
        except (ApiError, MatrixError, OSError) as e:
            sw.state, sw.error, ok = "failed", str(e).splitlines()[0] if str(e) else type(e).__name__, False
        say(sw)
    return ok


def apply(fleet: list[Switch], default_socket: str, say: Callable[[Switch], None]) -> bool:
    """Push node by node after a plan; stop at the first refusal. True when every node took its matrix."""
    for sw in fleet:
        if not sw.changes:
            sw.state = "unchanged"
            say(sw)
            continue
        try:
            with Session(sw, default_socket) as s:
                sw.changes = s.call({"op": "matrix_load", "text": sw.text, "source": str(sw.matrix)})["changes"]
            sw.state = "changed" if sw.changes else "unchanged"
            say(sw)
        except (ApiError, OSError) as e:
            sw.state, sw.error = "refused", str(e).splitlines()[0] if str(e) else type(e).__name__
            say(sw)
            return False
    return True


def differences(fleet: list[Switch]) -> list[str]:
    """A warning per thing the planned nodes do not agree on: the agent's version, the program."""
    out = []
    for what, key in (("agent versions", "agent_version"), ("programs", "program")):
        seen: dict[str, list[str]] = {}
        for sw in fleet:
            value = getattr(sw, key)
            if value is not None:
                seen.setdefault(value, []).append(sw.node)
        if len(seen) > 1:
            out.append(
                f"the nodes run different {what}: " + "; ".join(f"{v} ({', '.join(n)})" for v, n in seen.items())
            )
    return out


def summary(fleet: list[Switch]) -> str:
    parts = []
    for state in ("changed", "unchanged", "refused", "failed", "not pushed"):
        nodes = [sw.node for sw in fleet if sw.state == state]
        if nodes:
            parts.append(f"{state}: {', '.join(nodes)}")
    return "; ".join(parts)
