# SPDX-License-Identifier: Apache-2.0
"""Every source file of the tree names its licence in its first lines (SPDX), as the P4 anchors do."""

from __future__ import annotations

import subprocess

from conftest import ROOT

ID = "SPDX-License-Identifier: Apache-2.0"
SOURCE_SUFFIXES = (".py", ".p4", ".c", ".sh", ".service")
SCRIPTS = {"Makefile", ".ci/run", ".ci/try-versions", "ptf-tests/run/model/run", "ptf-tests/run/tofino-model/run"}


def sources() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
        files = out.split()
    except (OSError, subprocess.CalledProcessError):  # an unpacked archive: what a checkout would track
        files = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*") if p.is_file() and ".git" not in p.parts]
    return sorted(f for f in files if f.endswith(SOURCE_SUFFIXES) or f in SCRIPTS)


def test_every_source_file_names_its_licence():
    files = sources()
    assert "p4src/ffs.p4" in files and "controlplane/ffs/agent/core.py" in files
    missing = [f for f in files if (ROOT / f).exists() and ID not in "\n".join((ROOT / f).read_text().split("\n")[:3])]
    assert not missing, f"no `{ID}` in the first three lines of: " + ", ".join(missing)
