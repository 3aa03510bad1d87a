"""The P4 names the docs show exist: every `action(param, ...)` written in backticks in README.md,
docs/ and bfrt-scripts/ names an action of p4src/ (ffs.p4names) with those parameters, so a renamed
action or parameter (ntau became ltau_p, lm became nlm) cannot linger in the prose."""

from __future__ import annotations

import re
from pathlib import Path

from ffs import p4names

ROOT = Path(__file__).resolve().parent.parent
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
                    bad.append(f"{where}:{n}: {name}({args}) but p4src has "
                               + " or ".join(f"{name}({', '.join(p)})" for p in sorted(known[name])))
    return bad


def test_actions_named_in_the_docs_exist_with_their_parameters():
    bad = stale_calls(DOCS)
    assert not bad, "\n".join(bad)


def test_the_check_sees_a_stale_parameter(tmp_path):
    stale = tmp_path / "stale.md"
    stale.write_text("push `set_egress(ltau, ntau, congested, lcr)` each period, `set_pair(pid, nlm)` once\n")
    (bad,) = stale_calls([stale])
    assert "set_egress(ltau, ntau, congested, lcr)" in bad and "set_egress(ltau, ltau_p, congested, lcr)" in bad
