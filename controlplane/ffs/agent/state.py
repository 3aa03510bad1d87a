"""The agent's files: the applied fairness matrix, τ per egress, and the audit log.

state-dir/   (owned by the agent's user, not writable by group or others)
  matrix-<node>.json   {"node", "fairness": {egress: {ingress: bit/s}}, "saved_at", "change": audit record}
  tau-<node>.json      {"node", "taus": {egress: {"tau", "congested"}}, "saved_at"}  (every period)
  program-<node>.json  {"node", "program_id"}: the loaded program whose tables were last verified whole
  audit.jsonl          one JSON object per change: id, time, who (user name), uid, what, changes

A matrix change and its audit record are committed in one atomic step: the record travels inside the
matrix file, whose rename is the commit point, and is then appended to audit.jsonl. A crash between
the rename and the append is repaired when the store is next opened (the record is appended then),
so an applied change is never left unaudited.
"""

from __future__ import annotations

import json
import os
import stat
import time
import uuid
from pathlib import Path
from typing import Any

from ffs.tau import EgressTau


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


def _write_atomic(path: Path, data: Any, sync: bool) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        if sync:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)  # readers see the old file or the new one, never half of one


class StateStore:
    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        check_private_dir(self.dir)

    # -- the matrix ------------------------------------------------------------------------------
    def matrix_path(self, node: str) -> Path:
        return self.dir / f"matrix-{node}.json"

    def stage_matrix(self, node: str, fairness: dict[str, dict[str, float]], record: dict | None = None) -> Path:
        """Write the new matrix (and the audit record of the change) next to the current one, fsynced;
        `commit_matrix` renames it in."""
        tmp = self.matrix_path(node).with_suffix(".tmp")
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump({"node": node, "fairness": fairness, "saved_at": time.time(), "change": record}, f, indent=2, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        return tmp

    def commit_matrix(self, node: str, staged: Path) -> None:
        os.replace(staged, self.matrix_path(node))
        self._sync_dir()  # the rename itself survives a crash
        self.recover_audit(node)

    def _sync_dir(self) -> None:
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def save_matrix(self, node: str, fairness: dict[str, dict[str, float]]) -> None:
        self.commit_matrix(node, self.stage_matrix(node, fairness))

    def _read_matrix_file(self, node: str) -> dict | None:
        path = self.matrix_path(node)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise TypeError("not an object")
            return data
        except (OSError, ValueError, TypeError) as e:
            raise StateError(f"{path}: unreadable saved matrix ({e}); move it away to start from the topology") from None

    def load_matrix(self, node: str) -> dict[str, dict[str, float]] | None:
        data = self._read_matrix_file(node)
        if data is None:
            return None
        path = self.matrix_path(node)
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

    def save_taus(self, node: str, taus: dict[str, EgressTau]) -> None:
        """Every period: atomic (rename) but not fsynced -- after a power loss τ resumes from an
        older value, which the τ loop corrects within a few periods."""
        data = {"node": node, "saved_at": time.time(),
                "taus": {e: {"tau": s.tau, "congested": s.congested} for e, s in sorted(taus.items())}}
        _write_atomic(self.tau_path(node), data, sync=False)

    def load_taus(self, node: str) -> dict[str, EgressTau]:
        """The saved τ per egress; an unreadable or implausible file resumes nothing (τ starts at 1)."""
        try:
            data = json.loads(self.tau_path(node).read_text())
            out = {}
            for e, s in data["taus"].items():
                tau, congested = float(s["tau"]), s["congested"]
                if tau >= 1.0 and tau < float("inf") and isinstance(congested, bool):
                    out[str(e)] = EgressTau(tau, congested)
            return out
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return {}

    # -- the program instance whose tables were last verified whole --------------------------------
    def program_path(self, node: str) -> Path:
        return self.dir / f"program-{node}.json"

    def save_program(self, node: str, program_id: str) -> None:
        _write_atomic(self.program_path(node), {"node": node, "program_id": program_id}, sync=False)

    def load_program(self, node: str) -> str | None:
        try:
            pid = json.loads(self.program_path(node).read_text())["program_id"]
            return pid if isinstance(pid, str) else None
        except (OSError, ValueError, KeyError, TypeError):
            return None

    # -- the audit log ---------------------------------------------------------------------------
    @property
    def audit_path(self) -> Path:
        return self.dir / "audit.jsonl"

    @staticmethod
    def record(who: str, what: str, changes: Any, uid: int | None = None) -> dict:
        return {"id": uuid.uuid4().hex, "time": time.time(), "who": who, "uid": uid, "what": what, "changes": changes}

    def audit(self, who: str, what: str, changes: Any, uid: int | None = None) -> None:
        self._append(self.record(who, what, changes, uid))

    def _append(self, rec: dict) -> None:
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

    def recover_audit(self, node: str) -> bool:
        """Append the committed matrix file's change record if the audit log lacks it (a crash came
        between the commit and the append). True if it appended."""
        try:
            data = self._read_matrix_file(node)
        except StateError:
            return False
        rec = (data or {}).get("change")
        if not isinstance(rec, dict) or "id" not in rec:
            return False
        if any(r.get("id") == rec["id"] for r in self.read_audit(50)):
            return False
        self._append(rec)
        return True

    def read_audit(self, limit: int | None = None) -> list[dict]:
        if not self.audit_path.exists():
            return []
        out = []
        for line in self.audit_path.read_text(errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a line torn by a crash mid-append: the records around it still count
            if isinstance(rec, dict):
                out.append(rec)
        return out if limit is None else out[-limit:] if limit > 0 else []
