# SPDX-License-Identifier: Apache-2.0
"""Every command block of README.md and docs/*.md runs as written.

A fenced block tagged `sh` (or `bash`) is a command block: it runs with `bash -e -o pipefail` from the
repository's root and fails the test on a non-zero exit or a Python traceback in its output. Every
other block must say what it is (`text`, `yaml`, `json`, `p4`, `python`), so a command cannot hide
in an untagged block. Blocks that cannot run here are skipped with the reason (SKIP below); live
blocks need root. Long runs are shortened through the environment (DURATION for `make demo`).
The agent's state goes to a temporary FFS_STATE_DIR, so the blocks leave no state behind.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import ROOT, is_root

COMMAND_LANGS = {"sh", "bash"}
OTHER_LANGS = {"text", "yaml", "json", "p4", "python", "make", "console-output"}
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    file: str
    line: int
    lang: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def blocks() -> list[Block]:
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        s = path.read_text()
        for m in FENCE.finditer(s):
            out.append(Block(str(path.relative_to(ROOT)), s[: m.start()].count("\n") + 1, m.group(1), m.group(2)))
    return out


def _first(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")), "")


def _sde() -> bool:
    return bool(os.environ.get("SDE") and os.environ.get("SDE_INSTALL"))


def _setup_current() -> bool:
    """`make demo` installs the package unless `make setup` ran for this tree since its packaging
    last changed; the test never installs (it would replace the environment's package)."""
    stamp = ROOT / "build" / ".setup-stamp"
    deps = [
        ROOT / "pyproject.toml",
        ROOT / "setup.py",
        ROOT / "constraints" / "dev.txt",
        ROOT / "controlplane" / "ffs" / "switch" / "_fastpath.c",
    ]
    return stamp.exists() and all(stamp.stat().st_mtime >= d.stat().st_mtime for d in deps)


# the README's model commands: builds, the PTF suite on tofino-model and the differential, nothing else
MODEL_SUITE = re.compile(r"make (build|ptf TARGET=tofino-model|differential-model)( CHIP=tofino2)?")


def _model_suite_only(b: Block) -> bool:
    commands = [ln.split("#")[0].strip() for ln in b.text.splitlines() if ln.split("#")[0].strip()]
    return bool(commands) and all(MODEL_SUITE.fullmatch(c) for c in commands)


# first command of a block -> why it cannot run here (None: it can)
def skip_reason(b: Block) -> str | None:
    first = _first(b.text)
    if first.startswith("make test"):
        return "the test suite itself (it would run this test again)"
    if "$SDE/run_switchd.sh" in b.text:
        return "an operator's session: tofino-model, bf_switchd and the agent run until stopped"
    if _model_suite_only(b):
        return (
            "test_ptf_suite.py and test_differential_model.py run these commands (make ptf TARGET=tofino-model, "
            "make differential-model) whole, on both chips, after make test's make build for each"
        )
    if first.startswith("make build") or "$SDE/" in b.text:
        if not _sde():
            return "needs a Tofino SDE (SDE and SDE_INSTALL)"
        chip = "tofino2" if re.search(r"\b(CHIP|TARGET)=tofino2\b", b.text) else "tofino"
        defects = Path(os.environ["SDE_INSTALL"], "share", f"{chip}pd", "ffs", "compiler-defects")
        if "TARGET=tofino-model" in b.text and defects.exists() and defects.read_text().strip():
            return (
                "the installed ffs has a known compiler defect, the PTF runner refuses it: "
                f"{defects.read_text().strip()}"
            )
        return None
    if any(w in b.text for w in ("scp ", "systemctl ", "ssh://", "ffsctl fleet")):
        return (
            "an operator's session on a switch or across switches (SSH, systemd): test_agent_pythons.py, "
            "test_systemd_unit.py and test_ffsctl_fleet.py run these steps"
        )
    if first.startswith("make demo") and not _setup_current():
        return "make setup has not run for this tree (make demo would install the package)"
    live = any(
        w in b.text for w in ("ip netns", "make netns-up", "make demo", "ffs-switch run", "make ptf", "make experiment")
    )
    if live and not is_root():
        return "needs root (network namespaces, veth pairs)"
    return None


COMMANDS = [b for b in blocks() if b.lang in COMMAND_LANGS]


def test_every_block_says_what_it_is():
    untagged = [b.id for b in blocks() if b.lang not in COMMAND_LANGS | OTHER_LANGS]
    assert not untagged, f"tag these blocks sh (commands) or text/yaml/json/p4/python: {untagged}"
    assert len(COMMANDS) >= 6  # README and docs do show commands; an extraction bug finds none


@pytest.mark.parametrize("block", COMMANDS, ids=[b.id for b in COMMANDS])
def test_command_block_runs(block: Block, tmp_path):
    reason = skip_reason(block)
    if reason:
        pytest.skip(reason)
    if shutil.which("ffsctl") is None:
        pytest.skip("the console scripts are not installed (make setup)")
    # The blocks run as written, on less where a block is long (DURATION shortens the demos, a
    # PTF module and 400 probes a model run elsewhere in the docs).
    env = {
        **os.environ,
        "FFS_STATE_DIR": str(tmp_path / "state"),
        "DURATION": os.environ.get("DURATION", "6"),
        "PTF_ARGS": os.environ.get("PTF_ARGS", "test_counters"),
        "PACKETS": os.environ.get("PACKETS", "400"),
    }
    p = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", block.text],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    out = p.stdout + p.stderr
    assert p.returncode == 0, f"{block.id} exited {p.returncode}:\n{out[-3000:]}"
    assert "Traceback (most recent call last)" not in out, f"{block.id}:\n{out[-3000:]}"
    if "/tmp/ffs-rx.jsonl" in block.text:
        # the hand-run session (docs/live-mode.md) isolates as well as `make demo`: h1 keeps >= 95 % of 8 Mb/s
        # (its share is 10 Mb/s; Corollary 1: min(demand, M) whatever the flood does)
        lines = [json.loads(x) for x in Path("/tmp/ffs-rx.jsonl").read_text().splitlines() if x.strip()]
        full = lines[1:-2]  # seconds in which both senders sent the whole second
        h1 = sum(x["rates_bps"].get("10.0.1.1", 0) for x in full) / len(full)
        print(f"README hand-run example: h1 received {h1 / 1e6:.2f} Mb/s of its 8")
        assert h1 >= 0.95 * 8e6, f"h1 got {h1 / 1e6:.2f} Mb/s of 8: {lines}"


def test_testing_md_lists_every_test_file():
    listed = (ROOT / "docs" / "testing.md").read_text()
    missing = [p.name for p in sorted((ROOT / "tests").glob("test_*.py")) if f"`{p.name}`" not in listed]
    assert not missing, f"docs/testing.md does not list {missing}"
