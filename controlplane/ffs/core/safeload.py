# SPDX-License-Identifier: Apache-2.0
"""Reading YAML and JSON that someone else wrote, with bounded time and memory.

Topology and matrix files, the agent's API requests and the software switch's control requests are
parsed here, so a 5000-deep document, an alias bomb, /dev/zero, a 100k-deep JSON array or
`Infinity` ends in one `LoadError` line instead of a traceback or an exhausted machine:

- size: at most `MAX_BYTES` of input (files are read with a bounded read, never whole);
- depth: at most `MAX_DEPTH` nested collections (YAML is composed from its event stream with an
  explicit stack, so depth never reaches Python's recursion limit);
- breadth: a YAML document expands (aliases counted every time they are used) to at most
  `MAX_NODES` nodes;
- YAML: one document, safe tags only, no duplicate keys (the one place that checks them);
- JSON: finite numbers only (`NaN`, `Infinity`, `1e999` are refused).
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import stat
from pathlib import Path
from typing import Any, NoReturn

import yaml

MAX_BYTES = 4 << 20  # far above any real topology, matrix or request (the largest is a few kB)
MAX_DEPTH = 64  # the deepest real document (a topology stream's hop) nests 5 levels
MAX_NODES = 1_000_000  # nodes after alias expansion

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: same events and marks
_RESOLVER = yaml.resolver.Resolver()
_SCALARS = yaml.constructor.SafeConstructor()
_PLAIN_TAGS = (yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG)


class LoadError(ValueError):
    """Unusable input; the message is one line naming the source (and the line where known)."""


def read_bytes(path: str | Path, limit: int = MAX_BYTES) -> bytes:
    """At most `limit` bytes of a file; LoadError if it is longer or unreadable. Opening does not
    block on a FIFO without a writer, and a device such as /dev/zero is read no further than the limit."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise LoadError(f"{path}: cannot read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise LoadError(f"{path}: is a directory")
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise LoadError(f"{path}: {st.st_size} bytes, above the limit of {_size(limit)}")
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)  # pipes: wait for data
        chunks: list[bytes] = []
        total = 0
        while True:
            try:
                b = os.read(fd, min(1 << 16, limit + 1 - total))
            except OSError as e:
                raise LoadError(f"{path}: cannot read: {e.strerror}") from None
            if not b:
                break
            chunks.append(b)
            total += len(b)
            if total > limit:
                raise LoadError(f"{path}: more than the limit of {_size(limit)}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | Path, limit: int = MAX_BYTES) -> str:
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise LoadError(f"{path}: not UTF-8 text (byte {e.start})") from None


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n & ((1 << 20) - 1) else f"{n} bytes"


# --- YAML -----------------------------------------------------------------------------------


def compose_yaml(text: str, source: str = "input") -> yaml.Node | None:
    """The node graph of a single YAML document (as `yaml.compose` gives it), built without
    recursion and refused beyond the limits above; None for an empty document."""
    if len(text) > MAX_BYTES:
        raise LoadError(f"{source}: more than the limit of {_size(MAX_BYTES)}")
    composer = _Composer(source)
    try:
        for ev in yaml.parse(text, Loader=_LOADER):
            composer.feed(ev)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        problem = getattr(e, "problem", None) or str(e).splitlines()[0]
        if "nesting depth" in problem:  # PyYAML >= 6.0.3's own limit on flow collections, met first
            problem = f"nested deeper than {MAX_DEPTH} levels"
        composer.fail(mark, problem)
    return composer.root


class _Composer:
    """compose_yaml's state between two parser events: the open collections, the anchors and each
    node's size once its aliases are expanded."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.anchors: dict[str, yaml.Node] = {}
        self.sizes: dict[int, int] = {}  # id(node) -> nodes after expansion
        self.stack: list[tuple[yaml.Node, Any, int]] = []  # (collection node, its start event, its size so far)
        self.root: yaml.Node | None = None
        self.documents = 0

    def fail(self, mark: Any, problem: str) -> NoReturn:
        raise LoadError(f"{self.source}:{mark.line + 1 if mark else 0}: invalid YAML: {problem}")

    def attach(self, node: yaml.Node, size: int, mark: Any) -> None:
        stack = self.stack
        if stack:
            parent, ev, n = stack[-1]
            parent.value.append(node)
            n += size
            if n > MAX_NODES:
                self.fail(mark, f"expands to more than {MAX_NODES} nodes (an alias bomb?)")
            stack[-1] = (parent, ev, n)
        else:
            self.root = node

    def feed(self, ev: Any) -> None:
        if isinstance(ev, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                self.fail(ev.start_mark, "expected a single document")
        elif isinstance(ev, yaml.AliasEvent):
            if ev.anchor not in self.anchors:
                self.fail(ev.start_mark, f"unknown or recursive alias *{ev.anchor}")
            node = self.anchors[ev.anchor]
            self.attach(node, self.sizes[id(node)], ev.start_mark)
        elif isinstance(ev, yaml.ScalarEvent):
            self.scalar(ev)
        elif isinstance(ev, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            self.start(ev)
        elif isinstance(ev, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            self.end(ev)

    def scalar(self, ev: Any) -> None:
        tag = ev.tag if ev.tag not in (None, "!") else _RESOLVER.resolve(yaml.ScalarNode, ev.value, ev.implicit)
        node = yaml.ScalarNode(tag, ev.value, ev.start_mark, ev.end_mark, style=ev.style)
        self.sizes[id(node)] = 1
        if ev.anchor is not None:
            self.anchors[ev.anchor] = node
        self.attach(node, 1, ev.start_mark)

    def start(self, ev: Any) -> None:
        if len(self.stack) >= MAX_DEPTH:
            self.fail(ev.start_mark, f"nested deeper than {MAX_DEPTH} levels")
        seq = isinstance(ev, yaml.SequenceStartEvent)
        kind = yaml.SequenceNode if seq else yaml.MappingNode
        tag = ev.tag if ev.tag not in (None, "!") else _RESOLVER.resolve(kind, None, ev.implicit)
        self.stack.append((kind(tag, [], ev.start_mark, None, flow_style=ev.flow_style), ev, 1))

    def end(self, ev: Any) -> None:
        node, start, n = self.stack.pop()
        node.end_mark = ev.end_mark
        if isinstance(node, yaml.MappingNode):
            it = iter(node.value)
            node.value = list(zip(it, it))
            _check_keys(node, self.source)
        self.sizes[id(node)] = n
        if start.anchor is not None:
            self.anchors[start.anchor] = node  # only now: an alias inside its own anchor is refused
        self.attach(node, n, ev.start_mark)


def _check_keys(node: yaml.MappingNode, source: str) -> None:
    """Keys are plain values (a collection as a key has no path to name it by)."""
    for k, _ in node.value:
        if not isinstance(k, yaml.ScalarNode):
            raise LoadError(f"{source}:{k.start_mark.line + 1}: a key must be a plain value, not a collection")


class YamlDoc:
    """A YAML document as Python data (YAML 1.1 safe types, as `yaml.safe_load` gives them, with
    string keys) that remembers the line of every key path ("nodes.n1.fairness.j"), so that callers
    can name the line of a semantic error. `error` is the exception class raised."""

    error: type[Exception] = LoadError

    def __init__(self, source: str | Path, text: str) -> None:
        self.path = source
        self.lines: dict[str, int] = {}
        try:
            root = compose_yaml(text, str(source))
        except LoadError as e:
            raise self.error(str(e)) from None
        if root is None:
            raise self.error(f"{source}:1: empty file")
        self.data = self._convert(root, "")

    def _convert(self, node: yaml.Node, path: str) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if not isinstance(node, yaml.ScalarNode) and node.tag not in _PLAIN_TAGS:
            self._fail(path or "(document)", f"unsupported tag {node.tag}", line=node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            out: dict[str, Any] = {}
            for k, v in node.value:
                key = str(k.value)
                sub = f"{path}.{key}" if path else key
                if key in out:  # YAML keys are unique: a silently overwritten entry is a mistake we must not apply
                    self._fail(sub, "duplicate key", line=k.start_mark.line + 1)
                out[key] = self._convert(v, sub)
                self.lines[sub] = k.start_mark.line + 1  # errors point at the key's line
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self._convert(v, f"{path}[{i}]") for i, v in enumerate(node.value)]
        try:
            return _SCALARS.construct_object(node, deep=True)
        except yaml.YAMLError as e:
            self._fail(
                path or "(document)",
                f"{getattr(e, 'problem', None) or 'unreadable value'}",
                line=node.start_mark.line + 1,
            )

    def line(self, path: str) -> int:
        while path and path not in self.lines:
            path = path.rsplit(".", 1)[0] if "." in path else ""
        return self.lines.get(path, 1)

    def _fail(self, path: str, problem: str, line: int | None = None) -> NoReturn:
        raise self.error(f"{self.path}:{line or self.line(path)}: {path}: {problem}")


def load_yaml_file(path: str | Path) -> Any:
    """A YAML (or JSON) file as Python data, within the limits; LoadError otherwise."""
    return YamlDoc(path, read_text(path)).data


# --- JSON -----------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON can carry")


def _finite_float(text: str) -> float:
    x = float(text)
    if not math.isfinite(x):
        raise ValueError(f"{text} is out of the range of a number")
    return x


def loads_json(data: str | bytes, source: str = "request", limit: int = MAX_BYTES) -> Any:
    """One JSON document within the limits, finite numbers only; LoadError otherwise."""
    if len(data) > limit:
        raise LoadError(f"{source}: more than the limit of {_size(limit)}")
    try:
        value = json.loads(data, parse_constant=_refuse_constant, parse_float=_finite_float)
    except RecursionError:
        raise LoadError(f"{source}: nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as e:  # JSONDecodeError, a refused constant, a too-long integer, bad UTF-8
        raise LoadError(f"{source}: invalid JSON: {str(e).splitlines()[0] if str(e) else type(e).__name__}") from None
    _check_depth(value, source)
    return value


def _check_depth(value: Any, source: str) -> None:
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, (dict, list)):
            if d > MAX_DEPTH:
                raise LoadError(f"{source}: nested deeper than {MAX_DEPTH} levels")
            stack.extend((x, d + 1) for x in (v.values() if isinstance(v, dict) else v))
