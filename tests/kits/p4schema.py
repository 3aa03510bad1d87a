# SPDX-License-Identifier: Apache-2.0
"""A small reader of p4src/ that extracts what the control plane addresses: tables (keys, actions,
default, size, const entries), actions with parameter widths, Counters, Registers, Lpfs and the
per-port metadata fields, with the fully qualified names BF-Runtime gives them.

It understands the project's own layout (one construct per statement, `@name` on every key),
not P4 in general; that is enough to check, without a compiler, the const entries against
ffs.core.tables and the constants against ffs.core.constants. The names and shapes are checked
against the compiler's own output instead (ffs.core.p4names is generated from bf-rt.json).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

INTRINSIC_WIDTHS = {
    "ig_intr_md.ingress_port": 9,
    "ig_tm_md.ucast_egress_port": 9,
    "eg_intr_md.egress_port": 9,
    "eg_intr_md.pkt_length": 16,
    "ig_prsr_md.parser_err": 16,
}


@dataclass
class P4Table:
    name: str
    keys: list[tuple[str, str, int]]  # (@name, match kind, width)
    actions: list[str]
    default: str
    size: int
    # each key value: an int, None for `_`, or (lo, hi) for a range
    const_entries: list[tuple[tuple[int | None | tuple[int, int], ...], str]] = field(default_factory=list)


@dataclass
class P4Program:
    tables: dict[str, P4Table] = field(default_factory=dict)
    actions: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    counters: dict[str, tuple[int, str]] = field(default_factory=dict)  # name -> (size, type)
    registers: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (width, size)
    lpfs: dict[str, tuple[int, int]] = field(default_factory=dict)
    defines: dict[str, str] = field(default_factory=dict)
    port_metadata: list[tuple[str, int]] = field(default_factory=list)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def _block(text: str, start: int) -> tuple[str, int]:
    """The text between the brace at or after `start` and its match."""
    i = text.index("{", start)
    depth = 0
    for j in range(i, len(text)):
        if text[j] == "{":
            depth += 1
        elif text[j] == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : j], j + 1
    raise ValueError("unbalanced braces")


def read(p4dir: Path) -> P4Program:
    # the program and its library; p4src/examples/ holds other programs built on the library
    files = sorted(f for f in p4dir.rglob("*.p4") if "examples" not in f.relative_to(p4dir).parts)
    reader = _Reader("\n".join(_strip_comments(f.read_text()) for f in files))
    for top in ("FfsIngress", "FfsEgress"):
        reader.walk(top, top)
    return reader.prog


class _Reader:
    """One pass over the program's text: its #defines, typed constants, typedefs, header and struct fields and
    controls are read up front; `walk` then fills `prog` control by control."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.prog = prog = P4Program()
        for m in re.finditer(r"^[ \t]*#define[ \t]+(\w+)[ \t]+(\S+)", text, flags=re.M):
            prog.defines.setdefault(m.group(1), m.group(2))
        # typed constants: `const event_t EVENT_NO_PAIR = 3;`, `const bit<8> IP_PROTO_FFS = 253;`
        const = r"^[ \t]*(?:@noWarn\(\"unused\"\)[ \t]+)?const[ \t]+[\w<>]+[ \t]+(\w+)[ \t]*=[ \t]*(\w+)[ \t]*;"
        for m in re.finditer(const, text, flags=re.M):
            prog.defines.setdefault(m.group(1), m.group(2))
        self.typedefs = {m.group(2): int(m.group(1)) for m in re.finditer(r"typedef\s+bit<(\d+)>\s+(\w+);", text)}
        # serializable enums, `enum bit<3> event_t { PARSE_ERROR = 0, ... }`: members as event_t.PARSE_ERROR
        for m in re.finditer(r"\benum\s+bit<(\d+)>\s+(\w+)\s*{([^}]*)}", text):
            self.typedefs[m.group(2)] = int(m.group(1))
            for member in re.finditer(r"(\w+)\s*=\s*(\w+)", m.group(3)):
                prog.defines.setdefault(f"{m.group(2)}.{member.group(1)}", member.group(2))
        self.typedefs.update({"PortId_t": 9, "pid_t": int(prog.defines.get("PID_BITS", "12"))})
        # header and struct fields, for key widths
        self.fields: dict[str, dict[str, str]] = {}
        for m in re.finditer(r"\b(header|struct)\s+(\w+)\s*{", text):
            body, _ = _block(text, m.start())
            self.fields[m.group(2)] = {
                f.group(3): f.group(2)
                for f in re.finditer(r"(@\w+\s+)?([\w<>\[\]]+(?:<\w+>)?(?:\[\w+\])?)\s+(\w+)\s*;", body)
            }
        prog.port_metadata = [
            (n, self.width(t))
            for n, t in self.fields["port_metadata_t"].items()
            if not re.search(rf"@padding\s+[^;]*?\b{n}\s*;", text)
        ]
        self.controls: dict[str, tuple[str, str]] = {}  # name -> (params, body)
        for m in re.finditer(r"\bcontrol\s+(\w+)\s*\(", text):
            params_end = text.index(")", m.end())
            body, _ = _block(text, params_end)
            self.controls[m.group(1)] = (text[m.end() : params_end], body)

    def num(self, expr: str) -> int:
        """A literal, a #define, or a sum and difference of them (`MIN_FRAME + FCS_LEN - 14`)."""
        expr = expr.strip()
        while expr in self.prog.defines:
            expr = self.prog.defines[expr]
        terms = re.split(r"\s*([+-])\s*", expr)
        if len(terms) > 1:
            total, sign = 0, 1
            for t in terms:
                if t in "+-":
                    sign = 1 if t == "+" else -1
                elif t:
                    total += sign * self.num(t)
            return total
        return int(expr, 0)

    def width(self, t: str) -> int:
        t = t.strip()
        m = re.fullmatch(r"bit<(\w+)>", t)
        if m:
            return self.num(m.group(1))
        if t in self.typedefs:
            return self.typedefs[t]
        raise ValueError(f"unknown type {t}")

    def key_width(self, expr: str, md_struct: str) -> int:
        sl = re.fullmatch(r"(.*)\[(\d+):(\d+)\]", expr)  # a slice: md.port_md.trust[0:0]
        if sl:
            return int(sl.group(2)) - int(sl.group(3)) + 1
        if expr in INTRINSIC_WIDTHS:
            return INTRINSIC_WIDTHS[expr]
        if expr.endswith(".isValid()"):
            return 1
        parts = expr.split(".")
        struct = {"md": md_struct, "hdr": "headers_t"}.get(parts[0])
        if struct is None:
            raise ValueError(f"cannot size key {expr}")
        for name in parts[1:-1]:  # nested structs and headers: md.port_md.trust
            struct = self.fields[struct][name]
        return self.width(self.fields[struct][parts[-1]])

    def entry_value(self, x: str) -> int | None | tuple[int, int]:
        x = x.strip()
        if x == "_":
            return None
        if x in ("true", "false"):
            return int(x == "true")
        if "&&&" in x:
            v, m = x.split("&&&")
            return ("&&&", self.num(v), self.num(m))
        if ".." in x:
            lo, hi = x.split("..")
            return (self.num(lo), self.num(hi))
        return self.num(x)

    def walk(self, control: str, prefix: str) -> None:
        params, body = self.controls[control]
        md_struct = "egress_metadata_t" if "egress_metadata_t" in params else "ffs_metadata_t"
        # a control instance; `@name(".X")` gives it the absolute name X (the library's controls
        # keep the names ffs-agent drives whatever the host's control is called)
        for m in re.finditer(r"(?:@name\(\"(\.?[\w.]+)\"\)\s+)?\b(\w+)\(\)\s+(\w+)\s*;", body):
            if m.group(2) in self.controls:
                name = m.group(1)
                inner = name[1:] if name and name.startswith(".") else f"{prefix}.{name or m.group(3)}"
                self.walk(m.group(2), inner)
        self.actions(body, prefix)
        for m in re.finditer(r"\btable\s+(\w+)\s*{", body):
            tb, _ = _block(body, m.start())
            name = f"{prefix}.{m.group(1)}"
            self.prog.tables[name] = self.table(name, tb, md_struct)
        self.externs(body, prefix)

    def actions(self, body: str, prefix: str) -> None:
        for m in re.finditer(r"\baction\s+(\w+)\s*\(([^)]*)\)", body):
            ps = []
            for p in filter(None, (x.strip() for x in m.group(2).split(","))):
                t, n = p.rsplit(None, 1)
                ps.append((n, self.width(t)))
            self.prog.actions[f"{prefix}.{m.group(1)}"] = ps

    def table(self, name: str, tb: str, md_struct: str) -> P4Table:
        keys = []
        kb = re.search(r"key\s*=\s*{(.*?)}", tb, flags=re.S)
        for k in re.finditer(
            r"([\w.]+(?:\(\)|\[\d+:\d+\])?)\s*:\s*(\w+)\s*@name\(\"(\w+)\"\)\s*;", kb.group(1) if kb else ""
        ):
            keys.append((k.group(3), k.group(2), self.key_width(k.group(1), md_struct)))
        acts = re.search(r"actions\s*=\s*{([^}]*)}", tb).group(1)
        default = re.search(r"default_action\s*=\s*(\w+)", tb).group(1)
        size = self.num(re.search(r"size\s*=\s*(\w+)\s*;", tb).group(1))
        const = []
        ce = re.search(r"const\s+entries\s*=\s*{", tb)
        if ce:
            cb, _ = _block(tb, ce.start())
            for e in re.finditer(r"\(([^)]*)\)\s*:\s*(\w+)\s*\(\s*\)\s*;", cb):
                const.append((tuple(self.entry_value(x) for x in e.group(1).split(",")), e.group(2)))
        return P4Table(name, keys, [a.strip() for a in acts.split(";") if a.strip()], default, size, const)

    def externs(self, body: str, prefix: str) -> None:
        """The control's Counters, Registers and Lpfs."""
        prog, num, width = self.prog, self.num, self.width
        for m in re.finditer(r"\bCounter<.*?>\s*\(\s*(\w+)\s*,\s*CounterType_t\.(\w+)\s*\)\s*(\w+)\s*;", body):
            prog.counters[f"{prefix}.{m.group(3)}"] = (num(m.group(1)), m.group(2))
        for m in re.finditer(r"\bRegister<\s*([\w<>]+?)\s*,\s*\w+\s*>\s*\(\s*(\w+)\s*\)\s*(\w+)\s*;", body):
            prog.registers[f"{prefix}.{m.group(3)}"] = (width(m.group(1)), num(m.group(2)))
        for m in re.finditer(r"\bLpf<\s*([\w<>]+?)\s*,\s*\w+\s*>\s*\(\s*(?:size\s*=\s*)?(\w+)\s*\)\s*(\w+)\s*;", body):
            prog.lpfs[f"{prefix}.{m.group(3)}"] = (width(m.group(1)), num(m.group(2)))
