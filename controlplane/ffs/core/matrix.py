# SPDX-License-Identifier: Apache-2.0
"""Fairness matrices {egress: {ingress: bit/s}}: reading them from files and requests, checking
them against a node, and comparing two. Light on imports, so ffsctl and the bfshell scripts can
use it without the agent's machinery."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Dict

from ffs.core import constants
from ffs.core.safeload import LoadError, YamlDoc, read_text
from ffs.core.shares import share_problem
from ffs.core.topology import Node
from ffs.core.units import format_rate, parse_rate

Matrix = Dict[str, Dict[str, float]]  # typing's: bfshell (Python 3.8) imports this module


class MatrixError(ValueError):
    """A proposed fairness matrix is invalid; nothing was changed."""


def parse_matrix(data: Any, source: str = "matrix") -> Matrix:
    """{egress: {ingress: rate}} (rates as '400Mbps' or bit/s), optionally under `fairness:`."""
    if isinstance(data, dict) and "fairness" in data:
        data = data["fairness"]
    if not isinstance(data, dict) or not data:
        raise MatrixError(f"{source}: expected a mapping egress -> ingress -> rate")
    out: Matrix = {}
    for e, col in data.items():
        if not isinstance(col, dict):
            raise MatrixError(f"{source}: {e}: expected a mapping ingress -> rate")
        out[str(e)] = {}
        for i, r in col.items():
            try:
                out[str(e)][str(i)] = parse_rate(r)
            except ValueError as err:
                raise MatrixError(f"{source}: M({i},{e}): {err}") from None
    return out


class _MatrixDoc(YamlDoc):
    error = MatrixError


def parse_matrix_text(text: str, source: str = "matrix") -> Matrix:
    """A matrix file's text (YAML or JSON), as ffsctl sends it: a one-line MatrixError naming
    `source` if it is unusable (too large or deep, duplicate keys: ffs.core.safeload; a bad rate)."""
    return parse_matrix(_MatrixDoc(source, text).data, source)


def load_matrix_file(path: str | Path) -> Matrix:
    """A matrix file (YAML or JSON); a one-line MatrixError naming the file if it is unusable
    (unreadable, too large or deep, duplicate keys: ffs.core.safeload)."""
    return parse_matrix_text(read_matrix_text(path), str(path))


def read_matrix_text(path: str | Path) -> str:
    """A matrix file's text, unparsed (the agent parses it); a one-line MatrixError if unreadable."""
    try:
        return read_text(path)
    except LoadError as e:
        raise MatrixError(str(e)) from None


def validate_matrix(node: Node, fairness: object) -> Matrix:
    """Check a whole proposed matrix {egress: {ingress: bit/s}} for a node; return it with float rates
    or raise MatrixError naming the first problem. Nothing is changed either way."""
    ifs = node.interfaces
    have = ", ".join(sorted(ifs))
    if not isinstance(fairness, dict):
        raise MatrixError("a matrix maps egress -> ingress -> rate")
    out: Matrix = {}
    for e, col in fairness.items():
        if e not in ifs:
            raise MatrixError(f"unknown egress interface {e!r} (node {node.name} has {have})")
        if not isinstance(col, dict):
            raise MatrixError(f"egress {e}: expected ingress -> rate")
        out[e] = {}
        for i, rate in col.items():
            if i not in ifs:
                raise MatrixError(f"unknown ingress interface {i!r} (node {node.name} has {have})")
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or math.isnan(rate) or math.isinf(rate):
                raise MatrixError(f"M({i},{e}) must be a finite rate, got {rate!r}")
            if rate < 0:
                raise MatrixError(f"M({i},{e}) is negative ({rate!r})")
            out[e][i] = float(rate)
        total = sum(out[e].values())
        for i, rate in out[e].items():
            problem = share_problem(i, e, rate, total)
            if problem:
                raise MatrixError(problem)
        if total <= 0:
            # T_j defaults to the column sum: an all-zero column would drop everything toward e
            raise MatrixError(f"entries toward {e} sum to 0; leave the column out to stop managing {e}")
        limit = node.targets.get(e, ifs[e].capacity)
        if total > limit * (1 + 1e-9):
            what = "target" if e in node.targets else "capacity"
            raise MatrixError(f"entries toward {e} sum to {format_rate(total)}, above its {what} {format_rate(limit)}")
    if len(ifs) ** 2 > constants.NUM_PAIRS:
        raise MatrixError(f"node {node.name}: {len(ifs)} interfaces need more than {constants.NUM_PAIRS} pairs")
    return out


def validate_saved(node: Node, saved: Matrix, path: Path) -> Matrix:
    """A matrix saved in `path`, validated for the node it is loaded for (at start, and by
    `ffs-agent --check`); one line naming the file when the topology no longer fits it."""
    try:
        return validate_matrix(node, saved)
    except MatrixError as e:
        raise MatrixError(f"{path}: the saved matrix no longer fits the topology: {e}") from None


def diff_matrices(old: Matrix, new: Matrix) -> list[dict[str, Any]]:
    """Every entry that differs, as {"ingress", "egress", "old", "new"} (None where absent)."""
    out = []
    for e in sorted(set(old) | set(new)):
        for i in sorted(set(old.get(e, {})) | set(new.get(e, {}))):
            a, b = old.get(e, {}).get(i), new.get(e, {}).get(i)
            if a != b:
                out.append({"ingress": i, "egress": e, "old": a, "new": b})
    return out
