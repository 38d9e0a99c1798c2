"""The shell root starts in front of each task, batch script and task epilog runs none of the
user's code before the gate (agent/shellsafe.py), and the task still gets its environment whole.

An attacker's environment: BASH_ENV naming a script, a function exported as `read` (the gate's
own read), SHELLOPTS=xtrace with a PS4 that runs a command. Run before the gate, any of them
would fork outside the job's cgroup. The task is /usr/bin/env, not a shell, so nothing of the
user's may run at all: a marker file proves it did not."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.slow


def _attack(tmp_path) -> dict[str, str]:
    hook = tmp_path / "hook.sh"
    hook.write_text(f"touch {tmp_path}/ran-$$\n")
    return {"BASH_ENV": str(hook),
            "BASH_FUNC_read%%": f"() {{ touch {tmp_path}/ran-func; builtin read \"$@\"; }}",
            "SHELLOPTS": "xtrace", "PS4": f"$(touch {tmp_path}/ran-ps4)+ "}


def _ran(tmp_path) -> list[str]:
    return sorted(p.name for p in tmp_path.glob("ran-*"))


def test_no_user_code_before_the_gate_of_a_task_and_the_environment_arrives_whole(cluster, tmp_path):
    attack = _attack(tmp_path)
    r = cluster.run(["srun", "-n1", "/usr/bin/env"], env=attack, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _ran(tmp_path) == [], "user code ran in the shim"
    seen = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
    for name in ("BASH_ENV", "BASH_FUNC_read%%", "SHELLOPTS", "PS4"):
        assert seen.get(name) == attack[name], (name, seen.get(name))
    assert not [k for k in seen if k.startswith("SLURM_SHIM_")], "the carriers reached the task"


def test_no_user_code_before_the_gate_of_a_batch_script(cluster, tmp_path):
    attack = _attack(tmp_path)
    job = cluster.sbatch("-o", str(tmp_path / "out"), "--wrap", "exec /usr/bin/env",
                         cwd=tmp_path, env=attack)
    from conftest import wait_final
    assert wait_final(cluster, job) == "COMPLETED"
    assert _ran(tmp_path) == [], "user code ran in the shim"
    seen = dict(line.split("=", 1) for line in (tmp_path / "out").read_text().splitlines() if "=" in line)
    assert seen.get("PS4") == attack["PS4"] and seen.get("BASH_ENV") == attack["BASH_ENV"]
