# SPDX-License-Identifier: Apache-2.0
"""ffs-transfer: one-line errors without side effects, and a real transfer over loopback (raw
sockets of IP protocol 253, so root) that arrives byte for byte with every packet echoed."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import ROOT
from ffs.lab.cli.transfer import main, parse_size

CP = ROOT / "controlplane"


def test_sizes():
    assert parse_size("10MB") == 10**7 and parse_size("4MiB") == 4 << 20 and parse_size("1500") == 1500
    assert parse_size("2.5kB") == 2500
    for bad in ("10XB", "0", "-1", "5GiB", ""):
        with pytest.raises(ValueError):
            parse_size(bad)


@pytest.mark.parametrize(
    "args, msg",
    [
        (["send", "--dst", "127.0.0.1", "--bytes", "10XB", "--capacity", "1Mbps"], "--bytes wants a size"),
        (["send", "--dst", "127.0.0.1", "--capacity", "1Mbps"], "exactly one of --file and --bytes"),
        (["send", "--dst", "127.0.0.1", "--bytes", "1MB", "--capacity", "fast"], "not a rate"),
        (
            ["send", "--dst", "127.0.0.1", "--bytes", "1MB", "--capacity", "1Mbps", "--start-rate", "2Mbps"],
            "--start-rate must be",
        ),
        (["send", "--dst", "127.0.0.1", "--bytes", "1MB"], "--scheme minloss needs --capacity"),
    ],
)
def test_bad_input_is_one_line(args, msg):
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and "error:" in lines[0] and msg in lines[0]


def raw_ffs_sockets() -> int:
    """Raw sockets of IP protocol 253 (0xFD) open in this namespace."""
    return sum(1 for line in Path("/proc/net/raw").read_text().splitlines()[1:] if line.split()[1].endswith(":00FD"))


@pytest.mark.root
def test_transfer_over_loopback_arrives_intact(tmp_path):
    data = os.urandom(300_000)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(CP)}
    cmd = [sys.executable, "-m", "ffs.lab.cli.transfer"]
    before = raw_ffs_sockets()
    rx = subprocess.Popen(
        cmd + ["recv", "--port", "47311", "--out", str(dst), "--timeout", "20", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    end = time.monotonic() + 20  # the receiver's socket must exist before the first packet
    while raw_ffs_sockets() <= before and time.monotonic() < end and rx.poll() is None:
        time.sleep(0.05)
    tx = subprocess.run(
        cmd
        + [
            "send",
            "--dst",
            "127.0.0.1",
            "--port",
            "47311",
            "--file",
            str(src),
            "--scheme",
            "mintime",
            "--capacity",
            "40Mbps",
            "--timeout",
            "20",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    out, err = rx.communicate(timeout=30)
    assert tx.returncode == 0 and rx.returncode == 0, (tx.stderr, err)
    s, r = json.loads(tx.stdout), json.loads(out)
    assert dst.read_bytes() == data
    npk = -(-300_000 // (1400 - 56))  # payload per packet: 1400 IP bytes minus IP, shim, UDP, header
    assert s["packets"] == r["packets"] == npk and s["retransmitted"] == 0
    assert s["echoes"] == npk  # every acknowledgement echoed (no node: rri stays 0xFFFF)
    assert r["last_rri"] == 0xFFFF
    # paced at 40 Mb/s by a GCRA two packets deep: packets 0-2 leave at once, packet k at (k - 2)
    # packet times, so the last one (k = npk - 1) leaves (npk - 3) * 280 us after the first
    assert s["transfer_s"] >= (npk - 3) * 1400 * 8 / 40e6


@pytest.mark.root
def test_partial_deployment_transfer_over_loopback(tmp_path):
    """App. C mode: kernel TCP carries the data, shim probes carry the indicator and come back
    echoed; without an FFS node (rri stays 0xFFFF) the connection is never capped."""
    data = os.urandom(2_000_000)
    src, dst = tmp_path / "in.bin", tmp_path / "out.bin"
    src.write_bytes(data)
    env = {**os.environ, "PYTHONPATH": str(CP)}
    cmd = [sys.executable, "-m", "ffs.lab.cli.transfer"]
    rx = subprocess.Popen(
        cmd + ["recv", "--tcp", "--port", "47312", "--out", str(dst), "--timeout", "20", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    end = time.monotonic() + 20
    while (
        not any(
            line.split()[1].endswith(f":{47312:04X}") and line.split()[3] == "0A"
            for line in Path("/proc/net/tcp").read_text().splitlines()[1:]
        )
        and time.monotonic() < end
    ):
        time.sleep(0.05)
    tx = subprocess.run(
        cmd
        + [
            "send",
            "--scheme",
            "partial",
            "--cca",
            "cubic",
            "--dst",
            "127.0.0.1",
            "--port",
            "47312",
            "--file",
            str(src),
            "--timeout",
            "20",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
    )
    out, err = rx.communicate(timeout=30)
    assert tx.returncode == 0 and rx.returncode == 0, (tx.stderr, err)
    s, r = json.loads(tx.stdout), json.loads(out)
    assert dst.read_bytes() == data and r["bytes"] == len(data)
    # every probe that arrived came back, but for the last few (up to 3), still on their way when
    # TCP finished: with 3 or fewer arrived, none may have come back yet
    assert s["probes"] >= r["packets"] >= 1 and s["echoes"] <= r["packets"] <= s["echoes"] + 3
    assert s["cap_bps"] is None and r["last_rri"] == 0xFFFF
