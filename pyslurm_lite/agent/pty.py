"""srun --pty on the node: task 0's pseudo terminal (slurmstepd's pty I/O).

Owns: opening the pty and handing its slave to the task's user, the window size, and the shim
that makes the slave the task's controlling terminal. It must not start or reap tasks
(taskmgr.py does).

The agent keeps the master: srun's keystrokes are written to it, whatever it reads goes back to
srun unchanged (no line buffering: a prompt has no newline). The task gets the slave as stdin,
stdout and stderr; its shim is a session leader (setsid) without a terminal, so opening the
slave by name, as the user, makes it the controlling terminal (Linux's rule for a session
leader that opens a tty without O_NOCTTY). Then bash's job control works: Ctrl-Z, fg, jobs, and
^C reaches the foreground process group through the line discipline.
"""

from __future__ import annotations

import fcntl
import grp
import os
import struct
import termios

from .iopaths import CHDIR_REPORT

# After taskmgr's gate (which entered $1, the step's directory): $2 is the slave's name.
SHIM_TAIL = 'exec <>"$2" >&0 2>&0 || exit 1; ' + CHDIR_REPORT + 'shift 2; exec "$@"'
MAX_SIDE = 0xFFFF  # rows and columns are unsigned shorts; srun's message may say anything
TTY_MODE = 0o620  # owner read/write, group tty write (write(1), wall), as login and sshd set


def set_winsize(fd: int, rows: int, cols: int) -> None:
    """TIOCSWINSZ: on the master, the kernel also sends SIGWINCH to the foreground group."""
    if 0 < rows <= MAX_SIDE and 0 < cols <= MAX_SIDE:  # what the kernel's struct winsize holds
        fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def open_pty(uid: int, rows: int, cols: int) -> tuple[int, int, str]:
    """(master, slave, slave's name), the slave the user's (only the user and group tty may
    use it), sized as srun's terminal."""
    master, slave = os.openpty()
    try:
        name = os.ttyname(slave)
        if os.getuid() == 0 and uid != 0:
            os.fchown(slave, uid, _tty_group())
            os.fchmod(slave, TTY_MODE)
        set_winsize(master, rows, cols)
    except BaseException:  # nothing root opened for the user is left open behind an error
        os.close(master)
        os.close(slave)
        raise
    return master, slave, name


def _tty_group() -> int:
    try:
        return grp.getgrnam("tty").gr_gid
    except KeyError:
        return -1  # fchown leaves the group as it is
