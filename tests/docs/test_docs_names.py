# SPDX-License-Identifier: Apache-2.0
"""The P4 names the docs show exist, so that a renamed or removed name cannot linger in the prose.
In backticks in README.md, docs/ and bfrt-scripts/:

- every `action(param, ...)` names an action of p4src/ (ffs.core.p4names) with those parameters;
- every path through the controls (`rate_est.f_log`, `FfsEgress.egress_acct.malformed[port]`)
  names a table, counter, register, LPF, action or extern the program declares there;
- every name called a table, a counter or const (`gamma` table, `events` counter,
  `ri_candidate` (const)) is one, and const where it says so;
- every metadata field (`md.tau_over_k`, `hdr.bridge`) is declared in p4src/include/header.p4.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import ROOT
from ffs.core import p4names
from p4schema import _block, _strip_comments

P4 = ROOT / "p4src"
DOCS = [ROOT / "README.md", ROOT / "bfrt-scripts" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
CALL = re.compile(r"`(\w+)\(([^`()]*)\)`")


def actions() -> dict[str, set[tuple[str, ...]]]:
    """Short action name -> the parameter lists it has in any table."""
    out: dict[str, set[tuple[str, ...]]] = {}
    for t in p4names.TABLES:
        for a in t.actions:
            out.setdefault(a.short, set()).add(tuple(p for p, _ in a.params))
    return out


def stale_calls(docs: list[Path]) -> list[str]:
    known = actions()
    bad = []
    for doc in docs:
        where = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            for name, args in CALL.findall(line):
                if name not in known:
                    continue
                params = tuple(a.split("=")[0].strip() for a in args.split(",") if a.strip())  # `lw = llen − 1`
                if params and params not in known[name]:
                    bad.append(
                        f"{where}:{n}: {name}({args}) but p4src has "
                        + " or ".join(f"{name}({', '.join(p)})" for p in sorted(known[name]))
                    )
    return bad


def test_actions_named_in_the_docs_exist_with_their_parameters():
    bad = stale_calls(DOCS)
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_stale_parameter(tmp_path):
    stale = tmp_path / "stale.md"
    stale.write_text("push `set_egress(ltau, ntau, congested, lcr)` each period, `set_pair(pid, nlm)` once\n")
    (bad,) = stale_calls([stale])
    assert "set_egress(ltau, ntau, congested, lcr)" in bad and "set_egress(ltau, ltau_p, congested, lcr)" in bad


# -- tables, counters and metadata fields ----------------------------------------------------

TICKED = re.compile(r"`([^`\n]+)`")
CALLED = re.compile(r"`([\w.$]+)` (tables?|counters?|\(const\))|\b(table|counter) `([\w.$]+)`")
# what follows an object in a path: its methods (`FfsIngress.apply`, bfrt_python's `add_with_set_pair`)
METHOD = re.compile(r"apply|execute|count|get|read|add_with_\w+|set_default_with_\w+|mod_with_\w+|delete|entry")
HEADER = P4 / "include" / "header.p4"


def objects() -> list[tuple[str, str]]:
    """(fully qualified name, kind) of every table, counter, register, LPF and action of ffs.core.p4names."""
    out = [(t.name, "const table" if t.const_entries else "table") for t in p4names.TABLES]
    out += [(a.name, "action") for t in p4names.TABLES for a in t.actions]
    for v in vars(p4names).values():
        if isinstance(v, p4names.Counter):
            out.append((v.name, "counter"))
        elif isinstance(v, (p4names.Register, p4names.Lpf)):
            out.append((v.name, "register"))
    return out


def p4_externs() -> set[str]:
    """The extern instances p4src declares (`Random<bit<16>>() rng;`), whichever control holds them."""
    text = "\n".join(_strip_comments(f.read_text()) for f in P4.rglob("*.p4") if "examples" not in f.parts)
    return set(re.findall(r">\s*\([^;()]*\)\s*(\w+)\s*;", text))


def struct_fields(text: str, struct: str) -> dict[str, str]:
    """Field name -> type of a struct or header of header.p4 (FFS_HOST_METADATA and the like left out)."""
    body, _ = _block(text, re.search(rf"\b(struct|header)\s+{struct}\b", text).start())
    return {
        name: typ
        for typ, name in re.findall(r"^\s*([\w<>()\[\]\s-]+?)\s+(\w+)\s*(?:\[[^\]]*\])?\s*;", body, flags=re.M)
    }


def metadata() -> tuple[set[str], dict[str, set[str]]]:
    """The fields a control reads as md.<field> (ingress and egress metadata), and per header
    instance of headers_t (hdr.<instance>) its fields."""
    text = _strip_comments(HEADER.read_text())
    md = set(struct_fields(text, "ffs_metadata_t")) | set(struct_fields(text, "egress_metadata_t"))
    hdr = {inst: set(struct_fields(text, typ.split("[")[0])) for inst, typ in struct_fields(text, "headers_t").items()}
    return md, hdr


def vocabulary() -> tuple[dict[str, set[str]], set[str]]:
    """Every path a doc may write for a P4 object -> its kinds (`FfsIngress.pair_map.pairs`,
    `pair_map.pairs` and `pairs` for the same table), and the controls' paths themselves."""
    paths: dict[str, set[str]] = {}
    controls: set[str] = set()
    for name, kind in objects():
        parts = name.split(".")
        for i in range(len(parts)):
            paths.setdefault(".".join(parts[i:]), set()).add(kind)
        for i in range(len(parts) - 1):
            for j in range(i + 1, len(parts)):
                controls.add(".".join(parts[i:j]))
    for extern in p4_externs():
        paths.setdefault(extern, set()).add("extern")
    return paths, controls


def stale_names(docs: list[Path]) -> list[str]:
    paths, controls = vocabulary()
    md, hdr = metadata()
    roots = {c.split(".")[0] for c in controls}
    bad = []

    def check_path(token: str) -> str | None:
        """None if `token` is not a path through the controls or names what is there."""
        parts = re.sub(r"\[[^\]]*\]|\(.*\)$", "", token).split(".")
        start = next((i for i, p in enumerate(parts) if p in roots), None)
        if start is None or len(parts) - start < 2:
            return None
        rest = parts[start:]
        while rest and METHOD.fullmatch(rest[-1]):
            rest = rest[:-1]
        path = ".".join(rest)
        if path in controls or path in paths:
            return None
        if len(rest) >= 2 and ".".join(rest[:-1]) in controls and rest[-1] in paths and "extern" in paths[rest[-1]]:
            return None
        return f"`{token}`: p4src declares no {path}"

    for doc in docs:
        where = doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc
        for n, line in enumerate(doc.read_text().splitlines(), 1):
            for token in TICKED.findall(line):
                why = _field_problem(token, md, hdr, check_path)
                if why:
                    bad.append(f"{where}:{n}: {why}")
            for name, said, said_before, name_after in CALLED.findall(line):
                why = _called_problem(name, said, said_before, name_after, paths)
                if why:
                    bad.append(f"{where}:{n}: {why}")
    return bad


def _field_problem(token: str, md, hdr, check_path) -> str | None:
    """What is wrong with a ticked metadata field, header field or path (None: nothing)."""
    m = re.fullmatch(r"md\.(\w+)", token)
    h = re.fullmatch(r"hdr\.(\w+)(?:\.(\w+))?", token)
    if m:
        return None if m.group(1) in md else f"`{token}`: no metadata field {m.group(1)} in header.p4"
    if h:
        inst, fld = h.groups()
        return None if inst in hdr and (fld is None or fld in hdr[inst]) else f"`{token}`: headers_t has no {token[4:]}"
    return check_path(token)


def _called_problem(name: str, said: str, said_before: str, name_after: str, paths) -> str | None:
    """What is wrong with a name the docs call a table, const table or counter (None: nothing)."""
    name, said = (name, said) if name else (name_after, said_before)
    kinds = paths.get(
        name.split(".", 1)[1] if name.startswith(("FfsIngress.", "FfsEgress.")) and name not in paths else name
    )
    if name.startswith("$"):
        return None  # BF-RT's own tables ($PORT_METADATA, $PORT)
    if said == "(const)":
        ok = kinds is not None and "const table" in kinds
    elif said.startswith("table"):
        ok = kinds is not None and bool({"table", "const table"} & kinds)
    else:
        ok = kinds is not None and "counter" in kinds
    if not ok:
        return f"`{name}` is called {said.strip('()')} but p4src has " + (
            " and ".join(sorted(kinds)) if kinds else "no such name"
        )
    return None


def test_tables_counters_and_fields_named_in_the_docs_exist():
    bad = stale_names(DOCS)
    assert not bad, "\n".join(bad)


def test_the_check_sees_stale_tables_counters_and_fields(tmp_path):
    stale = tmp_path / "stale.md"
    stale.write_text(
        "a write to the const `ri` table; `rate_est.pairs`; `FfsIngress.pair_map.norm_k2`\n"
        "`md.k2`, `hdr.ffs.m_lm`; the `pairs` (const); the `gamma` counter; `md.tau_over_k` and `pair_map.pairs`\n"
    )
    bad = stale_names([stale])
    assert len(bad) == 7, "\n".join(bad)
    for name in (
        "`ri`",
        "rate_est.pairs",
        "norm_k2",
        "md.k2",
        "hdr.ffs.m_lm",
        "`pairs` is called const",
        "`gamma` is called counter",
    ):
        assert any(name in b for b in bad), (name, bad)
