"""A daemon's pid file is never seen empty or partial by `cluster up`, which polls it while the
daemon starts (a truncated file read between open and write looked like a daemon that died)."""

from __future__ import annotations

import os
import threading

from pyslurm_lite.service import write_pid_file


def test_a_reader_never_sees_the_pid_file_empty(tmp_path):
    path = tmp_path / "controller.pid"
    write_pid_file(str(path))
    seen, stop = [], threading.Event()

    def read():
        while not stop.is_set():
            seen.append(path.read_text())

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for _ in range(3000):
            write_pid_file(str(path))
    finally:
        stop.set()
        reader.join()
    assert seen and all(text == f"{os.getpid()}\n" for text in seen), \
        sorted({t for t in seen if t != f"{os.getpid()}\n"})
    assert os.listdir(tmp_path) == ["controller.pid"]  # no temporary file left behind
