# SPDX-License-Identifier: Apache-2.0
"""The agent's files: the applied fairness matrix, τ per egress, and the audit log.

state-dir/   (owned by the agent's user, not writable by group or others)
  matrix-<node>.json   {"node", "fairness": {egress: {ingress: bit/s}}, "saved_at", "change": audit record}
  tau-<node>.json      {"node", "taus": {egress: {"tau", "congested"}}, "withheld": {pid: fraction},
                       "saved_at"}  (every period that writes; withheld: the quarantined pairs)
  program-<node>.json  {"node", "program_id"}: the loaded program whose tables were last verified whole
  audit.jsonl          one JSON object per line: a change (id, time, who, uid, what, changes,
                       "status": "pending") and later its outcome ({"id", "time", "what": "commit"
                       or "abort", "why"})

A matrix change is written ahead (docs/control-plane.md, "The audit's guarantee"): its record is
appended to audit.jsonl and fsynced before the staged matrix file is written, before the switch
sees the batch and before the rename that commits the state file; its outcome is appended after.
A change left pending by a crash is settled when the store is next opened (`recover`): committed
if the matrix file carries it, aborted otherwise (the switch is then reconciled to the saved
matrix), so neither the switch nor the state file ever holds a change the log lacks.
"""

from __future__ import annotations

import json
import logging
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Any, Callable

from ffs.core.safeload import LoadError, loads_json, read_text
from ffs.core.tau import EgressTau

log = logging.getLogger("ffs.agent")
TMP_SUFFIX = ".tmp"  # staged files: never read as state, removed at start-up


class StateError(ValueError):
    """The state directory or a state file is unusable; the message says what to do."""


def default_state_dir(node: str) -> Path:
    """/var/lib/ffs/<node> for root; $XDG_STATE_HOME/ffs/<node> (~/.local/state) otherwise;
    FFS_STATE_DIR overrides the parent directory."""
    base = os.environ.get("FFS_STATE_DIR")
    if base:
        return Path(base) / node
    if os.geteuid() == 0:
        return Path("/var/lib/ffs") / node
    xdg = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(xdg) / "ffs" / node


def check_private_dir(path: Path) -> None:
    """Refuse a directory another user could write into: its files decide what the switch enforces."""
    st = path.stat()
    if not stat.S_ISDIR(st.st_mode):
        raise StateError(f"{path}: not a directory")
    if st.st_uid != os.geteuid():
        raise StateError(f"{path}: owned by uid {st.st_uid}, not by this agent's user (uid {os.geteuid()})")
    if st.st_mode & 0o022:
        raise StateError(f"{path}: writable by group or others (mode {stat.S_IMODE(st.st_mode):04o}); chmod go-w it")


def _read_json(path: Path) -> Any:
    """A state file within safeload's limits (size, depth, finite numbers): any corruption, however
    deep or large, is one LoadError line rather than a traceback."""
    return loads_json(read_text(path), str(path))


def _write_atomic(path: Path, data: Any, sync: bool) -> None:
    tmp = path.with_name(path.name + TMP_SUFFIX)
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)  # readers see the old file or the new one, never half of one


class StateStore:
    """`adopt` names another node whose saved files this node may take over (a state directory
    copied from a replaced switch); any other node's file is refused."""

    def __init__(self, directory: str | Path, adopt: str | None = None) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        check_private_dir(self.dir)
        self.adopt = adopt
        # tests kill the process at each named step of a matrix change (docs/control-plane.md)
        self.crash_hook: Callable[[str], None] | None = None

    def reached(self, point: str) -> None:
        if self.crash_hook is not None:
            self.crash_hook(point)

    def _foreign(self, data: dict[str, Any], node: str) -> str | None:
        """The node a file names when it is neither `node` nor the one adopted."""
        named = data.get("node")
        return None if named == node or (self.adopt is not None and named == self.adopt) else str(named)

    # -- the matrix ------------------------------------------------------------------------------
    def matrix_path(self, node: str) -> Path:
        return self.dir / f"matrix-{node}.json"

    def staged_path(self, node: str) -> Path:
        return self.matrix_path(node).with_name(self.matrix_path(node).name + TMP_SUFFIX)

    def stage_matrix(
        self, node: str, fairness: dict[str, dict[str, float]], record: dict[str, Any] | None = None
    ) -> Path:
        """Write the new matrix (and the audit record of the change) next to the current one, fsynced;
        `commit_matrix` renames it in."""
        tmp = self.staged_path(node)
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump(
                {"node": node, "fairness": fairness, "saved_at": time.time(), "change": record},
                f,
                indent=2,
                sort_keys=True,
            )
            f.flush()
            os.fsync(f.fileno())
        return tmp

    def commit_matrix(self, node: str, staged: Path) -> None:
        """The state file's commit point; the caller then appends the change's outcome."""
        os.replace(staged, self.matrix_path(node))
        self._sync_dir()  # the rename itself survives a crash

    def _sync_dir(self) -> None:
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def save_matrix(self, node: str, fairness: dict[str, dict[str, float]]) -> None:
        self.commit_matrix(node, self.stage_matrix(node, fairness))

    def _read_matrix_file(self, node: str) -> dict[str, Any] | None:
        path = self.matrix_path(node)
        if not path.exists():
            return None
        try:
            data = _read_json(path)
        except LoadError as e:
            reason = str(e)
            if reason.startswith(f"{path}: "):  # not str.removeprefix: the agent runs on 3.8
                reason = reason[len(f"{path}: ") :]
            raise StateError(
                f"{path}: unreadable saved matrix ({reason}); move it away to start from the topology"
            ) from None
        if not isinstance(data, dict):
            raise StateError(
                f"{path}: unreadable saved matrix (not an object); move it away to start from the topology"
            )
        return data

    def load_matrix(self, node: str) -> dict[str, dict[str, float]] | None:
        data = self._read_matrix_file(node)
        if data is None:
            return None
        path = self.matrix_path(node)
        other = self._foreign(data, node)
        if data.get("node") is None:
            raise StateError(f"{path}: the saved matrix names no node; move it away to start from the topology")
        if other is not None:
            raise StateError(
                f"{path}: the saved matrix is node {other}'s, not node {node}'s; move it away, "
                f"or start with --adopt-state-of={other} to take it over"
            )
        if data.get("node") != node:
            log.warning("%s: taking over node %s's saved matrix as node %s's, as asked", path, data.get("node"), node)
        try:
            fairness = data["fairness"]
            if not isinstance(fairness, dict) or not fairness:
                raise ValueError("empty or missing fairness")
            return {e: {i: float(v) for i, v in col.items()} for e, col in fairness.items()}
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise StateError(f"{path}: unusable saved matrix ({e}); move it away to start from the topology") from None

    # -- τ per egress ----------------------------------------------------------------------------
    def tau_path(self, node: str) -> Path:
        return self.dir / f"tau-{node}.json"

    def save_taus(self, node: str, taus: dict[str, EgressTau], withheld: dict[int, float] | None = None) -> None:
        """Every period: atomic (rename) but not fsynced -- after a power loss τ resumes from an
        older value, which the τ loop corrects within a few periods. `withheld`: the fraction of
        its share each quarantined pair has withheld (a restart resumes it, ffs.agent.quarantine)."""
        data = {
            "node": node,
            "saved_at": time.time(),
            "taus": {e: {"tau": s.tau, "congested": s.congested} for e, s in sorted(taus.items())},
            "withheld": {str(pid): level for pid, level in sorted((withheld or {}).items())},
        }
        _write_atomic(self.tau_path(node), data, sync=False)

    def load_withheld(self, node: str) -> dict[int, float]:
        """The quarantined pairs' withheld fractions as last saved; nothing from an unreadable file."""
        try:
            data = _read_json(self.tau_path(node))
            if self._foreign(data, node) is not None:
                return {}
            out = {int(pid): float(level) for pid, level in data.get("withheld", {}).items()}
            return {pid: level for pid, level in out.items() if 0.0 < level <= 1.0}
        except (ValueError, KeyError, TypeError, AttributeError):
            return {}

    def load_taus(self, node: str) -> dict[str, EgressTau]:
        """The saved τ per egress; an unreadable or implausible file resumes nothing (τ starts at 1)."""
        try:
            data = _read_json(self.tau_path(node))
            if self._foreign(data, node) is not None:
                return {}  # another node's τ means nothing here
            out = {}
            for e, s in data["taus"].items():
                tau, congested = float(s["tau"]), s["congested"]
                if tau >= 1.0 and tau < float("inf") and isinstance(congested, bool):
                    out[str(e)] = EgressTau(tau, congested)
            return out
        except (ValueError, KeyError, TypeError, AttributeError):  # LoadError is a ValueError
            return {}

    # -- the program instance whose tables were last verified whole --------------------------------
    def program_path(self, node: str) -> Path:
        return self.dir / f"program-{node}.json"

    def save_program(self, node: str, program_id: str) -> None:
        _write_atomic(self.program_path(node), {"node": node, "program_id": program_id}, sync=False)

    def load_program(self, node: str) -> str | None:
        try:
            data = _read_json(self.program_path(node))
            pid = data["program_id"]
            return pid if isinstance(pid, str) and self._foreign(data, node) is None else None
        except (ValueError, KeyError, TypeError, AttributeError):
            return None

    # -- the audit log ---------------------------------------------------------------------------
    @property
    def audit_path(self) -> Path:
        return self.dir / "audit.jsonl"

    @staticmethod
    def record(who: str, what: str, changes: Any, uid: int | None = None) -> dict[str, Any]:
        return {"id": uuid.uuid4().hex, "time": time.time(), "who": who, "uid": uid, "what": what, "changes": changes}

    def audit(self, who: str, what: str, changes: Any, uid: int | None = None) -> None:
        self._append(self.record(who, what, changes, uid))

    def begin(self, rec: dict[str, Any]) -> None:
        """Write a change ahead of everything it touches: fsynced before the state file or the switch."""
        self._append({**rec, "status": "pending"})

    def settle(self, rec_id: str, outcome: str, why: str) -> None:
        """Append a pending change's outcome: "commit" (the state file holds it) or "abort"."""
        self._append({"id": rec_id, "time": time.time(), "what": outcome, "why": why})

    def _append(self, rec: dict[str, Any]) -> None:
        fd = os.open(self.audit_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            line = json.dumps(rec, sort_keys=True) + "\n"
            end = os.lseek(fd, 0, os.SEEK_END)
            if end > 0 and os.pread(fd, 1, end - 1) != b"\n":
                line = "\n" + line  # a torn last line stays alone on its line, skipped by read_audit
            os.write(fd, line.encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def recover(self, node: str) -> list[str]:
        """Settle what a crash left half done (called before the agent reads its state): remove
        staged files, settle every pending change against the matrix file, and append a committed
        change the log lacks (written by a version that audited after the rename). One line per
        action taken, for the log."""
        done = []
        stray = sorted(p.name for p in self.dir.iterdir() if p.name.endswith(TMP_SUFFIX))
        for name in stray:
            (self.dir / name).unlink(missing_ok=True)
        if stray:
            done.append(f"removed temporary files a crash left in {self.dir}: {', '.join(stray)}")
        try:
            data = self._read_matrix_file(node) or {}
        except StateError:
            return done  # settled once the file is readable: which change it holds decides the outcome
        change = data.get("change")
        saved: dict[str, Any] = change if isinstance(change, dict) else {}
        records = self.read_audit()
        for rec in records:
            if rec.get("status") != "pending":
                continue
            if rec.get("id") == saved.get("id"):
                self.settle(rec["id"], "commit", "completed at start-up: the state file held it")
                done.append(
                    f"audit: change {rec['id']} by {rec.get('who')} committed at start-up (the state file held it)"
                )
            else:
                self.settle(rec["id"], "abort", "the agent stopped before the state file held it")
                done.append(
                    f"audit: change {rec['id']} by {rec.get('who')} aborted at start-up (the state file never "
                    "held it; the switch is reconciled to the saved matrix)"
                )
        if "id" in saved and all(r.get("id") != saved["id"] for r in records):
            self._append(saved)
            done.append(f"audit: appended the record of change {saved['id']} the state file holds")
        return done

    def read_audit(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The changes, oldest first, each with its "status": committed, aborted (with "why") or
        pending; outcome lines are folded into their change, never returned on their own."""
        if not self.audit_path.exists():
            return []
        out: list[dict[str, Any]] = []
        by_id: dict[str, dict[str, Any]] = {}
        for line in self.audit_path.read_text(errors="replace").splitlines():
            try:
                rec = loads_json(line, "audit line")
            except LoadError:
                continue  # a line torn by a crash mid-append: the records around it still count
            if not isinstance(rec, dict):
                continue
            if rec.get("what") in ("commit", "abort"):
                rec_id = rec.get("id")
                target = by_id.get(rec_id) if isinstance(rec_id, str) else None
                if target is not None and target.get("status") == "pending":
                    target["status"] = "committed" if rec["what"] == "commit" else "aborted"
                    if rec["what"] == "abort":
                        target["why"] = rec.get("why")
                continue
            rec.setdefault("status", "committed")  # written after its commit (earlier versions)
            out.append(rec)
            if isinstance(rec.get("id"), str):
                by_id[rec["id"]] = rec
        return out if limit is None else out[-limit:] if limit > 0 else []
