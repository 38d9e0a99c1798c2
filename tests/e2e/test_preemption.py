"""QOS preemption, advance reservations, partition access and sshare on a real cluster.

One node with 2 CPUs; QOS high may preempt normal, whose jobs get a 3 s grace time and are
requeued (PreemptMode=REQUEUE)."""

from __future__ import annotations

import time

import pytest

from conftest import configured_cluster, wait_final, wait_state

GRACE = 3


@pytest.fixture(scope="module")
def qos(tmp_path_factory):
    yield from configured_cluster(
        tmp_path_factory, "qos", (1, 2, 2000, 0),
        extra=("PreemptType=preempt/qos\nPreemptMode=REQUEUE\n"
               f"QOSName=normal GraceTime={GRACE}\n"
               "QOSName=high Priority=100 Preempt=normal MaxJobsPerUser=5\n"
               "QOSName=short MaxWall=1\n"
               "PriorityType=priority/multifactor\nPriorityWeightFairshare=1000\nPriorityWeightQOS=500\n"
               "PartitionName=restricted Nodes=ALL AllowAccounts=physics MaxTime=UNLIMITED\n"))


def _field(c, job_id, key):
    out = c.run(["scontrol", "show", "job", str(job_id)]).stdout
    return out.split(f"{key}=")[1].split()[0]


def test_high_qos_preempts_low_after_grace_time_and_low_is_requeued(qos, tmp_path):
    log = tmp_path / "events.log"
    low_script = tmp_path / "low.sh"
    low_script.write_text(
        "#!/bin/bash\n"
        f'echo "start $SLURM_RESTART_COUNT $(date +%s.%N)" >> {log}\n'
        f'trap \'echo "term $(date +%s.%N)" >> {log}\' TERM\n'
        '[ "${SLURM_RESTART_COUNT:-0}" -ge 1 ] && exit 0\n'
        "for i in $(seq 600); do sleep 0.1; done\n")
    low = qos.sbatch("-c", "2", str(low_script), cwd=tmp_path)
    wait_state(qos, low, "RUNNING")
    time.sleep(1)
    high = qos.sbatch("-c", "2", "--qos=high", "--wrap", f'echo "high $(date +%s.%N)" >> {log}',
                      cwd=tmp_path)
    time.sleep(1)
    r = qos.run(["squeue", "-h", "-j", str(high), "-o", "%T %r %q"])
    assert r.stdout.split() == ["PENDING", "Resources", "high"], r.stdout
    assert wait_final(qos, high, 60) == "COMPLETED"
    assert wait_final(qos, low, 60) == "COMPLETED"
    events = [line.split() for line in log.read_text().splitlines()]
    kinds = [e[0] for e in events if e[0] != "term" or e is events[1]]  # a 2nd TERM: the kill's
    assert kinds == ["start", "term", "high", "start"], events
    term, high_start = float(events[1][1]), float(next(e for e in events if e[0] == "high")[1])
    # the grace time was honoured, then the job was killed at once (not after KillWait=5 s)
    assert GRACE - 0.5 <= high_start - term <= GRACE + 4, events
    assert events[-1][1] == "1"  # the second run of the low job is its first restart
    assert _field(qos, low, "Restarts") == "1"


def test_qos_limits_and_unknown_qos(qos, tmp_path):
    r = qos.run(["sbatch", "--qos=nope", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode != 0 and "Invalid qos specification" in r.stderr, r.stderr
    long = qos.sbatch("--qos=short", "-t", "5", "--wrap", "true", cwd=tmp_path)
    time.sleep(1.5)
    r = qos.run(["squeue", "-h", "-j", str(long), "-o", "%T %r"])
    assert r.stdout.split() == ["PENDING", "QOSMaxWallDurationPerJobLimit"], r.stdout
    qos.run(["scancel", str(long)])


def test_partition_allow_accounts(qos, tmp_path):
    r = qos.run(["sbatch", "-p", "restricted", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode != 0 and "Invalid account or account/partition combination" in r.stderr
    ok = qos.sbatch("-p", "restricted", "-A", "physics", "--wrap", "true", cwd=tmp_path)
    assert wait_final(qos, ok, 30) == "COMPLETED"


def test_maintenance_reservation_keeps_jobs_off_until_deleted(qos, tmp_path):
    r = qos.run(["scontrol", "create", "reservation", "ReservationName=maint", "StartTime=now",
                 "Duration=10", "Nodes=node1", "Users=root", "Flags=MAINT"])
    assert r.returncode == 0 and r.stdout.strip() == "Reservation created: maint", r.stdout + r.stderr
    r = qos.run(["scontrol", "show", "reservation"])
    assert "ReservationName=maint" in r.stdout and "State=ACTIVE" in r.stdout, r.stdout
    assert "Nodes=node1 NodeCnt=1" in r.stdout
    outside = qos.sbatch("-t", "1", "--wrap", "true", cwd=tmp_path)
    inside = qos.sbatch("-t", "1", "--reservation=maint", "--wrap", "true", cwd=tmp_path)
    assert wait_final(qos, inside, 30) == "COMPLETED"
    r = qos.run(["squeue", "-h", "-j", str(outside), "-o", "%T|%r"])
    assert r.stdout.strip() == "PENDING|ReqNodeNotAvail, Reserved for maintenance", r.stdout
    r = qos.run(["sbatch", "--reservation=nope", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode != 0 and "Requested reservation is invalid" in r.stderr
    r = qos.run(["scontrol", "create", "reservation", "ReservationName=maint", "StartTime=now",
                 "Duration=10", "Nodes=node1", "Users=root"])
    assert r.returncode != 0 and "already exists" in r.stderr
    assert qos.run(["scontrol", "delete", "ReservationName=maint"]).returncode == 0
    assert wait_final(qos, outside, 30) == "COMPLETED"
    assert qos.run(["scontrol", "show", "reservation"]).stdout.strip() == "No reservations in the system"


def test_sshare_shows_usage_after_jobs(qos, tmp_path):
    job = qos.sbatch("-c", "2", "--wrap", "sleep 2", cwd=tmp_path)
    assert wait_final(qos, job, 30) == "COMPLETED"
    r = qos.run(["sshare", "-p"])  # -p: parsable with a trailing bar, as Slurm
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "Account|User|RawShares|NormShares|RawUsage|EffectvUsage|FairShare|"
    user = [line.split("|") for line in lines[1:] if line.split("|")[1] == "root"]
    assert user and int(user[0][4]) >= 4, lines  # at least 2 CPUs x 2 s charged
    assert 0 < float(user[0][6]) <= 1.0
    r = qos.run(["sshare"])
    assert r.stdout.splitlines()[0].split() == ["Account", "User", "RawShares", "NormShares",
                                                "RawUsage", "EffectvUsage", "FairShare"]


def test_future_reservation_by_node_count_lets_only_short_jobs_run(qos, tmp_path):
    r = qos.run(["scontrol", "create", "reservation", "StartTime=now+60minutes", "Duration=30",
                 "NodeCnt=1", "Accounts=physics"])
    assert r.returncode == 0 and r.stdout.startswith("Reservation created: physics_1"), r.stdout + r.stderr
    r = qos.run(["scontrol", "show", "reservation", "physics_1"])
    assert "Nodes=node1 NodeCnt=1" in r.stdout and "State=INACTIVE" in r.stdout, r.stdout
    long = qos.sbatch("-t", "90", "--wrap", "true", cwd=tmp_path)  # would run into the window
    short = qos.sbatch("-t", "30", "--wrap", "true", cwd=tmp_path)  # ends before it opens
    assert wait_final(qos, short, 30) == "COMPLETED"
    r = qos.run(["squeue", "-h", "-j", str(long), "-o", "%T"])
    assert r.stdout.strip() == "PENDING", r.stdout
    r = qos.run(["sbatch", "-A", "chemistry", "--reservation=physics_1", "--wrap", "true"], cwd=tmp_path)
    assert r.returncode == 0  # root (the operator) may use any reservation
    qos.run(["scancel", str(long), r.stdout.split()[-1]])
    assert qos.run(["scontrol", "delete", "ReservationName=physics_1"]).returncode == 0
