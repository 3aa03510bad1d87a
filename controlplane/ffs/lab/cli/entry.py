# SPDX-License-Identifier: Apache-2.0
"""The laboratory's commands (ffs-sim, ffs-switch, ffs-transfer) as installed beside the agent: on a
switch's Python, or where a command needs a package of the [lab] extra that is not installed, they
say so in one line instead of a traceback."""

from __future__ import annotations

import importlib
import os
import sys

LAB_PACKAGES = {"scipy", "scapy", "matplotlib", "networkx", "tqdm"}  # pyproject.toml's [lab]


def _run(module: str) -> None:
    prog = os.path.basename(sys.argv[0]) or module
    if sys.version_info < (3, 11):
        sys.exit(
            f"{prog}: error: the laboratory needs Python 3.11 or later (this is {sys.version.split()[0]}); "
            "ffs-agent and ffsctl run here"
        )
    try:
        importlib.import_module(module).main()  # the commands import some of the lab's packages only when they run
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in LAB_PACKAGES:
            raise
        sys.exit(f"{prog}: error: the laboratory is not installed ({e.name} missing): pip install 'ffs-tofino[lab]'")


def sim() -> None:
    _run("ffs.lab.cli.sim")


def switch() -> None:
    _run("ffs.lab.cli.switch")


def transfer() -> None:
    _run("ffs.lab.cli.transfer")
