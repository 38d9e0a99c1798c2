"""The agent's spool (agent/spool.py): what root may trust there, and the submitter's umask."""

from __future__ import annotations

import os
import stat

import pytest

from pyslurm_lite.agent import spool
from pyslurm_lite.agent.env import submitter_umask
from pyslurm_lite.cli.sbatch import with_umask


def _pid_file(d, text="4242 0\n", mode=0o600):
    path = d / "pid"
    path.write_text(text)
    os.chmod(path, mode)
    return str(path)


def test_trusted_pid(tmp_path):
    os.chmod(tmp_path, 0o711)
    assert spool.read_trusted_pid(_pid_file(tmp_path)) == 4242


@pytest.mark.parametrize("text", ["", "x", "0 0", "1", "-5 0"])
def test_pid_that_would_signal_everyone_is_ignored(tmp_path, text):
    os.chmod(tmp_path, 0o711)
    assert spool.read_trusted_pid(_pid_file(tmp_path, text)) is None


def test_pid_in_a_writable_dir_is_ignored(tmp_path):
    os.chmod(tmp_path, 0o733)
    assert spool.read_trusted_pid(_pid_file(tmp_path)) is None


def test_group_writable_pid_file_is_ignored(tmp_path):
    os.chmod(tmp_path, 0o711)
    assert spool.read_trusted_pid(_pid_file(tmp_path, mode=0o620)) is None


def test_pid_symlink_is_ignored(tmp_path):
    os.chmod(tmp_path, 0o711)
    real = tmp_path / "real"
    real.write_text("4242 0\n")
    os.symlink(real, tmp_path / "pid")
    assert spool.read_trusted_pid(str(tmp_path / "pid")) is None
    assert spool.read_trusted_pid(str(tmp_path / "missing")) is None


def test_pid_file_of_someone_else_is_ignored(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give a file away")
    os.chmod(tmp_path, 0o711)
    path = _pid_file(tmp_path)
    os.chown(path, 65534, -1)
    assert spool.read_trusted_pid(path) is None
    os.chown(path, 0, -1)
    os.chown(tmp_path, 65534, -1)
    assert spool.read_trusted_pid(path) is None


def test_fresh_dir_removes_what_was_there_without_following(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("x")
    jdir = tmp_path / "job00000001.0"
    jdir.mkdir()
    os.symlink(outside, jdir / "link")
    (jdir / "planted").write_text("x")
    spool.fresh_dir(str(jdir))
    assert os.listdir(jdir) == [] and (outside / "keep").exists()
    assert stat.S_IMODE(os.stat(jdir).st_mode) == spool.JOB_DIR_MODE
    os.rmdir(jdir)
    os.symlink(outside, jdir)  # the entry itself a symlink: replaced, not entered
    spool.fresh_dir(str(jdir))
    assert not os.path.islink(jdir) and (outside / "keep").exists()


def test_script_is_never_written_through_an_existing_entry(tmp_path):
    target = tmp_path / "target"
    target.write_text("mine\n")
    os.symlink(target, tmp_path / spool.SCRIPT)
    with pytest.raises(FileExistsError):
        spool.write_script(str(tmp_path), "#!/bin/sh\n", os.getuid(), os.getgid())
    assert target.read_text() == "mine\n"


def test_script_mode(tmp_path):
    path = spool.write_script(str(tmp_path), "#!/bin/sh\ntrue\n", os.getuid(), os.getgid())
    assert stat.S_IMODE(os.stat(path).st_mode) == spool.SCRIPT_MODE


def test_prepare_fixes_a_writable_spool(tmp_path):
    d = tmp_path / "spool"
    d.mkdir()
    os.chmod(d, 0o777)
    spool.prepare(str(d))
    assert stat.S_IMODE(os.stat(d).st_mode) & 0o022 == 0


@pytest.mark.parametrize("text,mask", [("0077", 0o077), ("0022", 0o022), ("077", 0o077),
                                       ("0", 0), ("0777", 0o777), ("", 0o022), ("7777", 0o022),
                                       ("0089", 0o022), ("-1", 0o022), ("abc", 0o022)])
def test_submitter_umask(text, mask):
    assert submitter_umask({"SLURM_UMASK": text}) == mask


def test_sbatch_sends_the_umask_unless_set():
    old = os.umask(0o027)
    try:
        assert with_umask({})["SLURM_UMASK"] == "0027"
        assert with_umask({"SLURM_UMASK": "0002"})["SLURM_UMASK"] == "0002"
    finally:
        os.umask(old)
