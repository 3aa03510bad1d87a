"""The agent's files: the applied fairness matrix (rewritten atomically) and the audit log (append-only).

state-dir/
  matrix-<node>.json   {"node": ..., "fairness": {egress: {ingress: bit/s}}, "saved_at": ...}
  audit.jsonl          one JSON object per change: time, who, what, changes
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

    def _matrix_path(self, node: str) -> Path:
        return self.dir / f"matrix-{node}.json"

    def save_matrix(self, node: str, fairness: dict[str, dict[str, float]]) -> None:
        path = self._matrix_path(node)
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump({"node": node, "fairness": fairness, "saved_at": time.time()}, f, indent=2, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)  # readers see the old file or the new one, never half of one

    def load_matrix(self, node: str) -> dict[str, dict[str, float]] | None:
        path = self._matrix_path(node)
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

    def audit(self, who: str, what: str, changes: Any) -> None:
        rec = {"time": time.time(), "who": who, "what": what, "changes": changes}
        fd = os.open(self.audit_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(rec, sort_keys=True) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)

    def read_audit(self, limit: int | None = None) -> list[dict]:
        if not self.audit_path.exists():
            return []
        lines = self.audit_path.read_text().splitlines()
        if limit is not None:
            lines = lines[-limit:]
        return [json.loads(x) for x in lines if x.strip()]
