"""What a notification says: the subject line slurmctld's agent.c writes (mail_job_info,
_set_job_time, _set_job_term_info), a short body, and the environment MailProg gets
(job_common_env_vars and _build_mail_env). Pure: the time is an argument.

    Slurm Job_id=12 Name=wrap Began, Queued time 00:00:01
    Slurm Job_id=12 Name=wrap Ended, Run time 00:00:02, COMPLETED, ExitCode 0
    Slurm Array Task Job_id=20_3 (23) Name=sweep Failed, Run time 00:01:00, FAILED, ExitCode 1
    Slurm Array Summary Job_id=20_* (20) Name=sweep Ended, Mixed, ExitCode [0-1]
"""

from __future__ import annotations

import grp
from dataclasses import dataclass, field

from .. import mailtypes
from ..config import collect
from ..model import Job, JobState
from ..units import format_hms as secs2time_str  # Slurm's secs2time_str: [D-]HH:MM:SS

ENDINGS = ("END", "FAIL")
RUN_TIME_EVENTS = ("END", "FAIL", "REQUEUE")
PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # MailProg's search path


@dataclass
class ArraySummary:
    """An array told of as one job (no ARRAY_TASKS): its id, its first task's record, all its
    tasks known now."""

    job: Job
    tasks: list[Job] = field(default_factory=list)

    @property
    def array_job_id(self) -> int:
        return self.job.array_job_id


def summary_of(job: Job, tasks: list[Job]) -> ArraySummary:
    return ArraySummary(job, sorted(tasks, key=lambda t: t.job_id))


def subject(about, event: str, now: float, ran_from: float = 0.0, detail: str = "") -> str:
    verb = mailtypes.VERB[event]
    if event == mailtypes.IDLE_GPU and detail:
        verb += f", {detail}"
    if isinstance(about, ArraySummary):
        j = about.job
        return (f"Slurm Array Summary Job_id={j.array_job_id}_* ({j.array_job_id}) "
                f"Name={j.spec.name} {verb}{_summary_term(about, event)}")
    j = about
    tail = _job_time(j, event, now, ran_from) + _term(j, event)
    if j.array_job_id:
        return (f"Slurm Array Task Job_id={j.array_job_id}_{j.array_task_id} ({j.job_id}) "
                f"Name={j.spec.name} {verb}{tail}")
    return f"Slurm Job_id={j.job_id} Name={j.spec.name} {verb}{tail}"


def _job_time(job: Job, event: str, now: float, ran_from: float) -> str:
    if event == "BEGIN" and job.start_time and job.submit_time:
        return ", Queued time " + secs2time_str(job.start_time - job.submit_time)
    if event == "REQUEUE" and ran_from:
        return ", Run time " + secs2time_str(now - ran_from)
    if event in RUN_TIME_EVENTS and job.start_time and job.end_time:
        return ", Run time " + secs2time_str(job.end_time - job.start_time)
    if event.startswith("TIME_LIMIT") and job.start_time:
        return ", Run time " + secs2time_str(now - job.start_time)
    return ""


def _term(job: Job, event: str) -> str:
    """', STATE, ExitCode N' of an ending; a job killed by a signal has no exit code there."""
    if event not in ENDINGS:
        return ""
    if job.exit_signal:
        return f", {job.state.value}"
    return f", {job.state.value}, ExitCode {job.exit_code}"


def _summary_term(summary: ArraySummary, event: str) -> str:
    if event not in ENDINGS:
        return ""
    tasks = summary.tasks or [summary.job]
    codes = [t.exit_code for t in tasks]
    signals = [t.exit_signal for t in tasks if t.exit_signal]
    lo, hi = min(codes), max(codes)
    if signals:
        return f", Mixed, MaxSignal [{max(signals)}]"
    worst = next((t.state for t in tasks if t.state != JobState.COMPLETED), JobState.COMPLETED)
    state = "Mixed" if lo == 0 and hi > 0 else worst.value
    return f", {state}, ExitCode [{lo}-{hi}]"


def body(about, text: str, detail: str = "") -> str:
    """The message on MailProg's stdin (Slurm sends none; the subject says it all)."""
    j = about.job if isinstance(about, ArraySummary) else about
    lines = [text, "", f"JobId={j.job_id} JobName={j.spec.name}", f"UserId={j.spec.user}",
             f"Account={j.spec.account or '(null)'} Partition={j.partition}",
             f"JobState={j.state.value} ExitCode={j.exit_code}:{j.exit_signal}",
             f"NodeList={collect(j.node_names) if j.node_names else '(null)'}",
             f"WorkDir={j.spec.work_dir}"]
    return "\n".join(lines + ([f"AdminComment={detail}"] if detail else [])) + "\n"


def environment(about, event: str, now: float, cfg, ran_from: float = 0.0) -> dict[str, str]:
    """MailProg's environment: Slurm's SLURM_JOB_* (job_common_env_vars, _build_mail_env, and the
    QUEUED/RUN_TIME and EXIT_CODE_MAX set with the subject's parts), nothing of the controller's."""
    j = about.job if isinstance(about, ArraySummary) else about
    status = (j.exit_code << 8) | j.exit_signal  # Slurm stores a wait(2) status
    env = {
        "PATH": PATH, "SLURM_CLUSTER_NAME": cfg.cluster_name,
        "SLURM_JOB_ACCOUNT": j.spec.account, "SLURM_JOB_CONSTRAINTS": j.spec.constraint,
        "SLURM_JOB_DERIVED_EC": str(status), "SLURM_JOB_EXIT_CODE": str(status),
        "SLURM_JOB_EXIT_CODE2": f"{j.exit_code}:{j.exit_signal}",
        "SLURM_JOB_GID": str(j.spec.gid), "SLURM_JOB_GROUP": _group(j.spec.gid),
        "SLURM_JOBID": str(j.job_id), "SLURM_JOB_ID": str(j.job_id),
        "SLURM_JOB_MAIL_TYPE": mailtypes.VERB[event], "SLURM_JOB_NAME": j.spec.name,
        "SLURM_JOB_NODELIST": collect(j.node_names) if j.node_names else "",
        "SLURM_JOB_PARTITION": j.partition, "SLURM_JOB_STATE": j.state.value,
        "SLURM_JOB_UID": str(j.spec.uid), "SLURM_JOB_USER": j.spec.user,
        "SLURM_JOB_WORK_DIR": j.spec.work_dir, "SLURM_JOB_STDIN": j.spec.std_in,
        "SLURM_JOB_STDOUT": j.spec.std_out, "SLURM_JOB_STDERR": j.spec.std_err or j.spec.std_out,
    }
    if j.array_job_id:
        env["SLURM_ARRAY_JOB_ID"] = str(j.array_job_id)
        env["SLURM_ARRAY_TASK_ID"] = str(j.array_task_id)
    times = _job_time(j, event, now, ran_from)
    if times:
        name = "SLURM_JOB_QUEUED_TIME" if event == "BEGIN" else "SLURM_JOB_RUN_TIME"
        env[name] = times.split(" time ", 1)[1]
    if event in ENDINGS and not isinstance(about, ArraySummary):
        env["SLURM_JOB_EXIT_CODE_MAX"] = "0" if j.exit_signal else str(j.exit_code)
    return env


def _group(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except (KeyError, OverflowError):
        return str(gid)
