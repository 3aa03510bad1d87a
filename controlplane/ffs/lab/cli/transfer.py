# SPDX-License-Identifier: Apache-2.0
"""ffs-transfer: a reliable bulk transfer over UDP with the FFS/RI shim between two hosts, paced by
MinTime or MinLoss (FFS §IX; docs/endpoint.md).

    ffs-transfer recv --port 5301 [--out FILE]
    ffs-transfer send --dst 10.0.3.1 --port 5301 --bytes 10MB --scheme minloss --capacity 20Mbps

Both ends need a raw socket (root or CAP_NET_RAW). Errors are one line, exit status 2.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import IO

import click

from ffs.cli.common import dump_json, one_line_errors
from ffs.core.units import format_rate, parse_rate
from ffs.lab.endpoint.live import TransferError, receive_partial, receive_transfer, send_partial, send_transfer
from ffs.lab.endpoint.rate import MinLoss, MinLossParams, MinTime

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*([kKmMgG]?)(i?)B?\s*$")
MAX_BYTES = 1 << 32


def parse_size(text: str) -> int:
    """Bytes: 10MB (10^7), 4MiB (2^22), 1500, 2.5kB."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"--bytes wants a size such as 10MB, 4MiB or 1500, got {text!r}")
    k = " kmg".index(m.group(2).lower() or " ")
    n = int(float(m.group(1)) * ((1024 if m.group(3) else 1000) ** k))
    if not 0 < n <= MAX_BYTES:
        raise ValueError(f"--bytes must be 1 B .. 4 GiB, got {text!r}")
    return n


class _Bar:
    """A progress bar on stderr (tqdm), off for --json and when stderr is not a terminal."""

    def __init__(self, on: bool, what: str) -> None:
        self.bar = None
        if on and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=0, unit="pkt", desc=what, leave=False, file=sys.stderr)

    def __call__(self, done: int, total: int) -> None:
        if self.bar is not None:
            if self.bar.total != total:
                self.bar.total = total
            self.bar.n = done
            self.bar.refresh() if done == total else None

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Reliable bulk transfers over UDP with the FFS/RI shim, paced by MinTime or MinLoss (FFS §IX)."""


@main.command("send", short_help="Send a file or N bytes to a receiver.")
@click.option("--dst", required=True, help="Receiver's IPv4 address.")
@click.option("--port", type=click.IntRange(1, 65535), default=5301, show_default=True, help="Receiver's port.")
@click.option("--file", "path", type=click.Path(dir_okay=False, exists=True), help="Send this file.")
@click.option("--bytes", "nbytes", help="Or send this many bytes (10MB, 4MiB, 1500).")
@click.option(
    "--scheme",
    type=click.Choice(["minloss", "mintime", "partial"]),
    default="minloss",
    show_default=True,
    help="MinLoss: follow the echoed rate indicator; MinTime: send at --capacity; partial: kernel TCP "
    "(--cca) capped by the indicator (FFS App. C; the receiver runs `recv --tcp`).",
)
@click.option("--cca", default="cubic", show_default=True, help="partial: the kernel's congestion control.")
@click.option("--capacity", help="The source's egress capacity (IP bit/s), e.g. 20Mbps (MinTime, MinLoss).")
@click.option("--start-rate", help="MinLoss: the initial rate [default: capacity / 10].")
@click.option(
    "--settle",
    type=click.FloatRange(0, 10),
    default=0.25,
    show_default=True,
    help="MinLoss, partial: seconds after a rate change whose echoes are ignored "
    "(>= the node's control period + estimator time constant).",
)
@click.option(
    "--measure",
    type=click.FloatRange(0, 10),
    default=0.1,
    show_default=True,
    help="MinLoss, partial: apply the indicator to the rate actually sent over this many seconds "
    "(the node's control period); 0: to the pacing rate.",
)
@click.option(
    "--confirm",
    type=click.FloatRange(0, 10),
    default=0.1,
    show_default=True,
    help="MinLoss: raise the rate only when the indicator says so for this many seconds (decreases are immediate).",
)
@click.option(
    "--headroom",
    type=click.FloatRange(0, 0.5),
    default=0.03,
    show_default=True,
    help="MinLoss: send at (1 - headroom) x the indicated rate.",
)
@click.option(
    "--size",
    type=click.IntRange(64, 9000),
    default=1400,
    show_default=True,
    help="IP packet size in bytes (at most the path MTU: packets are never fragmented).",
)
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 3600),
    default=60.0,
    show_default=True,
    help="Give up after this many seconds.",
)
@click.option(
    "--log",
    "log_path",
    type=click.Path(dir_okay=False),
    help="JSON lines every 100 ms: controller rate and sending rate.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report, no progress bar.")
@one_line_errors(TransferError, ValueError, OSError)
def send_cmd(
    dst: str,
    port: int,
    path: str | None,
    nbytes: str | None,
    scheme: str,
    cca: str,
    capacity: str | None,
    start_rate: str | None,
    settle: float,
    measure: float,
    confirm: float,
    headroom: float,
    size: int,
    timeout: float,
    log_path: str | None,
    as_json: bool,
) -> None:
    """Send --file or --bytes to `ffs-transfer recv` on --dst, reliably (selective acknowledgements),
    and report transfer time, goodput, retransmissions and loss."""
    if (path is None) == (nbytes is None):
        raise ValueError("give exactly one of --file and --bytes")
    if scheme != "partial" and capacity is None:
        raise ValueError(f"--scheme {scheme} needs --capacity (the source's egress capacity)")
    cap = parse_rate(capacity) if capacity is not None else 0.0
    if scheme != "partial" and not cap > 0:
        raise ValueError("--capacity must be positive")
    data = _data_to_send(path, nbytes)
    now = time.monotonic()
    if scheme == "partial":
        _send_partial(dst, port, data, cca, settle, measure, timeout, as_json)
        return
    ctl = _controller(scheme, cap, start_rate, settle, headroom, measure, confirm, now)
    bar = _Bar(not as_json, "send")
    log: IO[str] | None = open(log_path, "w") if log_path else None
    try:
        rep = send_transfer(dst, port, data, ctl, ip_size=size, timeout_s=timeout, progress=bar, log=log)
    finally:
        bar.close()
        if log is not None:
            log.close()
    if as_json:
        dump_json(rep.to_json())
        return
    ind = f", indicator {format_rate(rep.indicator_bps)}" if rep.indicator_bps else ""
    click.echo(
        f"{rep.bytes} B in {rep.transfer_s:.3f} s: {format_rate(rep.goodput_bps)} goodput, {rep.sent} packets sent, "
        f"{rep.retransmitted} retransmitted ({100 * rep.loss:.2f} % lost), final rate "
        f"{format_rate(rep.final_rate_bps)}{ind}"
    )


def _data_to_send(path: str | None, nbytes: str | None) -> bytes:
    """The bytes of --file, or --bytes random ones."""
    if path is not None:
        with open(path, "rb") as f:
            data = f.read()
        if not data:
            raise ValueError(f"{path} is empty")
    else:
        data = os.urandom(parse_size(nbytes or ""))
    return data


def _send_partial(
    dst: str, port: int, data: bytes, cca: str, settle: float, measure: float, timeout: float, as_json: bool
) -> None:
    """send --scheme partial: TCP under `cca`, capped by the echoed indicator (App. C)."""
    bar = _Bar(not as_json, "send")
    try:
        prep = send_partial(
            dst, port, data, cca, settle_s=settle, measure_s=measure or 0.1, timeout_s=timeout, progress=bar
        )
    finally:
        bar.close()
    if as_json:
        dump_json(prep.to_json())
        return
    capped = format_rate(prep.cap_bps) if prep.cap_bps else "never"
    click.echo(
        f"{prep.bytes} B in {prep.transfer_s:.3f} s over TCP ({prep.cca}): {format_rate(prep.goodput_bps)} "
        "goodput, "
        f"{prep.retransmitted} retransmitted; {prep.echoes}/{prep.probes} probes echoed, capped at {capped}"
    )


def _controller(
    scheme: str,
    cap: float,
    start_rate: str | None,
    settle: float,
    headroom: float,
    measure: float,
    confirm: float,
    now: float,
) -> MinTime | MinLoss:
    if scheme == "mintime":
        ctl: MinTime | MinLoss = MinTime(cap)
    else:
        start = parse_rate(start_rate) if start_rate else cap / 10
        if not 0 < start <= cap:
            raise ValueError("--start-rate must be positive and at most --capacity")
        ctl = MinLoss(
            MinLossParams(
                start_bps=start,
                capacity_bps=cap,
                settle_s=settle,
                headroom=headroom,
                measure_s=measure or None,
                confirm_s=confirm,
            ),
            now,
        )
    return ctl


@main.command("recv", short_help="Receive one transfer.")
@click.option("--port", type=click.IntRange(1, 65535), default=5301, show_default=True)
@click.option("--out", type=click.Path(dir_okay=False), help="Write the received bytes here.")
@click.option("--tcp", is_flag=True, help="Receive a `send --scheme partial` transfer (TCP + echoed probes).")
@click.option(
    "--timeout",
    type=click.FloatRange(0.1, 3600),
    default=60.0,
    show_default=True,
    help="Give up after this many seconds without data.",
)
@click.option("--json", "as_json", is_flag=True, help="Machine-readable report, no progress bar.")
@one_line_errors(TransferError, ValueError, OSError)
def recv_cmd(port: int, out: str | None, tcp: bool, timeout: float, as_json: bool) -> None:
    """Receive one transfer on --port, acknowledging every packet and echoing the rate indicator
    (rri_echo, flag E) on the acknowledgements."""
    bar = _Bar(not as_json and not tcp, "recv")
    try:
        if tcp:
            rep, data = receive_partial(port, timeout_s=timeout, keep=out is not None)
        else:
            rep, data = receive_transfer(port, timeout_s=timeout, keep=out is not None, progress=bar)
    finally:
        bar.close()
    if out is not None:
        with open(out, "wb") as f:
            f.write(data)
    if as_json:
        dump_json(rep.to_json())
        return
    click.echo(
        f"{rep.bytes} B from {rep.source} in {rep.transfer_s:.3f} s: {format_rate(rep.goodput_bps)}, "
        f"{rep.duplicates} duplicates"
    )


if __name__ == "__main__":
    main()
