"""srun --pty on a real cluster, driven through a pseudo terminal as a person at a terminal would:
task 0 runs on a terminal of its own on the node (tty, stty size, resizes, job control, ^C),
srun's terminal is raw while the step runs and restored after, and srun exits with the task's
code. Other tasks' output is discarded, as Slurm's."""

from __future__ import annotations

import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

import pytest

TIMEOUT = 20.0  # seconds to wait for any one answer of the remote shell


class Terminal:
    """The test's side of a pty with srun on the other side."""

    def __init__(self, cluster, argv, rows=30, cols=100):
        self.master, self.slave = os.openpty()
        self.resize(rows, cols)
        self.before = termios.tcgetattr(self.slave)
        self.proc = subprocess.Popen(argv, env=cluster.env, stdin=self.slave, stdout=self.slave,
                                     stderr=self.slave, start_new_session=True)
        self.seen = b""

    def resize(self, rows: int, cols: int) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def expect(self, pattern: str, timeout: float = TIMEOUT) -> re.Match:
        """Read until pattern matches what came after the last match."""
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern.encode(), re.S)
        while not (m := rx.search(self.seen)):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.master], [], [], left)[0]:
                pytest.fail(f"no {pattern!r} within {timeout}s; the terminal shows {self.seen!r}")
            try:
                self.seen += os.read(self.master, 65536)
            except OSError:  # srun ended and its side of the terminal closed
                pytest.fail(f"srun ended before {pattern!r}; the terminal showed {self.seen!r}")
        self.seen = self.seen[m.end():]
        return m

    def close(self) -> None:
        """End srun as a person would (exit), else as a signal does: either way it gives its
        allocation back, so the next test's srun does not wait for node1."""
        for end in (lambda: self.send("\rexit\r"), lambda: self.proc.send_signal(signal.SIGTERM),
                    self.proc.kill):
            if self.proc.poll() is not None:
                break
            end()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        os.close(self.master)
        os.close(self.slave)


@pytest.fixture
def term(cluster):
    t = Terminal(cluster, ["srun", "-n1", "-w", "node1", "--pty", "bash", "--norc", "--noprofile"])
    try:
        yield t
    finally:
        t.close()


def test_an_interactive_shell_on_a_terminal_of_its_own(term):
    # $((...)): the answer, never the echo of what was typed
    term.send("echo R$((40+2))\r")
    term.expect(r"R42")
    term.send("tty; echo T$((1+1))\r")
    assert re.fullmatch(rb"/dev/pts/\d+", term.expect(r"(/dev/\S+)\r*\n.*?T2").group(1))
    term.send("stty size; echo S$((2+1))\r")
    term.expect(r"\r30 100\r*\n.*?S3")
    assert not (termios.tcgetattr(term.slave)[3] & termios.ICANON), "srun's terminal is not raw"


def test_a_resize_reaches_the_task(term):
    term.send("echo R$((40+2))\r")
    term.expect(r"R42")
    term.resize(40, 120)
    os.kill(term.proc.pid, signal.SIGWINCH)
    for i in range(20):  # the new size travels to the node: ask until it shows
        term.send(f"stty size; echo W$(({i}+100))\r")
        size = term.expect(rf"\r(\d+ \d+)\r*\n.*?W{i + 100}").group(1)
        if size == b"40 120":
            return
        time.sleep(0.2)
    pytest.fail(f"stty size still says {size!r} after the resize to 40x120")


def test_job_control_and_interrupt(term):
    term.send("echo R$((40+2))\r")
    term.expect(r"R42")
    term.send("sleep 100\r")
    time.sleep(0.5)
    term.send("\x1a")  # ^Z: the remote line discipline stops the foreground job
    term.expect(r"Stopped\s+sleep 100")
    term.send("jobs; echo J$((4+1))\r")
    term.expect(r"\[1\]\+\s+Stopped\s+sleep 100.*?J5")
    term.send("kill -9 %1; sleep 0.2; jobs; echo K$((5+1))\r")
    term.expect(r"K6")
    term.send("sleep 100\r")
    time.sleep(0.5)
    term.send("\x03")  # ^C ends the foreground sleep, not the shell
    term.send("echo C$((6+1))\r")
    term.expect(r"C7")


def test_exit_code_and_terminal_restored(term):
    term.send("echo R$((40+2))\r")
    term.expect(r"R42")
    term.send("exit 3\r")
    assert term.proc.wait(timeout=TIMEOUT) == 3
    assert termios.tcgetattr(term.slave) == term.before, "srun left its terminal changed"


def test_only_task_zero_is_heard(cluster):
    r = cluster.run(["srun", "-n2", "-w", "node1", "--pty", "bash", "-c",
                     "echo task$SLURM_PROCID; [ -t 0 ] && echo tty$SLURM_PROCID; true"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.replace("\r", "").split() == ["task0", "tty0"], r.stdout


def test_pty_with_output_files_is_refused(cluster):
    r = cluster.run(["srun", "-n1", "--pty", "-o", "x.out", "true"])
    assert r.returncode == 1
    assert "--error/--input/--output are incompatible with --pty" in r.stderr


def test_the_terminal_is_the_tasks_controlling_terminal(cluster):
    """Whatever the program (python, unlike bash, does not take a terminal itself): /dev/tty
    opens only for a process with a controlling terminal."""
    code = ("import os; open('/dev/tty'); "
            "print('ctty-ok' if os.tcgetpgrp(0) == os.getpgrp() else 'not foreground')")
    r = cluster.run(["srun", "-n1", "-w", "node1", "--pty", sys.executable, "-c", code])
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.split() == ["ctty-ok"], r.stdout


def test_inside_salloc_with_job_control_and_exit_code(cluster):
    """The usual interactive session: salloc, then srun --pty bash in the allocation."""
    t = Terminal(cluster, ["salloc", "-N1", "-w", "node1", "srun", "--pty", "bash", "--norc",
                           "--noprofile"], rows=33, cols=111)
    try:
        t.send("stty size; echo S$((2+1))\r")
        t.expect(r"\r33 111\r*\n.*?S3")
        t.send("sleep 100 &\r")
        t.send("jobs; echo J$((3+1))\r")
        t.expect(r"Running.*?J4")
        t.send("kill %1; exit 3\r")
        assert t.proc.wait(timeout=TIMEOUT) == 3  # salloc returns its command's code
    finally:
        t.close()
