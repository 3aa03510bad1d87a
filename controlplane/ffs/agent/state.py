"""The agent's files: the applied fairness matrix (rewritten atomically) and the audit log (append-only).

state-dir/
  matrix-<node>.json   {"node": ..., "fairness": {egress: {ingress: bit/s}}, "saved_at": ...}
  audit.jsonl          one JSON object per change: time, who (user name), uid, what, changes
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


class StateStore:
    def __init__(self, directory: str | Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)

    def matrix_path(self, node: str) -> Path:
        return self.dir / f"matrix-{node}.json"

    def stage_matrix(self, node: str, fairness: dict[str, dict[str, float]]) -> Path:
        """Write the new matrix next to the current one (fsynced); `commit_matrix` renames it in."""
        tmp = self.matrix_path(node).with_suffix(".tmp")
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            json.dump({"node": node, "fairness": fairness, "saved_at": time.time()}, f, indent=2, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        return tmp

    def commit_matrix(self, node: str, staged: Path) -> None:
        os.replace(staged, self.matrix_path(node))  # readers see the old file or the new one, never half of one
        fd = os.open(self.dir, os.O_RDONLY)
        try:
            os.fsync(fd)  # the rename itself survives a crash
        finally:
            os.close(fd)

    def save_matrix(self, node: str, fairness: dict[str, dict[str, float]]) -> None:
        self.commit_matrix(node, self.stage_matrix(node, fairness))

    def load_matrix(self, node: str) -> dict[str, dict[str, float]] | None:
        path = self.matrix_path(node)
        if not path.exists():
            return None
        try:
            data = json.loads(path.read_text())
            return {e: {i: float(v) for i, v in col.items()} for e, col in data["fairness"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
            raise ValueError(f"{path}: unreadable saved matrix ({e}); move it away to start from the topology") from None

    @property
    def audit_path(self) -> Path:
        return self.dir / "audit.jsonl"

    def audit(self, who: str, what: str, changes: Any, uid: int | None = None) -> None:
        rec = {"time": time.time(), "who": who, "uid": uid, "what": what, "changes": changes}
        fd = os.open(self.audit_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(rec, sort_keys=True) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_audit(self, limit: int | None = None) -> list[dict]:
        if not self.audit_path.exists():
            return []
        out = []
        for line in self.audit_path.read_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue  # a line torn by a crash mid-append: the records around it still count
        return out if limit is None else out[-limit:] if limit > 0 else []
