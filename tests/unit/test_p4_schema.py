# SPDX-License-Identifier: Apache-2.0
"""Without a compiler: the const entries p4src/ writes into its tables are those ffs.core.tables
generates, so the software switch runs the P4 program's decisions. (That ffs.core.p4names names the
compiled objects is checked against bf-rt.json: tests/sde/test_p4names_bfrt.py.)"""

import shutil

import pytest

from conftest import ROOT
from ffs.core import p4names, tables
from ffs.core.entries import Range, Ternary
from p4schema import read

P4 = ROOT / "p4src"


def _as_p4(key, width: int):
    """A generated key value as the P4 source writes it: a number, `_`, or a range."""
    if isinstance(key, Range):
        return (key.low, key.high)
    if isinstance(key, Ternary):
        if key.mask == 0:
            return None
        if key.mask != (1 << width) - 1:
            return ("&&&", key.value, key.mask)
        return key.value
    return key.value


@pytest.mark.parametrize("table", p4names.CONST_TABLES, ids=lambda t: t.name)
def test_const_entries_match_the_generator(table):
    """The const entries of p4src/ are those of ffs.core.tables, in the same order (the first match
    wins), so the software switch runs exactly the P4 program's decisions."""
    prog = read(P4)
    p4 = prog.tables[table.name].const_entries
    gen = [
        (tuple(_as_p4(e.key[k.name], k.width) for k in table.keys), e.action_name)
        for e in tables.const_entries()[table.name]
    ]
    assert p4 == gen


def test_const_entry_check_sees_a_changed_entry(tmp_path):
    """An edited const entry of fate in p4src/ no longer matches ffs.core.tables' generator."""
    copy = tmp_path / "p4src"
    shutil.copytree(P4, copy)
    f = copy / "include/control/ffs_core.p4"
    old = "(0, 0, 1, 1, 0, _, _, _, _, _, _, _, _, _, _, _): ffs_drop();"
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, "(0, 0, 1, 1, 1, _, _, _, _, _, _, _, _, _, _, _): ffs_drop();"))
    prog = read(copy)
    gen = [tuple(_as_p4(e.key[k.name], k.width) for k in p4names.FATE.keys) for e in tables.fate_entries()]
    assert [k for k, _ in prog.tables[p4names.FATE.name].const_entries] != gen
