# SPDX-License-Identifier: Apache-2.0
"""ffs.core.safeload: hostile YAML and JSON end in one LoadError line, quickly and with bounded memory."""

import os
import time
import tracemalloc

import pytest

from ffs.core import safeload
from ffs.core.safeload import LoadError, load_yaml_file, loads_json, read_bytes
from hostilekit import laughs

HOSTILE_YAML = {
    "5000-deep flow": ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than 64 levels"),
    "2000-deep block": ("".join(" " * i + f"k{i}:\n" for i in range(0, 2000)), "nested deeper than 64 levels"),
    "billion laughs": (laughs(), "expands to more than 1000000 nodes"),
    "recursive alias": ("a: &a [*a]\n", "unknown or recursive alias"),
    "python tag": ("a: !!python/object/apply:os.system ['true']\n", "unsupported tag"),
    "python scalar tag": ("a: !!python/name:os.system\n", "a: could not determine a constructor"),
    "two documents": ("a: 1\n---\nb: 2\n", "expected a single document"),
    "duplicate key": ("p3: {p1: 1Mbps, p1: 2Mbps}\n", "p3.p1: duplicate key"),
    "collection key": ("? [a]\n: 1\n", "a key must be a plain value"),
    "empty": ("", "empty file"),
}


@pytest.mark.parametrize("name", list(HOSTILE_YAML))
def test_hostile_yaml_is_one_line_bounded(tmp_path, name):
    text, fragment = HOSTILE_YAML[name]
    f = tmp_path / "x.yaml"
    f.write_text(text)
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        with pytest.raises(LoadError) as e:
            load_yaml_file(f)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert fragment in str(e.value) and "\n" not in str(e.value) and str(e.value).startswith(str(f))
    assert time.perf_counter() - t0 < 10
    assert peak < 64 << 20, peak  # the 4 MiB input bound plus the parser's own state


def test_laughs_just_below_the_limit_load(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text(laughs(5))  # 9^5 = 59049 leaves: legal, if silly
    assert len(load_yaml_file(f)["e"]) == 9


def test_dev_zero_and_large_files_stop_at_the_limit(tmp_path):
    with pytest.raises(LoadError, match="more than the limit of 4 MiB"):
        read_bytes("/dev/zero")
    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(safeload.MAX_BYTES + 1)  # sparse: the size check comes before any read
    with pytest.raises(LoadError, match="above the limit"):
        load_yaml_file(big)
    with pytest.raises(LoadError, match="is a directory"):
        load_yaml_file(tmp_path)
    with pytest.raises(LoadError, match="cannot read"):
        load_yaml_file(tmp_path / "missing.yaml")
    (tmp_path / "bin.yaml").write_bytes(b"a: \xff\xfe\n")
    with pytest.raises(LoadError, match="not UTF-8"):
        load_yaml_file(tmp_path / "bin.yaml")


def test_fifo_without_writer_does_not_hang(tmp_path):
    fifo = tmp_path / "f.yaml"
    os.mkfifo(fifo)
    with pytest.raises(LoadError, match="empty file"):
        load_yaml_file(fifo)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        ('{"op": "log", "limit": Infinity}', "Infinity is not a number JSON can carry"),
        ('{"op": "log", "limit": -Infinity}', "-Infinity is not a number JSON can carry"),
        ('{"rate": NaN}', "NaN is not a number JSON can carry"),
        ('{"rate": 1e999}', "1e999 is out of the range of a number"),
        ('{"rate": ' + "9" * 5000 + "}", "invalid JSON"),
        ('{"op": ', "invalid JSON"),
        ("[" * 65 + "]" * 65, "nested deeper than 64 levels"),
    ],
)
def test_hostile_json_is_one_line(text, fragment):
    with pytest.raises(LoadError) as e:
        loads_json(text)
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_json_limits_are_exact():
    assert loads_json("[" * 64 + "]" * 64) is not None  # 64 levels: allowed
    assert loads_json('{"a": 1.5e308}') == {"a": 1.5e308}
    with pytest.raises(LoadError, match="more than the limit of 1000 bytes"):
        loads_json(b" " * 1001, limit=1000)


def test_real_files_load_unchanged(topo_dir):
    """The composer gives what yaml.safe_load gives on every shipped topology."""
    import yaml

    for f in sorted(topo_dir.glob("*.yaml")):
        assert load_yaml_file(f) == yaml.safe_load(f.read_text()), f
