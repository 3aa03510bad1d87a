# SPDX-License-Identifier: Apache-2.0
"""What every CLI shares: one-line errors with a fixed exit status, never a traceback."""

from __future__ import annotations

import functools
import json
import os
import platform
import sys
from typing import Any, Callable, TypeVar

import click

from ffs import __version__
from ffs.core.jsonsafe import finite

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2  # bad input: a malformed file, an invalid value
EXIT_FAILURE = 1  # the operation failed (target unreachable, refused)


class CliError(click.ClickException):
    """An error printed as one line `<prog>: error: <message>`; the command exits with EXIT_FAILURE."""

    # click reads the exit status from the class (ClickException.exit_code is a class variable)
    exit_code = EXIT_FAILURE

    def show(self, file: Any = None) -> None:
        click.echo(f"{os.path.basename(sys.argv[0]) or 'ffs'}: error: {self.format_message()}", err=True)


class CliUsageError(CliError):
    """The same one line for bad input; the command exits with EXIT_USAGE."""

    exit_code = EXIT_USAGE


def one_line_errors(*known: type[BaseException], error: type[CliError] = CliUsageError) -> Callable[[F], F]:
    """Turn the listed exception types into `error` (their message is already one line)."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def inner(*a: Any, **kw: Any) -> Any:
            try:
                return fn(*a, **kw)
            except known as e:  # type: ignore[misc]
                raise error(str(e).splitlines()[0] if str(e) else type(e).__name__) from None

        return inner  # type: ignore[return-value]

    return wrap


def dump_json(obj: Any) -> None:
    """JSON for scripts: infinities become null (JSON has none), floats keep full precision."""

    json.dump(finite(obj), sys.stdout, indent=2)
    sys.stdout.write("\n")


def version_option(prog: str) -> Callable[[F], F]:
    """`--version`: the command, the package's version and the Python it runs on, one line."""
    return click.version_option(
        __version__, "--version", prog_name=prog, message=f"%(prog)s %(version)s (Python {platform.python_version()})"
    )
