# SPDX-License-Identifier: Apache-2.0
"""The other Python interpreters of this machine the tests run code under (the agent's oldest
supported Python, the one an SDE's bfshell embeds): found on PATH or under pyenv's root."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess


def find_python(version: str) -> str | None:
    """pythonX.Y on PATH, else under pyenv's root: one that runs and is that version."""
    cands = [shutil.which(f"python{version}")]
    if shutil.which("pyenv"):
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True).stdout.strip()
        if root:
            cands += sorted(glob.glob(os.path.join(root, "versions", f"{version}.*", "bin", f"python{version}")))
    for exe in filter(None, cands):
        try:
            out = subprocess.run(
                [exe, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"],
                capture_output=True,
                text=True,
                timeout=30,
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return exe
    return None


def old_python() -> str | None:
    """A Python 3.8 or 3.9, as an SDE's switchd embeds for bfshell's scripts."""
    return find_python("3.8") or find_python("3.9")
