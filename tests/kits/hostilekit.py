# SPDX-License-Identifier: Apache-2.0
"""Hostile documents shared by the tests of the loaders and of the control API."""


def laughs(levels: int = 9) -> str:
    """The 'billion laughs' document: 9 aliases per level, 9^levels leaves once expanded."""
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    prev = "a"
    for c in "bcdefghijk"[: levels - 1]:
        lines.append(f"{c}: &{c} [" + ",".join([f"*{prev}"] * 9) + "]")
        prev = c
    return "\n".join(lines) + "\n"
