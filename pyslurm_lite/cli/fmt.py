"""Slurm's %-format strings: '%.18i %.9P %j' -> fields with width and justification.

'%.N' right-justifies in N columns, '%N' left-justifies, no width prints as is; values longer
than the width are cut, as Slurm does. Literal text between fields is kept. '%%' is a percent.
"""

from __future__ import annotations

import re

_FIELD = re.compile(r"%(\.?)(\d*)([A-Za-z%])")


def parse(fmt: str) -> list:
    """Tokens: str (literal) or (letter, width|None, right_justified)."""
    out, pos = [], 0
    for m in _FIELD.finditer(fmt):
        if m.start() > pos:
            out.append(fmt[pos:m.start()])
        if m.group(3) == "%":
            out.append("%")
        else:
            out.append((m.group(3), int(m.group(2)) if m.group(2) else None, m.group(1) == "."))
        pos = m.end()
    if pos < len(fmt):
        out.append(fmt[pos:])
    return out


def cell(value: str, width: int | None, right: bool) -> str:
    if width is None:
        return value
    value = value[:width]
    return value.rjust(width) if right else value.ljust(width)


def render(tokens: list, values: dict[str, str]) -> str:
    parts = []
    for t in tokens:
        parts.append(t if isinstance(t, str) else cell(values.get(t[0], ""), t[1], t[2]))
    return "".join(parts)


def render_row(tokens: list, getter) -> str:
    """Like render, computing each field lazily with getter(letter)."""
    parts = []
    for t in tokens:
        parts.append(t if isinstance(t, str) else cell(getter(t[0]), t[1], t[2]))
    return "".join(parts)


def compile_row(tokens: list, fields: dict, default):
    """A function job, now -> formatted line, with each token's field function looked up once."""
    parts = []
    for t in tokens:
        if isinstance(t, str):
            parts.append((None, t, None, False))
        else:
            parts.append((fields.get(t[0], default), None, t[1], t[2]))

    def row(obj, now) -> str:
        out = []
        for fn, literal, width, right in parts:
            if fn is None:
                out.append(literal)
                continue
            value = fn(obj, now)
            if width is not None:
                value = value[:width]
                value = value.rjust(width) if right else value.ljust(width)
            out.append(value)
        return "".join(out)

    return row
