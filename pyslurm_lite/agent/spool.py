"""The agent's spool: what root writes there and may later trust.

Root reads back what it wrote here (a batch job's pid file, at the next start or at `cluster
down`) and removes job directories, so nothing in it may be writable by the job's user: the
spool and every job directory belong to the agent's uid and are not group/other-writable; only
the script itself is handed to the user (read and execute, nothing more). A job directory is
made fresh for each run, never reused, so nothing a previous run or a planted entry left there
is followed or trusted.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat

log = logging.getLogger("pyslurm_lite.agent.spool")

JOB_DIR_MODE = 0o711  # users may reach their script (exec), never list or create entries
SCRIPT_MODE = 0o500
PID_FILE = "pid"
SCRIPT = "slurm_script"

# rmtree walks with file descriptors (openat, no symlink followed) where the platform allows it;
# elsewhere a user racing the removal could make root delete through a symlink.
assert shutil.rmtree.avoids_symlink_attacks, "the spool needs a symlink-safe shutil.rmtree"


def prepare(spool: str) -> None:
    """The spool, made if absent; an existing one owned by someone else or writable by group or
    others is fixed, with a warning (whoever could write there could plant a pid file)."""
    os.makedirs(spool, mode=0o755, exist_ok=True)
    st = os.lstat(spool)
    if stat.S_ISLNK(st.st_mode):
        log.warning("the spool %s is a symbolic link: whoever may change it may redirect what "
                    "the agent writes as root", spool)
        st = os.stat(spool)
    if st.st_uid != os.geteuid():
        log.warning("the spool %s belongs to uid %d, not to the agent (uid %d): taking it",
                    spool, st.st_uid, os.geteuid())
        os.chown(spool, os.geteuid(), -1)
    if st.st_mode & 0o022:
        log.warning("the spool %s was writable by group or others (mode %04o): fixed", spool,
                    stat.S_IMODE(st.st_mode))
        os.chmod(spool, stat.S_IMODE(st.st_mode) & ~0o022)


def remove(path: str) -> None:
    """Remove a spool entry without following any symlink in or at it. A job directory holds
    what the agent put there (the script, a pid file): those go by name; anything else, or a
    directory that does not empty so, goes through the symlink-safe rmtree."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        for name in (SCRIPT, PID_FILE):
            try:
                os.unlink(os.path.join(path, name))  # unlink never follows a symlink
            except (FileNotFoundError, IsADirectoryError, PermissionError):
                pass
        try:
            os.rmdir(path)
        except OSError:
            shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def fresh_dir(path: str) -> str:
    """A new, empty job directory owned by the agent: whatever had its name (a run of a reused
    job id, something planted) is removed first, never entered."""
    try:
        os.mkdir(path, JOB_DIR_MODE)
    except FileExistsError:
        remove(path)
        os.mkdir(path, JOB_DIR_MODE)
    os.chmod(path, JOB_DIR_MODE)  # the agent's umask may have narrowed it
    return path


def write_script(jdir: str, text: str, uid: int, gid: int) -> str:
    """The batch script, created (never opened through an existing entry or a symlink), given
    to the user read+execute only."""
    path = os.path.join(jdir, SCRIPT)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 SCRIPT_MODE)
    try:
        os.write(fd, text.encode())
        if os.geteuid() == 0 and uid != 0:
            os.fchown(fd, uid, gid)
        os.fchmod(fd, SCRIPT_MODE)
    finally:
        os.close(fd)
    return path


def write_pid(jdir: str, pid: int, restart_count: int) -> None:
    path = os.path.join(jdir, PID_FILE)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(f"{pid} {restart_count}\n")


def _trusted_dir(path: str) -> bool:
    st = os.lstat(path)
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid()
            and not st.st_mode & 0o022)


def read_trusted_pid(path: str) -> int | None:
    """The process (group) id in a pid file the agent wrote, or None when the file could have
    been written or replaced by anyone else: it must be a regular file (not a symlink) owned by
    the agent's uid, in a directory owned by the agent's uid that group and others cannot
    write. Root kills what this returns, so anything doubtful is ignored."""
    try:
        if not _trusted_dir(os.path.dirname(os.path.abspath(path))):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            return None
        words = os.read(fd, 256).split()
    finally:
        os.close(fd)
    try:
        pid = int(words[0])
    except (IndexError, ValueError):
        return None
    return pid if pid > 1 else None  # never 0, 1 or negative: killpg of those is everyone
