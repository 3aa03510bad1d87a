"""`make demo-tofino-model` in CI: ffs-agent --target tofino on bf_switchd + tofino-model holds the
flood to its share and follows an ffsctl matrix change (ffs.demo_tofino); its verdict checks every
stream against the exact allocation (Eq. 1-2) in both phases (docs/results.md)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sdekit import sde_missing

ROOT = Path(__file__).resolve().parent.parent


def why_not() -> str | None:
    why = sde_missing("ffs")
    if why:
        return why
    installed = Path(os.environ["SDE_INSTALL"], "share", "tofinopd", "ffs", "p4src.sha256")
    want = subprocess.run(["make", "-s", "-C", str(ROOT), "p4src-sha256"], capture_output=True, text=True).stdout.strip()
    if not installed.exists() or installed.read_text().strip() != want:
        return "the installed ffs is not this checkout's p4src/: make build (make test does it when an SDE is set)"
    return None


@pytest.mark.root
@pytest.mark.skipif(why_not() is not None, reason=why_not() or "")
def test_the_agent_on_tofino_model_holds_the_flood_and_follows_a_matrix_change(tmp_path):
    p = subprocess.run([sys.executable, "-m", "ffs.demo_tofino", "--log-dir", str(tmp_path / "logs")], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert "ffsctl matrix set" in out and ": applied" in out, out[-3000:]
    assert p.returncode == 0 and "verdict: FFS held every stream to its exact allocation" in out, out[-3000:]
