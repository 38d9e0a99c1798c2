"""Notifications' pure parts: --mail-type words, the events a job change makes, Slurm's subjects
and MailProg environment, the submit-time check of --mail-user, the outbox (a real SQLite store)
and the sender's back-off and signature."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import threading

import pytest

from pyslurm_lite import mailtypes
from pyslurm_lite.config import Config
from pyslurm_lite.controller import notify, notify_send, notify_text
from pyslurm_lite.controller.notify import Seen, screen_mail, transitions, wanted
from pyslurm_lite.controller.state import ClusterState
from pyslurm_lite.controller.store import Store
from pyslurm_lite.errors import ConfigError, InvalidRequest
from pyslurm_lite.model import Job, JobSpec, JobState, NodeAllocation, Reason

P, R = JobState.PENDING, JobState.RUNNING


def job(job_id=12, state=R, mail_type="BEGIN,END", name="wrap", submit=100.0, start=101.0, end=0.0,
        exit_code=0, exit_signal=0, restart=0, limit=10, array=(0, 0), user="alice") -> Job:
    spec = JobSpec(name=name, user=user, uid=1000, gid=1000, mail_type=mail_type,
                   mail_user="", work_dir="/tmp", std_out="/tmp/out")
    j = Job(job_id=job_id, spec=spec, state=state, submit_time=submit, start_time=start,
            end_time=end, exit_code=exit_code, exit_signal=exit_signal, restart_count=restart,
            time_limit=limit, partition="main",
            allocations=[NodeAllocation("node1", 1, 100, [0])] if start else [])
    j.array_job_id, j.array_task_id = array
    return j


@pytest.mark.parametrize("text,stored", [
    ("BEGIN", "BEGIN"), ("begin,end", "BEGIN,END"), ("ALL", "ALL"), ("NONE", ""),
    ("TIME_LIMIT_80,ARRAY_TASKS", "TIME_LIMIT_80,ARRAY_TASKS"), ("END,END", "END"),
])
def test_mail_type_words(text, stored):
    assert mailtypes.parse(text) == stored


@pytest.mark.parametrize("text", ["BOGUS", "BEGIN,NOPE", "", "TIME_LIMIT_70"])
def test_mail_type_refuses_what_slurm_does_not_know(text):
    with pytest.raises(InvalidRequest, match=r"--mail-type=.* invalid"):
        mailtypes.parse(text)


@pytest.mark.parametrize("stored,shown", [
    ("END,BEGIN", "BEGIN,END"), ("ALL", "INVALID_DEPEND,BEGIN,END,FAIL,REQUEUE,STAGE_OUT"),
    ("TIME_LIMIT_50,TIME_LIMIT", "TIME_LIMIT,TIME_LIMIT_50"), ("", "NONE"),
])
def test_mail_type_printed_as_scontrol_does(stored, shown):
    assert mailtypes.printed(stored) == shown


def test_all_is_slurms_set_without_the_time_limits():
    assert mailtypes.expand("ALL") >= {"BEGIN", "END", "FAIL", "REQUEUE", "INVALID_DEPEND"}
    assert "TIME_LIMIT" not in mailtypes.expand("ALL")


@pytest.mark.parametrize("before,after,events", [
    (None, job(state=R), ["BEGIN"]),
    (Seen(R, 0, 101.0), job(state=R), []),
    (Seen(R, 0, 101.0), job(state=JobState.COMPLETED, end=103.0), ["END"]),
    (Seen(R, 0, 101.0), job(state=JobState.CANCELLED, end=103.0), ["END"]),
    (Seen(R, 0, 101.0), job(state=JobState.FAILED, exit_code=1), ["FAIL"]),
    (Seen(R, 0, 101.0), job(state=JobState.TIMEOUT), ["FAIL", "TIME_LIMIT"]),
    (Seen(R, 0, 101.0), job(state=P, start=0.0, restart=1), ["REQUEUE"]),
    (Seen(P, 1, 0.0), job(state=R, restart=1), ["BEGIN"]),
    (Seen(JobState.COMPLETED, 0, 101.0), job(state=JobState.COMPLETED), []),
])
def test_transitions(before, after, events):
    assert transitions(before, after) == events


def test_a_job_cancelled_for_a_dependency_never_met_tells_invalid_depend():
    j = job(state=JobState.CANCELLED, start=0.0)
    j.reason = Reason.DEPENDENCY_NEVER
    assert transitions(Seen(P, 0, 0.0), j) == ["END", "INVALID_DEPEND"]


@pytest.mark.parametrize("event,asked,sent", [
    ("FAIL", {"FAIL"}, "FAIL"), ("FAIL", {"END"}, "END"), ("FAIL", {"BEGIN"}, ""),
    ("BEGIN", {"END"}, ""), ("IDLE_GPU", set(), "IDLE_GPU"), ("REQUEUE", {"REQUEUE"}, "REQUEUE"),
])
def test_what_is_sent_for_what_was_asked(event, asked, sent):
    assert wanted(event, frozenset(asked)) == sent


@pytest.mark.parametrize("j,event,text", [
    (job(), "BEGIN", "Slurm Job_id=12 Name=wrap Began, Queued time 00:00:01"),
    (job(state=JobState.COMPLETED, end=103.0), "END",
     "Slurm Job_id=12 Name=wrap Ended, Run time 00:00:02, COMPLETED, ExitCode 0"),
    (job(state=JobState.FAILED, end=161.0, exit_code=127), "FAIL",
     "Slurm Job_id=12 Name=wrap Failed, Run time 00:01:00, FAILED, ExitCode 127"),
    (job(state=JobState.CANCELLED, end=102.0, exit_signal=15), "END",
     "Slurm Job_id=12 Name=wrap Ended, Run time 00:00:01, CANCELLED"),
    (job(state=JobState.CANCELLED, start=0.0), "END",
     "Slurm Job_id=12 Name=wrap Ended, CANCELLED, ExitCode 0"),
    (job(), "TIME_LIMIT_80", "Slurm Job_id=12 Name=wrap Reached 80% of time limit, Run time 00:08:00"),
    (job(job_id=23, array=(20, 3)), "BEGIN",
     "Slurm Array Task Job_id=20_3 (23) Name=wrap Began, Queued time 00:00:01"),
])
def test_subjects_are_slurms(j, event, text):
    assert notify_text.subject(j, event, now=581.0) == text


def test_array_summary_subject():
    tasks = [job(job_id=20 + i, state=JobState.COMPLETED if i else JobState.FAILED, end=200.0,
                 exit_code=0 if i else 2, array=(20, i)) for i in range(3)]
    summary = notify_text.summary_of(tasks[1], tasks)
    assert notify_text.subject(summary, "FAIL", 300.0) == \
        "Slurm Array Summary Job_id=20_* (20) Name=wrap Failed, Mixed, ExitCode [0-2]"
    assert notify_text.subject(summary, "BEGIN", 300.0) == \
        "Slurm Array Summary Job_id=20_* (20) Name=wrap Began"


def test_requeue_subject_counts_the_run_it_ended():
    j = job(state=P, start=0.0, restart=1)
    assert notify_text.subject(j, "REQUEUE", 161.0, ran_from=101.0) == \
        "Slurm Job_id=12 Name=wrap Requeued, Run time 00:01:00"


def test_mail_prog_environment_is_slurms():
    env = notify_text.environment(job(state=JobState.FAILED, end=161.0, exit_code=3), "FAIL",
                                  200.0, Config(cluster_name="lab"))
    assert env["SLURM_JOB_ID"] == env["SLURM_JOBID"] == "12"
    assert env["SLURM_JOB_MAIL_TYPE"] == "Failed" and env["SLURM_JOB_STATE"] == "FAILED"
    assert env["SLURM_JOB_EXIT_CODE"] == str(3 << 8) and env["SLURM_JOB_EXIT_CODE2"] == "3:0"
    assert env["SLURM_JOB_EXIT_CODE_MAX"] == "3" and env["SLURM_JOB_RUN_TIME"] == "00:01:00"
    assert env["SLURM_CLUSTER_NAME"] == "lab" and env["SLURM_JOB_USER"] == "alice"
    assert "PYSLURM_LITE_CONF" not in env and "HOME" not in env  # nothing of the controller's


@pytest.mark.parametrize("user,allowed,domain,result", [
    ("", "", "", "alice"),
    ("", "", "lab.org", "alice@lab.org"),
    ("bob@x.org", "", "lab.org", "bob@x.org"),
    ("https://hooks.lab.org/job", "https://hooks.lab.org/", "", "https://hooks.lab.org/job"),
    ("https://evil.example/x", "https://hooks.lab.org/", "", InvalidRequest),
    ("http://169.254.169.254/", "", "", InvalidRequest),
    ("a b", "", "", InvalidRequest),
    ("a\nSubject: x", "", "", InvalidRequest),
    ("bob,carol@x.org", "", "lab.org", "bob,carol@x.org"),  # Slurm's comma-separated list
    ("first.last+jobs@mail.x.org", "", "", "first.last+jobs@mail.x.org"),
    # what MailProg (run as the controller's user) would read as an option, pipe, file or escape
    ("--exec=!id", "", "", InvalidRequest),
    ("-Ssendmail=/tmp/x", "", "", InvalidRequest),
    ("bob,-x", "", "", InvalidRequest),
    ("|/bin/sh", "", "", InvalidRequest),
    ("/etc/passwd", "", "", InvalidRequest),
    ("!id", "", "", InvalidRequest),
    ("bob,,carol", "", "", InvalidRequest),
    ("bob@x.org;id", "", "", InvalidRequest),
    ("ftp://hooks.lab.org/x", "ftp://hooks.lab.org/", "", InvalidRequest),
])
def test_mail_user_at_submit(user, allowed, domain, result):
    cfg = Config(mail_domain=domain, webhook_allowed_urls=allowed)
    spec = JobSpec(user="alice", mail_type="END", mail_user=user)
    if result is InvalidRequest:
        with pytest.raises(InvalidRequest):
            screen_mail(cfg, spec)
    else:
        screen_mail(cfg, spec)
        assert spec.mail_user == result


@pytest.mark.parametrize("url,ok", [
    ("http://127.0.0.1:2973/jobs/x", True),
    ("http://127.0.0.1:2973/jobs", True),  # the entry's own path
    ("http://127.0.0.1:29737/jobs/x", False),  # a longer port is another port
    ("http://127.0.0.1/jobs/x", False),
    ("https://127.0.0.1:2973/jobs/x", False),  # another scheme
    ("http://127.0.0.1:2973/jobsx", False),  # a path prefix ends at a "/"
    ("http://127.0.0.1:2973/jobs/../admin", False),
    ("http://127.0.0.1:2973/jobs/%2e%2e/admin", False),
    ("http://user:pw@127.0.0.1:2973/jobs/x", False),  # userinfo
    ("http://127.0.0.1:2973@evil.example/jobs/x", False),
    ("HTTPS://Hooks.Lab.org/any/thing", True),  # scheme and host are case-blind
    ("https://hooks.lab.org:443/x", True),  # the default port, written out
    ("https://hooks.lab.org.evil.example/x", False),
    ("https://hooks.lab.org:8443/x", False),
    ("https://evil.example/?u=https://hooks.lab.org/", False),
    ("https://hooks.lab.org@evil.example/x", False),
    ("http://10.0.0.1:8080/x", True),
    ("http://10.0.0.1:80801/x", False),  # the reviewer's case: an entry without a path
    ("http://10.0.0.1:8080.evil.example/x", False),
])
def test_webhook_allow_list_matches_scheme_host_port_and_path(url, ok):
    cfg = Config(webhook_allowed_urls="http://127.0.0.1:2973/jobs/, https://hooks.lab.org, "
                                      "not a url,http://10.0.0.1:8080")
    assert notify.webhook_allowed(url, cfg) is ok


def test_a_bad_mail_type_from_any_client_is_refused_at_submit():
    with pytest.raises(InvalidRequest, match="--mail-type=BOGUS invalid"):
        screen_mail(Config(), JobSpec(user="alice", mail_type="BOGUS"))


@pytest.mark.parametrize("elapsed_min,events", [
    (4.9, []), (5.0, ["TIME_LIMIT_50"]), (8.5, ["TIME_LIMIT_50", "TIME_LIMIT_80"]),
    (10.0, ["TIME_LIMIT_50", "TIME_LIMIT_80", "TIME_LIMIT_90", "TIME_LIMIT"]),
])
def test_time_limit_shares(elapsed_min, events):
    assert notify.time_events(job(start=100.0, limit=10), 100.0 + elapsed_min * 60) == events


# ---- the notifier on a real state and store --------------------------------------------------------
@pytest.fixture
def state(tmp_path):
    cfg = Config(cluster_name="lab", mail_domain="lab.org", webhook_url="http://127.0.0.1:9/hook")
    s = ClusterState(cfg, Store(f"sqlite:///{tmp_path}/state.db", clock=lambda: 500.0), clock=lambda: 500.0)
    s.on_save = notify.Notifier(s).on_save
    return s


def put(state, *jobs_):
    state.store.insert_jobs(list(jobs_), [("", {})] * len(jobs_))
    for j in jobs_:
        state.jobs[j.job_id] = j
        state.active.add(j.job_id)


def test_a_start_queues_its_notice_in_the_same_commit_and_once(state):
    j = job(state=P, start=0.0)
    put(state, j)
    j.state, j.start_time = R, 101.0
    state.save([j])
    state.save([j])  # saved again unchanged: nothing new
    rows = state.store.due_outbox(1e12)
    assert sorted(r["channel"] for r in rows) == ["mail", "webhook"]
    mail = next(r for r in rows if r["channel"] == "mail")
    assert mail["target"] == "alice@lab.org"
    assert json.loads(mail["payload"])["subject"] == "Slurm Job_id=12 Name=wrap Began, Queued time 00:00:01"


def test_a_restarted_notifier_does_not_repeat_what_was_queued(state):
    j = job(state=P, start=0.0)
    put(state, j)
    j.state = R
    state.save([j])
    state.on_save = notify.Notifier(state).on_save  # a new controller: no memory of what it saw
    state.save([j])  # it tells BEGIN again, but those keys are queued already
    assert len(state.store.due_outbox(1e12)) == 2


def test_an_array_without_array_tasks_tells_once(state):
    tasks = [job(job_id=20 + i, state=P, start=0.0, array=(20, i)) for i in range(3)]
    put(state, *tasks)
    for t in tasks:
        t.state, t.start_time = R, 101.0
    state.save(tasks)
    for t in tasks[:2]:
        t.state, t.end_time = JobState.COMPLETED, 110.0
    state.save(tasks[:2])
    assert {json.loads(r["payload"])["event"] for r in state.store.due_outbox(1e12)} == {"BEGIN"}
    tasks[2].state, tasks[2].end_time = JobState.COMPLETED, 111.0
    state.save(tasks[2:])
    subjects = sorted(json.loads(r["payload"])["subject"] for r in state.store.due_outbox(1e12)
                      if r["channel"] == "mail")
    assert subjects == ["Slurm Array Summary Job_id=20_* (20) Name=wrap Began",
                        "Slurm Array Summary Job_id=20_* (20) Name=wrap Ended, COMPLETED, ExitCode [0-0]"]


def test_array_tasks_tell_each_task(state):
    tasks = [job(job_id=30 + i, state=P, start=0.0, array=(30, i), mail_type="BEGIN,ARRAY_TASKS")
             for i in range(2)]
    put(state, *tasks)
    for t in tasks:
        t.state = R
    state.save(tasks)
    assert len([r for r in state.store.due_outbox(1e12) if r["channel"] == "mail"]) == 2


def test_time_limit_notices_come_once_each(state):
    j = job(mail_type="TIME_LIMIT_50,TIME_LIMIT_80", start=100.0, limit=1)
    put(state, j)
    n = notify.Notifier(state)
    n.periodic(100.0 + 31)
    n.periodic(100.0 + 32)
    n.periodic(100.0 + 50)
    events = sorted(json.loads(r["payload"])["event"] for r in state.store.due_outbox(1e12)
                    if r["channel"] == "mail")
    assert events == ["TIME_LIMIT_50", "TIME_LIMIT_80"]


# ---- sending ----------------------------------------------------------------------------------------
def test_backoff_doubles_up_to_an_hour():
    assert [notify_send.backoff(n) for n in (1, 2, 3)] == [5.0, 10.0, 20.0]
    assert notify_send.backoff(40) == 3600.0


def test_signature_is_hmac_sha256_of_the_body():
    assert notify_send.sign(b"k", b"{}") == "sha256=" + hmac.new(b"k", b"{}", hashlib.sha256).hexdigest()


def test_a_failed_try_is_retried_later(state, tmp_path):
    state.store.add_outbox([{"key": "k1", "job_id": 1, "channel": "mail", "target": "alice",
                             "payload": json.dumps({"subject": "s", "body": "b", "environment": {}})}])
    cfg = Config(mail_prog=str(tmp_path / "missing-mailprog"))
    sender = notify_send.Sender(state.store, cfg, threading.Event(), clock=lambda: 1000.0)
    assert sender.run_once(1000.0) == 0
    assert state.store.due_outbox(1000.0) == []  # not before its back-off
    (row,) = state.store.due_outbox(1005.0)
    assert row["attempts"] == 1 and "missing-mailprog" in row["error"]
    sender.run_once(500.0 + notify_send.GIVE_UP - 1)  # created at 500
    assert state.store.due_outbox(1e12), "retried for days"
    sender.run_once(500.0 + notify_send.GIVE_UP + 60)
    assert state.store.due_outbox(1e12) == [], "then given up"


MARKER_PROG = "#!/bin/sh\necho \"$@\" >> {out}\n"


@pytest.mark.parametrize("channel,target", [
    ("mail", "--exec=!touch /tmp/pwned"), ("mail", "bob,-x"), ("mail", "|/bin/sh"),
    ("smtp", "-oQ/tmp"), ("webhook", "http://127.0.0.1:9/elsewhere"),
])
def test_the_sender_refuses_a_queued_row_it_may_not_use(state, tmp_path, channel, target):
    """Rows queued before the submit-time check (or an allow-list changed since) are dropped
    without MailProg, SMTP or a POST: at once, never retried (a row that got past the check
    would fail on the dead port 9 and wait to be retried)."""
    out = tmp_path / "calls"
    prog = tmp_path / "mailprog"
    prog.write_text(MARKER_PROG.format(out=out))
    prog.chmod(0o755)
    payload = {"subject": "s", "body": "b", "environment": {}, "event": "END", "job": {}}
    state.store.add_outbox([{"key": "bad", "job_id": 1, "channel": channel, "target": target,
                             "payload": json.dumps(payload)},
                            {"key": "good", "job_id": 1, "channel": "mail", "target": "bob,carol@x.org",
                             "payload": json.dumps(payload)}])
    cfg = Config(mail_prog=str(prog), smtp_server="127.0.0.1:9",
                 webhook_allowed_urls="http://127.0.0.1:9/jobs/")
    sender = notify_send.Sender(state.store, cfg, threading.Event(), clock=lambda: 1000.0)
    sender.run_once(1000.0)
    assert out.read_text() == "-s s bob,carol@x.org\n"  # only the good row ran MailProg
    assert state.store.due_outbox(1e12) == []  # the bad one is done with, not retried


def test_secret_file_symlink_is_refused(tmp_path):
    real = tmp_path / "real"
    real.write_text("s3cret\n")
    real.chmod(0o600)
    link = tmp_path / "secret"
    link.symlink_to(real)
    with pytest.raises(ConfigError, match="symbolic link"):
        notify_send.load_webhook_secret(Config(webhook_secret_file=str(link)))


def test_secret_file_is_checked_on_the_file_opened(tmp_path, monkeypatch):
    """The mode is read from the open descriptor (fstat), not the path: a file swapped after a
    stat of the path is caught."""
    path = tmp_path / "secret"
    path.write_text("s3cret\n")
    path.chmod(0o644)
    real_stat = os.stat
    monkeypatch.setattr(notify_send.os, "stat", lambda p, *a, **k: (
        real_stat(str(tmp_path / "decoy"), *a, **k) if str(p) == str(path) else real_stat(p, *a, **k)))
    decoy = tmp_path / "decoy"
    decoy.write_text("x")
    decoy.chmod(0o600)
    with pytest.raises(ConfigError, match="group or others"):
        notify_send.load_webhook_secret(Config(webhook_secret_file=str(path)))


def test_secret_file_in_a_directory_others_may_change_is_refused(tmp_path):
    d = tmp_path / "shared"
    d.mkdir()
    d.chmod(0o777)
    (d / "secret").write_text("s3cret\n")
    (d / "secret").chmod(0o600)
    with pytest.raises(ConfigError, match="directory"):
        notify_send.load_webhook_secret(Config(webhook_secret_file=str(d / "secret")))
    d.chmod(0o1777)  # sticky: nobody else may rename or remove the file
    assert notify_send.load_webhook_secret(Config(webhook_secret_file=str(d / "secret"))) == b"s3cret"


@pytest.mark.parametrize("mode,owner_ok,error", [(0o600, True, None), (0o640, True, "group"),
                                                   (0o604, True, "group")])
def test_webhook_secret_file_must_be_private(tmp_path, mode, owner_ok, error):
    path = tmp_path / "secret"
    path.write_text("s3cret\n")
    os.chmod(path, mode)
    cfg = Config(webhook_secret_file=str(path))
    if error:
        with pytest.raises(ConfigError, match=error):
            notify_send.load_webhook_secret(cfg)
    else:
        assert notify_send.load_webhook_secret(cfg) == b"s3cret"


# ---- the commands' options ------------------------------------------------------------------------
def _sbatch_spec(argv, tmp_path, directives="", environ=None):
    from pyslurm_lite.cli import sbatch
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n{directives}true\n")
    ns, text = sbatch.merged_options(sbatch.build_parser(), argv + [str(script)], environ or {})
    return sbatch.spec_from_args(ns, text, str(tmp_path))


@pytest.mark.parametrize("argv,directives,environ,mail_type,mail_user", [
    (["--mail-type=begin,END", "--mail-user=bob"], "", {}, "BEGIN,END", "bob"),
    ([], "#SBATCH --mail-type=FAIL\n#SBATCH --mail-user=x@y.org\n", {}, "FAIL", "x@y.org"),
    ([], "", {"SBATCH_MAIL_TYPE": "ALL", "SBATCH_MAIL_USER": "env@y.org"}, "ALL", "env@y.org"),
    (["--mail-user=cli@y.org"], "", {"SBATCH_MAIL_USER": "env@y.org"}, "", "cli@y.org"),
    ([], "", {}, "", ""),
])
def test_sbatch_mail_options(tmp_path, argv, directives, environ, mail_type, mail_user):
    spec = _sbatch_spec(argv, tmp_path, directives, environ)
    assert (spec.mail_type, spec.mail_user) == (mail_type, mail_user)


def test_sbatch_refuses_a_bad_mail_type_in_slurms_words(tmp_path):
    with pytest.raises(InvalidRequest, match=r"^--mail-type=BEGIN,NOPE invalid$"):
        _sbatch_spec(["--mail-type=BEGIN,NOPE"], tmp_path)


def test_a_notice_that_cannot_be_made_never_stops_the_jobs_commit(state, monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("boom")
    monkeypatch.setattr(notify_text, "subject", broken)
    j = job(state=P, start=0.0)
    put(state, j)
    j.state = R
    state.save([j])
    assert state.store.load_jobs()[0].state == R and state.store.due_outbox(1e12) == []
