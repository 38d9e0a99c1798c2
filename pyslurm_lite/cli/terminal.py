"""srun --pty's local end: the caller's terminal in raw mode, and its size.

Owns: putting the terminal srun reads in raw mode for the step's life and restoring it after
(on a normal end, an error, or a signal that ends srun), and reading its window size. It must
not forward anything itself (srun's StepSession does).

As Slurm's srun: raw input (every key, ^C and ^Z too, goes to the remote terminal, whose line
discipline acts on it), but output processing kept on so srun's own messages still start their
lines at the left margin.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import signal
import struct
import sys
import termios
import tty

DEFAULT_SIZE = (24, 80)  # rows, columns when srun's output is not a terminal


def window_size(fd: int | None = None) -> tuple[int, int]:
    """(rows, columns) of the terminal on fd (stdout, else stdin), or DEFAULT_SIZE."""
    for candidate in ([fd] if fd is not None else [sys.stdout.fileno(), sys.stdin.fileno()]):
        try:
            rows, cols, _, _ = struct.unpack(
                "HHHH", fcntl.ioctl(candidate, termios.TIOCGWINSZ, b"\0" * 8))
        except OSError:
            continue
        if rows and cols:
            return rows, cols
    return DEFAULT_SIZE


class RawTerminal:
    """with RawTerminal(fd): raw mode inside, the saved settings restored on the way out. Not a
    terminal: nothing is changed."""

    def __init__(self, fd: int):
        self.fd = fd
        self.saved = None

    def __enter__(self) -> "RawTerminal":
        if not os.isatty(self.fd):
            return self
        self.saved = termios.tcgetattr(self.fd)
        atexit.register(self.restore)  # srun ending by sys.exit from a signal handler
        tty.setraw(self.fd, termios.TCSANOW)
        attrs = termios.tcgetattr(self.fd)
        attrs[1] |= termios.OPOST  # oflag: srun's messages keep their line starts
        termios.tcsetattr(self.fd, termios.TCSANOW, attrs)
        return self

    def __exit__(self, *exc) -> None:
        self.restore()

    def restore(self) -> None:
        if self.saved is not None:
            try:
                termios.tcsetattr(self.fd, termios.TCSADRAIN, self.saved)
            except termios.error:  # the terminal went away: nothing to restore
                pass
            self.saved = None


def on_resize(callback) -> None:
    """callback(rows, columns) each time the terminal is resized (SIGWINCH)."""
    signal.signal(signal.SIGWINCH, lambda signo, frame: callback(*window_size()))
