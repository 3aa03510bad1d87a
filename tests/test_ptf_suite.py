"""`make test` runs the PTF suite (ptf-tests/) against the software switch in a private namespace."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

RUN = Path(__file__).resolve().parent.parent / "ptf-tests" / "run" / "model" / "run"


@pytest.mark.skipif(os.geteuid() != 0, reason="the PTF suite needs root (namespaces, veth pairs, raw sockets): run make test as root")
@pytest.mark.skipif(shutil.which("ptf") is None, reason="the ptf package is not installed: make setup")
def test_ptf_suite_on_the_software_switch():
    p = subprocess.run([str(RUN)], capture_output=True, text=True, timeout=600)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-6000:]
    ran = [line for line in out.splitlines() if line.startswith("Ran ")]
    assert ran and int(ran[-1].split()[1]) >= 15, out[-3000:]  # the whole suite ran, not a subset
