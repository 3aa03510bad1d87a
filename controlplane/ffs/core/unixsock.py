# SPDX-License-Identifier: Apache-2.0
"""Listening Unix sockets whose mode never follows the umask (the agent's API, the switch's control
service; docs/security.md).

The socket is bound in a fresh 0700 directory beside its path, given its mode (and group), and
renamed into place: a socket stays bound to its inode, so clients connect by the final name, and
there is no instant at which the file exists with a looser mode. Directories created on the way are
0700; a parent others may write to (without the sticky bit) is refused, since they could swap the
socket for their own; an existing path is replaced only if it is this user's socket and nothing
answers on it.
"""

from __future__ import annotations

import errno
import logging
import os
import socket
import stat
import tempfile
from pathlib import Path
from typing import Callable

log = logging.getLogger("ffs.unixsock")


def bind_private(path: str | Path, bind: Callable[[str], None], mode: int = 0o600, gid: int | None = None) -> None:
    """Call `bind(tmp_path)` to create the listening socket, then put it at `path` with `mode` (and
    group `gid`). Raises OSError with a one-line reason when the place is unsafe or taken."""
    path = Path(path)
    parent = path.parent
    for d in reversed([parent, *parent.parents]):
        if not d.exists():  # mkdir's mode is filtered by the umask: set it after
            d.mkdir(mode=0o700)
            os.chmod(d, 0o700)
    st = os.stat(parent)
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise OSError(
            f"{parent}: writable by others (mode {stat.S_IMODE(st.st_mode):o}): "
            "they could replace the socket; use a private directory"
        )
    if os.path.lexists(path):
        remove_stale(path)
    tmpdir = tempfile.mkdtemp(prefix=".ffs-", dir=parent)
    try:
        os.chmod(tmpdir, 0o700)
        tmp = os.path.join(tmpdir, "s")
        bind(tmp)
        if not os.path.exists(tmp):
            raise OSError(f"cannot listen on {path}")
        if gid is not None:
            os.chown(tmp, -1, gid)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    finally:
        for f in os.listdir(tmpdir):
            os.unlink(os.path.join(tmpdir, f))
        os.rmdir(tmpdir)


def remove_stale(path: str | Path) -> None:
    """Remove a leftover socket of this user's that nobody serves; refuse a live one, or anything
    that is not this user's socket."""
    st = os.lstat(path)
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.geteuid():
        raise OSError(f"{path} exists and is not this user's socket: not replacing it")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError as e:
        if e.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise OSError(f"{path}: cannot tell whether it is in use: {e.strerror}") from None
        os.unlink(path)
        log.warning("removed the stale socket %s (nothing served it: its process is gone)", path)
        return
    finally:
        probe.close()
    raise OSError(f"{path}: another process is serving on it")


CAP_CHOWN = 0  # its bit in the capability sets of /proc/self/status


def can_give_to_group(gid: int) -> bool:
    """Whether this process may hand a file it creates to group `gid`: as root, as a member of the
    group (chown(2) lets an owner pick any group it is in), or holding CAP_CHOWN."""
    if os.geteuid() == 0 or gid == os.getegid() or gid in os.getgroups():
        return True
    try:
        with open("/proc/self/status") as f:
            caps = next((line.split()[1] for line in f if line.startswith("CapEff:")), "0")
    except OSError:
        return False
    return bool(int(caps, 16) >> CAP_CHOWN & 1)
