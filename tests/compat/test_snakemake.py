"""snakemake with its slurm executor plugin (snakemake-executor-plugin-slurm), unchanged, against
our cluster: `snakemake --executor slurm` reads `scontrol show config` (MinJobAge), submits each
rule's job with `sbatch --parsable ... --export=ALL --comment ... --wrap` (or a script on
stdin), follows them with `sacct -X --parsable2 --clusters all --noheader
--format=JobIdRaw,State --starttime ... --endtime now --name RUN_ID`, and inside each job runs
the rule through the slurm-jobstep plugin's `srun`. A 3-rule workflow (three squares, their
total, `all`) must finish, every rule having run in a job of its own."""

from __future__ import annotations

import shutil

import pytest

from compat_cluster import assert_queue_drains, compat_cluster, job_output

pytest.importorskip("snakemake_executor_plugin_slurm",
                    reason="snakemake-executor-plugin-slurm is not installed (.ci/run installs it)")

WORKFLOW_TIMEOUT = 180.0  # seconds for the whole workflow (4 jobs in two rounds; ~35 s idle)

SNAKEFILE = r"""
rule all:
    input: "total.txt"

rule square:
    output: "sq{i}.txt"
    shell: "echo $(( {wildcards.i} * {wildcards.i} )) $SLURM_JOB_ID > {output}"

rule total:
    input: expand("sq{i}.txt", i=[1, 2, 3])
    output: "total.txt"
    shell: "awk '{{s += $1}} END {{print s}}' {input} > {output}; echo $SLURM_JOB_ID >> {output}"
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    yield from compat_cluster(tmp_path_factory, "snakemake")


def test_a_three_rule_workflow_runs_each_rule_as_a_job(cluster):
    snakemake = shutil.which("snakemake", path=cluster.env["PATH"])
    assert snakemake, "no snakemake command next to this Python"
    work = cluster.dir / "work" / "workflow"
    work.mkdir()
    (work / "Snakefile").write_text(SNAKEFILE)
    r = cluster.run([snakemake, "--executor", "slurm", "--jobs", "3",
                     # snakemake's own job runs inside each job: it needs more than a shell rule
                     "--default-resources", "slurm_partition=main", "runtime=5", "mem_mb=800",
                     # poll each second instead of waiting 40 s, then every 10 s
                     "--slurm-init-seconds-before-status-checks", "1",
                     "--seconds-between-status-checks", "1"],
                    cwd=work, env={"XDG_CACHE_HOME": str(cluster.dir / "cache")},  # not ~/.cache
                    timeout=WORKFLOW_TIMEOUT)
    assert r.returncode == 0, (f"snakemake exited {r.returncode}\n{r.stderr[-6000:]}\n"
                               f"{job_output(work / '.snakemake' / 'slurm_logs')}\n{cluster.log_tails()}")
    squares = [(work / f"sq{i}.txt").read_text().split() for i in (1, 2, 3)]
    assert [s[0] for s in squares] == ["1", "4", "9"]
    total, total_job = (work / "total.txt").read_text().split()
    assert total == "14"
    jobs = {s[1] for s in squares} | {total_job}
    assert len(jobs) == 4 and all(j.isdigit() for j in jobs), jobs  # each rule in its own job
    assert_queue_drains(cluster)
