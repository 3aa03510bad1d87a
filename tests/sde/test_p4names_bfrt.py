# SPDX-License-Identifier: Apache-2.0
"""controlplane/ffs/core/p4names.py is what `make names` generates from the bf-rt.json (and context.json)
of a build already in build/<chip>/ffs (make build or make compile wrote it), for each chip: the P4
source is the one source of the names, and a hand edit or a stale copy fails here, naming the first
line that differs. No compiler runs here; test_compiled_program compiles and checks the same.
Skipped, saying why, when there is no build or it is older than p4src/."""

from __future__ import annotations

import pytest

from conftest import ROOT
from ffs.core import p4names_gen

P4NAMES = ROOT / "controlplane" / "ffs" / "core" / "p4names.py"


def _build(chip: str):
    bfrt = ROOT / "build" / chip / "ffs" / "bf-rt.json"
    if not bfrt.exists():
        pytest.skip(f"no build/{chip}/ffs/bf-rt.json: make build CHIP={chip} (needs the SDE) compiles one")
    newer = [p for p in (ROOT / "p4src").rglob("*.p4") if p.stat().st_mtime > bfrt.stat().st_mtime]
    if newer:
        pytest.skip(f"build/{chip} is older than {newer[0].relative_to(ROOT)}: make build CHIP={chip}")
    return bfrt


@pytest.mark.parametrize("chip", ["tofino", "tofino2"])
def test_p4names_is_generated_from_the_compiled_bfrt_json(chip):
    bfrt = _build(chip)
    generated = p4names_gen.render(p4names_gen.read(bfrt))
    assert p4names_gen.first_difference(P4NAMES.read_text(), generated) is None, "run make names"


@pytest.mark.parametrize(
    "old, new, line",
    [
        ('"FfsIngress.pair_map.pairs"', '"FfsIngress.pair_map.pair_table"', "pair_table"),  # a renamed table
        ('Key("l3_len", "ternary", 16)', 'Key("l3_len", "ternary", 8)', '"ternary", 8'),  # a key's width
        ('"FfsIngress.normalize.gamma_frac", (("thr", 16),)', '"FfsIngress.normalize.gamma_frac", (("thr", 8),)', "8"),
        ("size=8192,", "size=4096,", "size=4096"),
    ],
)
def test_check_names_a_hand_edit(tmp_path, capsys, old, new, line):
    """`--check` exits 1 with one line naming the first edited line of a copy (make names would undo it)."""
    bfrt = _build("tofino")
    text = P4NAMES.read_text()
    assert text.count(old) == 1
    edited = tmp_path / "p4names.py"
    edited.write_text(text.replace(old, new))
    assert p4names_gen.main(["--bfrt", str(bfrt), "--check", str(edited)]) == 1
    (err,) = capsys.readouterr().err.splitlines()
    n = text.splitlines().index(next(x for x in text.splitlines() if old in x)) + 1
    assert f"line {n}:" in err and line in err
    assert p4names_gen.main(["--bfrt", str(bfrt), "--check", str(P4NAMES)]) == 0
