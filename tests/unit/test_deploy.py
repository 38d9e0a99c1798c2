"""The deployment recipes, checked without deploying: the systemd units in etc/systemd/ pass
`systemd-analyze verify` with no warning, and the Dockerfiles in docker/ parse, copy files that
exist and start a command of ours that exists, with options it takes. (Docker is not run here:
the images are not built by the tests.)
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest

ROOT = Path(__file__).resolve().parents[2]
UNITS = sorted((ROOT / "etc" / "systemd").glob("*.service"))
DOCKERFILES = sorted(p for p in (ROOT / "docker").glob("Dockerfile.*") if p.suffix != ".dockerignore")
INSTALLED = "/usr/local/bin/pyslurm-lite"  # where the units expect `pip install` put it
VENV_SCRIPT = os.path.join(os.path.dirname(sys.executable), "pyslurm-lite")
INSTANCES = {"pyslurm-lite-agent@.service": "node1", "pyslurm-lite-controller@.service": "1"}
DOCKER_WORDS = {"FROM", "RUN", "CMD", "LABEL", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT",
                "VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}


def _instance_name(unit: Path) -> str:
    if "@." not in unit.name:
        return unit.name
    assert unit.name in INSTANCES, f"{unit.name}: a template unit needs an instance in INSTANCES"
    return unit.name.replace("@.", f"@{INSTANCES[unit.name]}.")


def _console_scripts() -> dict[str, str]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]


def _check_command(argv: list[str], where: str) -> None:
    """argv names one of our console scripts and, for `pyslurm-lite`, a subcommand that exists
    and takes the options given (parsed by the real click command, not run)."""
    script = os.path.basename(argv[0])
    assert script in _console_scripts(), f"{where}: {argv[0]} is none of pyproject's scripts"
    if script != "pyslurm-lite":
        return
    from pyslurm_lite.cli.admin import main
    cmd, args, path = main, list(argv[1:]), ["pyslurm-lite"]
    while isinstance(cmd, click.Group):
        assert args and args[0] in cmd.commands, f"{where}: {' '.join(path)} has no subcommand {args[:1]}"
        path.append(args[0])
        cmd = cmd.commands[args.pop(0)]
    try:
        cmd.make_context(" ".join(path), args)
    except click.ClickException as e:
        pytest.fail(f"{where}: {shlex.join(argv)}: {e.format_message()}")


# ---- systemd ----------------------------------------------------------------------------------
def _exec_lines(text: str) -> list[str]:
    return [line.split("=", 1)[1] for line in text.splitlines() if line.startswith("ExecStart=")]


@pytest.mark.parametrize("unit", UNITS, ids=lambda p: p.name)
def test_unit_starts_a_command_of_ours(unit):
    text = unit.read_text()
    lines = _exec_lines(text)
    assert len(lines) == 1, f"{unit.name}: want one ExecStart=, got {lines}"
    argv = shlex.split(lines[0].replace("%i", INSTANCES.get(unit.name, "x")))
    assert argv[0] == INSTALLED, f"{unit.name}: ExecStart runs {argv[0]}, not {INSTALLED}"
    _check_command(argv, unit.name)


def test_units_pass_systemd_analyze_verify(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
    assert UNITS, "no units in etc/systemd/"
    paths = []
    for unit in UNITS:
        # the binary must exist for verify: this venv's, at the same place in the command line
        target = tmp_path / _instance_name(unit)
        target.write_text(unit.read_text().replace(INSTALLED, VENV_SCRIPT))
        paths.append(str(target))
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", *paths], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    ours = [line for line in (r.stdout + r.stderr).splitlines()
            if str(tmp_path) in line or any(os.path.basename(p) in line for p in paths)]
    assert r.returncode == 0 and not ours, "\n".join(ours) or r.stderr


# ---- Docker -----------------------------------------------------------------------------------
def _instructions(path: Path) -> list[tuple[str, str, int]]:
    """(WORD, arguments, line number): continuation lines joined, comments dropped."""
    out, pending, start = [], "", 0
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction is dropped, as Docker does
        start = start or n
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        word, _, args = (pending + line).partition(" ")
        out.append((word, args.strip(), start))
        pending, start = "", 0
    assert not pending, f"{path.name}: ends inside a continued line"
    return out


def _ignored(dockerfile: Path, source: str) -> bool:
    """Whether BuildKit's <Dockerfile>.dockerignore keeps `source` out of the build context."""
    ignore = dockerfile.with_name(dockerfile.name + ".dockerignore")
    if not ignore.exists():
        return False
    excluded = False
    for line in ignore.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        pattern = line.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(source.rstrip("/"), pattern):
            excluded = not keep
    return excluded


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_dockerfile_parses_copies_what_exists_and_runs_our_command(dockerfile):
    steps = _instructions(dockerfile)
    words = [w for w, _, _ in steps]
    for word, _, n in steps:
        assert word in DOCKER_WORDS and word == word.upper(), f"{dockerfile.name}:{n}: {word}?"
    assert "FROM" in words and set(words[:words.index("FROM")]) <= {"ARG"}, \
        f"{dockerfile.name}: FROM must come first (after ARGs)"
    for word, args, n in steps:
        if word in ("COPY", "ADD") and "--from=" not in args:
            sources = shlex.split(args)[:-1]
            for src in (s for s in sources if not s.startswith("--")):
                assert (ROOT / src).exists(), f"{dockerfile.name}:{n}: COPY {src}: no such path"
                assert not _ignored(dockerfile, src), f"{dockerfile.name}:{n}: {src} is .dockerignore'd"
    exec_form = {w: json.loads(a) for w, a, _ in steps if w in ("ENTRYPOINT", "CMD")}
    assert set(exec_form) == {"ENTRYPOINT", "CMD"}, f"{dockerfile.name}: ENTRYPOINT and CMD, exec form"
    _check_command(exec_form["ENTRYPOINT"] + exec_form["CMD"], dockerfile.name)


def test_only_the_agent_image_runs_as_root():
    """The controller needs no root (its state volume and key are its user's); the agent does."""
    users = {}
    for dockerfile in DOCKERFILES:
        last = [a for w, a, _ in _instructions(dockerfile) if w == "USER"]
        users[dockerfile.name] = last[-1] if last else "root"
    assert users == {"Dockerfile.agent": "root", "Dockerfile.controller": "slurm"}, users


def test_the_readme_documents_the_agent_container_options():
    text = (ROOT / "docker" / "README.md").read_text()
    for option in ("--gpus all", "--device /dev/nvidia0", "--cgroupns=host", "/sys/fs/cgroup",
                   "--pid=host", "CAP_SYS_ADMIN", "StateSaveLocation"):
        assert option in text, f"docker/README.md does not mention {option}"


# systemd-analyze's exposure score (0 safest, 10 none): a unit that loses its hardening fails
# here. The agent has none on purpose (its jobs would inherit it; the unit says why).
EXPOSURE_AT_MOST = {"pyslurm-lite-controller.service": 4.5, "pyslurm-lite-controller@.service": 4.5,
                    "pyslurm-lite-authd.service": 2.5, "pyslurm-lite-restd.service": 2.0}


@pytest.mark.parametrize("unit", [u for u in UNITS if u.name in EXPOSURE_AT_MOST], ids=lambda p: p.name)
def test_unit_hardening(unit, tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed (Debian: apt-get install systemd)")
    target = tmp_path / _instance_name(unit)
    target.write_text(unit.read_text().replace(INSTALLED, VENV_SCRIPT))
    r = subprocess.run(["systemd-analyze", "security", "--offline=true", "--no-pager", str(target)],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    found = [float(x) for x in re.findall(r"Overall exposure level for \S+: (\d+\.\d+)", r.stdout)]
    assert found, r.stdout[-500:] + r.stderr
    assert found[0] <= EXPOSURE_AT_MOST[unit.name], f"{unit.name}: exposure {found[0]}"
