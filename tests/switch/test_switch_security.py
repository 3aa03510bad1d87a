# SPDX-License-Identifier: Apache-2.0
"""The software switch's control service (docs/security.md): owner-only by default, socket modes
that never follow the umask, TCP only on loopback and with a warning, bounded requests, and reads
that let forwarding in between chunks."""

import logging
import os
import socket
import stat
import threading
from pathlib import Path

import grpc
import pytest

from agentkit import dump
from ffs.core import p4names
from ffs.driver import wire
from ffs.switch import runtime as control_mod
from ffs.switch.driver import LocalDriver, ModelDriver
from ffs.switch.runtime import SwitchControl
from ffs.switch.server import serve, stop
from switchkit import rig


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def ctl():
    return SwitchControl(rig().pipeline)


def test_default_address_is_an_owner_only_unix_socket(monkeypatch):
    addr = wire.default_control_address()
    assert addr.startswith("unix:") and addr.endswith("/switch.sock")
    if os.geteuid() == 0:
        assert addr == "unix:/run/ffs/switch.sock"
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/1000")
    assert wire.default_control_address() == "unix:/run/user/1000/ffs/switch.sock"


def test_a_clean_stop_removes_the_control_socket_it_bound(ctl, tmp_path):
    """`ffs-switch run` stopping cleanly leaves no socket behind; a socket a successor bound at the
    same path since is the successor's, and stays."""
    sock = tmp_path / "switch.sock"
    stop(serve(ctl, f"unix:{sock}"))
    assert not sock.exists()
    first = serve(ctl, f"unix:{sock}")
    sock.unlink()
    second = serve(ctl, f"unix:{sock}")
    stop(first)
    assert stat.S_ISSOCK(os.stat(sock).st_mode)  # the second switch's, still served
    stop(second)
    assert not sock.exists()


def test_socket_mode_does_not_follow_the_umask(ctl, tmp_path):
    sock = tmp_path / "run" / "ffs" / "switch.sock"
    old = os.umask(0)
    try:
        server = serve(ctl, f"unix:{sock}")
    finally:
        os.umask(old)
    try:
        assert mode(sock) == 0o600 and stat.S_ISSOCK(os.stat(sock).st_mode)
        assert mode(sock.parent) == mode(sock.parent.parent) == 0o700  # created by the switch: private
        assert [p.name for p in sock.parent.iterdir()] == ["switch.sock"]  # the bind directory is gone
        d = ModelDriver(f"unix:{sock}")
        d.connect(timeout_s=10)
        assert d.program_id() == ctl.program_id
        d.close()
    finally:
        server.stop(0)


def test_unsafe_or_busy_paths_are_refused(ctl, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)  # writable by all, no sticky bit: anyone could swap the socket
    with pytest.raises(OSError, match="writable by others"):
        serve(ctl, f"unix:{shared}/s.sock")
    regular = tmp_path / "file.sock"
    regular.write_text("not a socket")
    with pytest.raises(OSError, match="not this user's socket"):
        serve(ctl, f"unix:{regular}")
    assert regular.read_text() == "not a socket"
    # a stale socket (nobody listening) is replaced; a live one is not
    stale = tmp_path / "stale.sock"
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(stale))
    s.close()
    server = serve(ctl, f"unix:{stale}")
    try:
        with pytest.raises(OSError, match="another process is serving on it"):
            serve(SwitchControl(rig().pipeline), f"unix:{stale}")
    finally:
        server.stop(0)


def test_tcp_only_on_loopback_and_with_a_warning(ctl, caplog):
    with pytest.raises(ValueError, match="not loopback"):
        serve(ctl, "0.0.0.0:0")
    with caplog.at_level(logging.WARNING, logger="ffs.switch.server"):
        server = serve(ctl, "127.0.0.1:0")
    server.stop(0)
    assert any("any local user can change the switch's tables" in r.getMessage() for r in caplog.records)


def call_raw(address: str, method: str, payload: bytes):
    ch = grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 64 << 20)])
    try:
        return ch.unary_unary(f"/{wire.SERVICE}/{method}")(payload, timeout=30)
    finally:
        ch.close()


@pytest.mark.parametrize(
    "payload, code, fragment",
    [
        (b"[" * 100_000 + b"]" * 100_000, grpc.StatusCode.INVALID_ARGUMENT, "nested deeper than 64 levels"),
        (
            b'{"name": "pair_bytes", "indices": [Infinity]}',
            grpc.StatusCode.INVALID_ARGUMENT,
            "Infinity is not a number",
        ),
        (b"[1]", grpc.StatusCode.INVALID_ARGUMENT, "a request is a JSON object"),
        (b'{"updates": "' + b"x" * (17 << 20) + b'"}', grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max"),
    ],
)
def test_malformed_requests_change_nothing(ctl, tmp_path, payload, code, fragment):
    address = f"unix:{tmp_path}/s.sock"
    server = serve(ctl, address)
    before = dump(LocalDriver(ctl))
    try:
        method = "ReadCounters" if b"indices" in payload else "Write"
        with pytest.raises(grpc.RpcError) as e:
            call_raw(address, method, payload)
        assert e.value.code() == code and fragment in e.value.details() and "\n" not in e.value.details()
        d = ModelDriver(address)
        d.connect(timeout_s=10)
        assert d.program_id() == ctl.program_id  # still serving
        d.close()
    finally:
        server.stop(0)
    assert dump(LocalDriver(ctl)) == before


class CountingLock:
    """The control lock, counting how often it is taken and the most cells read under one hold."""

    def __init__(self) -> None:
        self.inner = threading.RLock()
        self.holds = 0

    def __enter__(self):
        self.inner.acquire()
        self.holds += 1
        return self

    def __exit__(self, *exc):
        self.inner.release()


def test_large_reads_take_the_lock_per_chunk(ctl):
    """A read of all 4096 pair counters holds the packet lock for at most READ_CHUNK cells at a time,
    so forwarding (which takes the same lock per batch of frames) goes on between chunks."""
    lock = CountingLock()
    ctl.lock = lock
    n = p4names.PAIR_BYTES.size
    assert len(ctl.read_counters(p4names.PAIR_BYTES.name)) == n
    assert lock.holds == 1 + n // control_mod.READ_CHUNK
    lock.holds = 0
    assert len(ctl.read_registers(p4names.F_EST.name)) == p4names.F_EST.size
    assert lock.holds == 1 + -(-p4names.F_EST.size // control_mod.READ_CHUNK)
    lock.holds = 0
    entries = ctl.read_table(p4names.WEIGHT.name)
    assert len(entries) > 4000 and lock.holds == 1  # one hold for the snapshot; conversion outside it


def test_read_table_is_a_consistent_snapshot_while_writes_go_on(ctl, tmp_path):
    """Converting outside the lock is safe: a write replaces a table's entries, never edits them."""
    d = LocalDriver(ctl)
    pairs = d.read_table(p4names.PAIRS.name)
    stop = threading.Event()
    writes: list[int] = []
    errors: list[BaseException] = []

    def writer() -> None:
        from ffs.core.entries import Exact, TableEntry, Update

        k = 0
        try:
            while not stop.is_set():
                nlm = -(k % 100) & 0xFFFF  # the action takes -lm as a 16-bit code
                e = TableEntry(
                    p4names.PAIRS.name,
                    {"ingress_port": Exact(7), "egress_port": Exact(8)},
                    "set_pair",
                    {"pid": 99, "nlm": nlm},
                )
                d.write([Update("insert", e)])
                d.write([Update("delete", e)])
                k += 1
                writes.append(k)
        except BaseException as e:  # a failing writer must fail the test, not just warn from its thread
            errors.append(e)

    t = threading.Thread(target=writer)
    t.start()
    seen = set()
    try:
        for _ in range(200):
            got = d.read_table(p4names.PAIRS.name)
            assert len(got) in (len(pairs), len(pairs) + 1)
            seen.add(len(got))
            if errors:
                break
    finally:
        stop.set()
        t.join()
    assert not errors, errors[0]
    assert writes, "the writer never completed an insert and delete"


@pytest.mark.root(reason="connecting as another user (setuid in a child) needs root")
def test_other_users_cannot_connect(ctl):
    """What `clear_table('pairs')` by any local user needed before: a connection. Now the kernel refuses it."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp())  # pytest's tmp_path sits under a 0700 directory: out of nobody's reach anyway
    os.chmod(base, 0o755)
    sock = base / "ffs" / "switch.sock"
    server = serve(ctl, f"unix:{sock}")
    os.chmod(sock.parent, 0o755)  # the other user can reach the socket: only its own mode stands in the way
    try:
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: as nobody, try to connect
            os.close(r)
            out = b"connected"
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
                s = socket.socket(socket.AF_UNIX)
                s.connect(str(sock))
            except PermissionError:
                out = b"refused"
            except BaseException as e:  # noqa: BLE001 - report anything to the parent
                out = repr(e).encode()
            os.write(w, out)
            os._exit(0)
        os.close(w)
        os.waitpid(pid, 0)
        assert os.read(r, 200) == b"refused"
        os.close(r)
    finally:
        server.stop(0)
        shutil.rmtree(base)
