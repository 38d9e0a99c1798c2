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
    """A function (job, now) -> formatted line. The format is turned into one f-string once, so
    thousands of rows cost one call per field and no per-token branching."""
    names, pieces = {}, []
    for i, t in enumerate(tokens):
        if isinstance(t, str):
            pieces.append(t.replace("{", "{{").replace("}", "}}"))
            continue
        letter, width, right = t
        names[f"f{i}"] = fields.get(letter, default)
        if width is None:
            pieces.append(f"{{f{i}(j, now)}}")
        else:
            pieces.append(f"{{f{i}(j, now)[:{width}]:{'>' if right else '<'}{width}}}")
    source = "def row(j, now):\n    return f" + repr("".join(pieces)) + "\n"
    scope = dict(names)
    exec(compile(source, "<squeue format>", "exec"), scope)  # noqa: S102 - our own format text
    return scope["row"]
