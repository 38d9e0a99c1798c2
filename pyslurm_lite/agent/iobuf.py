"""Cutting a task's output into whole lines before it leaves the node (slurmstepd's buffered I/O).

A task may write one line in several write() calls (print() with several arguments, a progress
line, a shell `printf "a "; printf "b\\n"`). Forwarded as read, the pieces of one task's line would
interleave with other tasks' output at srun. So, as slurmstepd does unless `srun -u`, output is
held until its newline and sent in whole lines; what is left when the task closes its pipe goes
out as it is.

Worked example: reads b"t0 ", b"l1\\nt0 l2\\nt0 " -> nothing, b"t0 l1\\nt0 l2\\n" (b"t0 " kept);
end of file -> b"t0 ".
"""

from __future__ import annotations

# A line longer than this (bytes) is sent in pieces of this size: memory stays bounded for a task
# that writes megabytes without a newline (slurmstepd, too, flushes a full buffer).
MAX_LINE = 1 << 20


class LineBuffer:
    """One stream of one task: feed() what was read, get back the whole lines to send."""

    def __init__(self, max_line: int = MAX_LINE):
        self.pending = b""
        self.max_line = max_line

    def feed(self, data: bytes) -> bytes:
        buf = self.pending + data
        cut = buf.rfind(b"\n") + 1
        if len(buf) - cut >= self.max_line:
            cut = len(buf)
        self.pending = buf[cut:]
        return buf[:cut]

    def close(self) -> bytes:
        rest, self.pending = self.pending, b""
        return rest
