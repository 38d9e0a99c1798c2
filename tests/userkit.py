"""Real, throwaway, unprivileged users for tests that check what a user can and cannot do.

`make_user()` creates one with `useradd -m` (a random name, so runs never collide and nothing
is left to trust from an earlier run); `drop_user()` kills what it left running, then
`userdel -r -f`. `as_user()` runs a command as that user with a clean environment, as su would.

A test user cannot run this virtual environment's python when it lives in a home they cannot
enter (a pyenv under root's 0700 home), so `user_venv()` builds, once per session, a venv of
/usr/bin/python3 (same minor version) under /tmp that sees this venv's site-packages (.pth) and
has its console scripts with their shebang changed, as ../shared/acceptance/07-security does.
"""

from __future__ import annotations

import atexit
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import sysconfig
import time

import pytest

SYSTEM_PYTHON = "/usr/bin/python3"
_venv_dir: str | None = None


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to create users and switch to them")
    for tool in ("useradd", "userdel"):
        if shutil.which(tool) is None:
            pytest.skip(f"no {tool} on this machine")


def make_user(prefix: str = "plt") -> pwd.struct_passwd:
    """A new user with a home (0700) and a login shell; its name is prefix + a random suffix."""
    need_root()
    name = f"{prefix}{secrets.token_hex(3)}"
    r = subprocess.run(["useradd", "-m", "-s", "/bin/bash", name], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"useradd {name} failed: {r.stderr.strip()}")
    user = pwd.getpwnam(name)
    os.chmod(user.pw_dir, 0o700)  # whatever the distribution's HOME_MODE, as the tests assume
    return user


def kill_processes_of(uid: int) -> None:
    for _ in range(3):
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit() and _uid_of(int(p)) == uid]
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _uid_of(pid: int) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def drop_user(user: pwd.struct_passwd) -> None:
    kill_processes_of(user.pw_uid)  # userdel refuses a user with processes
    subprocess.run(["userdel", "-r", "-f", user.pw_name], capture_output=True)


def user_env(user: pwd.struct_passwd, **extra: str) -> dict[str, str]:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": user.pw_dir, "USER": user.pw_name,
           "LOGNAME": user.pw_name, "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def as_user(user: pwd.struct_passwd, cmd: str, *, env: dict[str, str] | None = None,
            cwd: str = "/", timeout: float = 60) -> subprocess.CompletedProcess:
    """bash -c cmd as user (uid, gid, its groups), with env (default: a login's basics)."""
    import grp
    groups = [g.gr_gid for g in grp.getgrall() if user.pw_name in g.gr_mem] or [user.pw_gid]
    return subprocess.run(["/bin/bash", "--noprofile", "--norc", "-c", cmd], cwd=cwd,
                          env=env or user_env(user), capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, user=user.pw_uid,
                          group=user.pw_gid, extra_groups=groups)


def usable_by(user: pwd.struct_passwd, python: str) -> bool:
    return as_user(user, f"'{python}' -c 'import pyslurm_lite'").returncode == 0


def user_venv(user: pwd.struct_passwd) -> str:
    """A bin/ directory whose python and console scripts `user` can run and that imports this
    project; skips the test with the reason when none can be made."""
    global _venv_dir
    src_bin = os.path.dirname(os.path.abspath(sys.executable))
    if usable_by(user, sys.executable):
        return src_bin
    if _venv_dir is None:
        _venv_dir = _build_user_venv(src_bin)
    bin_dir = os.path.join(_venv_dir, "bin")
    if not usable_by(user, os.path.join(bin_dir, "python")):
        pytest.skip(f"users cannot run {bin_dir}/python (is a parent of {_venv_dir} or of the "
                    f"site-packages {sysconfig.get_paths()['purelib']} closed to them?)")
    return bin_dir


def _build_user_venv(src_bin: str) -> str:
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        pytest.skip(f"{sys.executable} is not usable by other users and there is no {SYSTEM_PYTHON}")
    mine = f"{sys.version_info[0]}.{sys.version_info[1]}"
    theirs = subprocess.run([SYSTEM_PYTHON, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                            capture_output=True, text=True).stdout.strip()
    if theirs != mine:
        pytest.skip(f"{sys.executable} is not usable by other users and {SYSTEM_PYTHON} is "
                    f"Python {theirs}, not {mine}")
    import tempfile
    base = tempfile.mkdtemp(prefix="pyslurm-lite-uvenv-", dir="/tmp")
    os.chmod(base, 0o755)
    atexit.register(shutil.rmtree, base, True)  # once per session, gone with it
    venv = os.path.join(base, "venv")
    r = subprocess.run([SYSTEM_PYTHON, "-m", "venv", "--without-pip", venv], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"{SYSTEM_PYTHON} -m venv failed: {r.stderr.strip()[-300:]}")
    theirs_sp = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                                "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True).stdout.strip()
    with open(os.path.join(theirs_sp, "_pyslurm_lite_tests.pth"), "w") as f:
        f.write(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    _copy_console_scripts(src_bin, os.path.join(venv, "bin"))
    for root, dirs, files in os.walk(base):
        for d in dirs:
            os.chmod(os.path.join(root, d), 0o755)
    return venv


def _copy_console_scripts(src_bin: str, dst_bin: str) -> None:
    shebang = f"#!{src_bin}/python".encode()
    for name in os.listdir(src_bin):
        src = os.path.join(src_bin, name)
        if os.path.islink(src) or not os.path.isfile(src):
            continue
        with open(src, "rb") as f:
            text = f.read()
        if not text.startswith(shebang):
            continue
        first, _, rest = text.partition(b"\n")
        dst = os.path.join(dst_bin, name)
        with open(dst, "wb") as f:
            f.write(f"#!{dst_bin}/python\n".encode() + rest)
        os.chmod(dst, 0o755)


def run_cli(user: pwd.struct_passwd, bin_dir: str, conf, cmd: str) -> subprocess.CompletedProcess:
    """`cmd` run by bash as `user` in their home, our commands first on PATH, the cluster's conf."""
    env = user_env(user, PATH=f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", PYSLURM_LITE_CONF=str(conf))
    return as_user(user, cmd, env=env, cwd=user.pw_dir)


def token_of(user: pwd.struct_passwd, bin_dir: str, conf) -> str:
    """The JWT `scontrol token` prints for `user` (SLURM_JWT=..., Slurm's output, nothing else)."""
    r = run_cli(user, bin_dir, conf, "scontrol token")
    assert r.returncode == 0 and r.stderr == "", (r.stdout, r.stderr)
    assert re.fullmatch(r"SLURM_JWT=\S+\n", r.stdout), r.stdout
    return r.stdout.strip().split("=", 1)[1]
