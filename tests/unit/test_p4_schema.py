# SPDX-License-Identifier: Apache-2.0
"""Without a compiler: every table, action, counter, register and LPF that the control plane and the
software switch use (ffs.core.p4names) is declared in p4src/ under the same name, with the same keys,
parameters and sizes, and the other way round."""

import shutil

import pytest

from conftest import ROOT
from ffs.core import p4names, tables
from ffs.core.entries import Range, Ternary, action_name
from p4schema import read

P4 = ROOT / "p4src"


def mismatches(prog) -> list[str]:
    out = []
    want_tables = {t.name: t for t in p4names.TABLES}
    for name in sorted(set(want_tables) ^ set(prog.tables)):
        out.append(f"table {name}: only in {'p4names' if name in want_tables else 'p4src'}")
    for name, t in want_tables.items():
        p = prog.tables.get(name)
        if p is not None:
            out += _table_mismatches(name, t, p, prog.actions)
    for kind, want, got in (
        ("counter", {c.name: (c.size, c.kind) for c in p4names.COUNTERS}, prog.counters),
        ("register", {r.name: (r.width, r.size) for r in p4names.REGISTERS}, prog.registers),
        ("lpf", {lpf.name: (lpf.width, lpf.size) for lpf in p4names.LPFS}, prog.lpfs),
    ):
        for name in sorted(set(want) | set(got)):
            if want.get(name) != got.get(name):
                out.append(f"{kind} {name}: p4names {want.get(name)} != p4src {got.get(name)}")
    if list(p4names.PORT_METADATA.fields) != prog.port_metadata:
        out.append(f"port metadata {list(p4names.PORT_METADATA.fields)} != p4src {prog.port_metadata}")
    return out


def _table_mismatches(name, t, p, actions) -> list[str]:
    """Where p4names' table `t` and p4src's `p` differ: keys, actions, default, size, const entries
    and the parameters of its actions."""
    out = []
    keys = [(k.name, k.match, k.width) for k in t.keys]
    if keys != p.keys:
        out.append(f"table {name}: keys {keys} != p4src {p.keys}")
    if sorted(a.short for a in t.actions) != sorted(p.actions):
        out.append(f"table {name}: actions {[a.short for a in t.actions]} != p4src {p.actions}")
    if action_name(t.default_action) != p.default:
        out.append(f"table {name}: default {t.default_action} != p4src {p.default}")
    if t.size != p.size:
        out.append(f"table {name}: size {t.size} != p4src {p.size}")
    if t.const_entries != bool(p.const_entries):
        out.append(f"table {name}: const entries differ")
    for a in t.actions:
        params = actions.get(a.name)
        if params is None:
            out.append(f"action {a.name}: not declared in p4src")
        elif list(a.params) != params:
            out.append(f"action {a.name}: params {list(a.params)} != p4src {params}")
    return out


def test_p4src_and_p4names_agree():
    assert mismatches(read(P4)) == []


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


@pytest.mark.parametrize(
    "path, old, new, expect",
    [
        (
            "include/control/pair_map.p4",
            "table pairs {",
            "table pair_table {",
            "table FfsIngress.pair_map.pairs: only in p4names",
        ),
        (
            "include/control/normalize.p4",
            "action gamma_frac(rnd_t thr)",
            "action gamma_frac(bit<8> thr)",
            "gamma_frac: params",
        ),
        (
            "include/control/ffs_core.p4",
            "(0, 0, 1, 1, 0, _, _, _, _, _, _, _, _, _, _, _): ffs_drop();",
            "(0, 0, 1, 1, 1, _, _, _, _, _, _, _, _, _, _, _): ffs_drop();",
            None,
        ),
        ("include/control/rate_estimation.p4", '@name("l3_len")', '@name("len")', "len_log: keys"),
        ("include/control/ffs_core.p4", "RateEstimation() rate_est;", "RateEstimation() estimator;", "only in"),
        ("ffs.p4", "@name(\".FfsIngress\") FfsCore() ffs;", "FfsCore() ffs;", "only in"),
        (
            "include/control/egress_accounting.p4",
            "accepted;",
            "accepted_bytes;",
            "counter FfsEgress.egress_acct.accepted",
        ),
    ],
)
def test_checker_catches_a_renamed_object(tmp_path, path, old, new, expect):
    copy = tmp_path / "p4src"
    shutil.copytree(P4, copy)
    f = copy / path
    text = f.read_text()
    assert old in text
    f.write_text(text.replace(old, new))
    if expect is None:  # a const entry changed: the generator check must see it
        prog = read(copy)
        gen = [tuple(_as_p4(e.key[k.name], k.width) for k in p4names.FATE.keys) for e in tables.fate_entries()]
        assert [k for k, _ in prog.tables[p4names.FATE.name].const_entries] != gen
        return
    assert any(expect in m for m in mismatches(read(copy)))
