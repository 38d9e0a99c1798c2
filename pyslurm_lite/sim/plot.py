"""`--plot`: utilization and queue length over time as a PNG, with no plotting library.

Two stacked panels share the time axis (first submit to last end, one pixel column per
1/WIDTH of it):
  top     utilization: busy processors / machine, averaged over each column's time span
          (blue, filled), with dotted lines at 25, 50 and 75 %;
  bottom  queue length: jobs submitted and not yet started, the most in each column (orange,
          filled), scaled to the largest queue reached.
Axes and ten ticks are drawn; there is no text (the command prints the numbers). The PNG
writer is the format's minimum: 8-bit RGB, filter 0 on every row, one zlib IDAT chunk.
"""

from __future__ import annotations

import struct
import zlib

from .swf import Trace

WIDTH, PANEL, MARGIN, GAP = 1000, 220, 20, 30  # pixels
WHITE, BLACK, GRID = (255, 255, 255), (0, 0, 0), (160, 160, 160)
BLUE, ORANGE = (40, 90, 200), (230, 130, 30)
TICKS = 10


def series(trace: Trace, start: list, columns: int = WIDTH) -> tuple[list, list]:
    """Per column: mean utilization (0..1) and the largest queue length."""
    t0 = min(trace.submit)
    t1 = max(s + r for s, r in zip(start, trace.run))
    span = max(t1 - t0, 1) / columns
    # (time, order, busy delta, queue delta): at one instant ends, then arrivals, then starts
    events = sorted([(b, 0, 0, 1) for b in trace.submit]
                    + [(s + r, -1, -p, 0) for s, r, p in zip(start, trace.run, trace.procs)]
                    + [(s, 1, p, -1) for s, p in zip(start, trace.procs)])
    area, peak = [0.0] * columns, [0] * columns
    busy = queue = col = 0
    last = t0
    for t, _, dbusy, dqueue in events:
        _spread(area, last, t, busy, t0, span)
        here = min(int((t - t0) / span), columns - 1)
        while col < here:  # a column starts with the queue the one before left
            col += 1
            peak[col] = queue
        busy += dbusy
        queue += dqueue
        peak[col] = max(peak[col], queue)
        last = t
    return [a / (span * trace.machine) for a in area], peak


def _spread(area: list, a, b, value, t0, span) -> None:
    """Add value * time over [a, b) to the columns it covers."""
    if b <= a or not value:
        return
    first, last = int((a - t0) / span), min(int((b - t0) / span), len(area) - 1)
    for col in range(first, last + 1):
        lo, hi = max(a, t0 + col * span), min(b, t0 + (col + 1) * span)
        if hi > lo:
            area[col] += value * (hi - lo)


def draw(path: str, trace: Trace, start: list) -> None:
    util, queue = series(trace, start)
    height = 2 * PANEL + GAP + 2 * MARGIN
    width = WIDTH + 2 * MARGIN
    img = [bytearray(WHITE * width) for _ in range(height)]
    top = MARGIN
    bottom = MARGIN + PANEL + GAP
    _columns(img, top, util, 1.0, BLUE)
    for frac in (0.25, 0.5, 0.75):  # dotted, over the fill, so they show on both
        _hline(img, top + PANEL - int(frac * PANEL), GRID)
    _columns(img, bottom, queue, max(max(queue), 1), ORANGE)
    for y0 in (top, bottom):
        _axes(img, y0)
    _write_png(path, img, width, height)


def _columns(img, y0: int, values: list, scale, color) -> None:
    for x, v in enumerate(values):
        h = min(int(round(PANEL * v / scale)), PANEL)
        for y in range(y0 + PANEL - h, y0 + PANEL):
            _set(img, MARGIN + x, y, color)


def _hline(img, y: int, color) -> None:
    for x in range(MARGIN, MARGIN + WIDTH, 4):
        _set(img, x, y, color)
        _set(img, x + 1, y, color)


def _axes(img, y0: int) -> None:
    for y in range(y0, y0 + PANEL + 1):
        _set(img, MARGIN - 1, y, BLACK)
    for x in range(MARGIN - 1, MARGIN + WIDTH):
        _set(img, x, y0 + PANEL, BLACK)
    for k in range(TICKS + 1):
        x = MARGIN + min(k * WIDTH // TICKS, WIDTH - 1)
        for y in range(y0 + PANEL, y0 + PANEL + 5):
            _set(img, x, y, BLACK)


def _set(img, x: int, y: int, color) -> None:
    img[y][3 * x:3 * x + 3] = bytes(color)


def _write_png(path: str, rows, width: int, height: int) -> None:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    raw = b"".join(b"\x00" + bytes(r) for r in rows)  # filter type 0 (None) on every row
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw, 6))
                + chunk(b"IEND", b""))
