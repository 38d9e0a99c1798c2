"""Notifications and idle GPUs end to end: real daemons, the real commands, a MailProg script that
writes down how it was called (as the acceptance check's), a webhook receiver on loopback that
checks the HMAC, an aiosmtpd server, and a controller killed with -9 while a notice waits."""

from __future__ import annotations

import glob
import hashlib
import hmac
import json
import os
import signal
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import psutil
import pytest

from conftest import configured_cluster, wait_final, wait_state

SECRET = b"hook-secret-for-tests"
MAILPROG = """#!/bin/bash
# fails while $DIR/fail exists, so a notice has to wait and be retried
[ -e {dir}/fail ] && exit 3
f=$(mktemp {dir}/mail/part.XXXXXX) || exit 1
{{ for a in "$@"; do printf 'ARG %s\\n' "$a"; done; env | grep '^SLURM_' | sed 's/^/ENV /'; echo BODY; cat; }} > "$f"
mv "$f" "{dir}/mail/call.${{f##*.}}"  # whole: the tests read call.* while notices are sent
"""


class Hooks(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Hooks.received.append((dict(self.headers), body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def hooks():
    server = HTTPServer(("127.0.0.1", 0), Hooks)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()


@pytest.fixture(scope="module")
def mail_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("mail")
    (d / "mail").mkdir()
    prog = d / "mailprog"
    prog.write_text(MAILPROG.format(dir=d))
    prog.chmod(0o755)
    secret = d / "secret"
    secret.write_bytes(SECRET)
    secret.chmod(0o600)
    return d


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, mail_dir, hooks):
    extra = (f"\nMailProg={mail_dir}/mailprog\nJobAcctGatherFrequency=1\nIdleGPUThreshold=5\n"
             f"IdleGPUTime=3\nIdleGPUAction=notify\n"
             f"WebhookURL=http://127.0.0.1:{hooks.server_port}/cluster\n"
             f"WebhookSecretFile={mail_dir}/secret\n"
             f"WebhookAllowedURLs=http://127.0.0.1:{hooks.server_port}/jobs/\n")
    yield from configured_cluster(tmp_path_factory, "notify", (1, 2, 2000, 2), extra=extra)


def calls(mail_dir, job_id: int) -> list[dict]:
    """MailProg's calls naming the job: argv, SLURM_* environment, body."""
    out = []
    for f in glob.glob(f"{mail_dir}/mail/call.*"):
        lines = open(f).read().split("\n")
        args = [l[4:] for l in lines if l.startswith("ARG ")]
        if len(args) == 3 and f"Job_id={job_id} " in args[1]:
            env = dict(l[4:].split("=", 1) for l in lines if l.startswith("ENV "))
            out.append({"args": args, "env": env, "body": "\n".join(lines[lines.index("BODY") + 1:])})
    return out


def wait_for(what, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = what()
        if got:
            return got
        time.sleep(0.2)
    return what()


def hooks_for(job_id: int, path: str = "/cluster") -> list[dict]:
    out = []
    for headers, body in list(Hooks.received):
        doc = json.loads(body)
        if doc.get("job_id") == job_id:
            out.append({"doc": doc, "sig": headers.get("X-Pyslurm-Signature"), "body": body})
    return out


def _wait_gone(pid: int, timeout: float) -> None:
    """Until the killed daemon is gone; init may have reaped it already (then it is)."""
    try:
        psutil.wait_procs([psutil.Process(pid)], timeout=timeout)
    except psutil.NoSuchProcess:
        pass


def sbatch(cluster, *args):
    """Submitted from the cluster's directory, so the jobs' slurm-N.out files land there."""
    return cluster.sbatch(*args, cwd=cluster.dir)


def test_mailprog_and_webhook_get_begin_and_end(cluster, mail_dir):
    j = sbatch(cluster, "--mail-type=BEGIN,END", "--mail-user=someone", "--wrap", "sleep 1")
    assert wait_final(cluster, j) == "COMPLETED"
    got = wait_for(lambda: len(calls(mail_dir, j)) >= 2 and calls(mail_dir, j))
    subjects = sorted(c["args"][1] for c in got)
    assert [c["args"][0] for c in got] == ["-s", "-s"] and {c["args"][2] for c in got} == {"someone"}
    assert subjects[0].startswith(f"Slurm Job_id={j} Name=wrap Began, Queued time 00:00:0"), subjects
    assert subjects[1].startswith(f"Slurm Job_id={j} Name=wrap Ended, Run time 00:00:0"), subjects
    assert subjects[1].endswith(", COMPLETED, ExitCode 0"), subjects
    end = next(c for c in got if "Ended" in c["args"][1])
    assert end["env"]["SLURM_JOB_ID"] == str(j) and end["env"]["SLURM_JOB_MAIL_TYPE"] == "Ended"
    assert end["env"]["SLURM_JOB_STATE"] == "COMPLETED" and f"JobId={j}" in end["body"]
    show = cluster.run(["scontrol", "show", "job", str(j)]).stdout
    assert "\n   MailUser=someone MailType=BEGIN,END\n" in show, show
    posted = wait_for(lambda: len(hooks_for(j)) >= 2 and hooks_for(j))
    assert sorted(p["doc"]["event"] for p in posted) == ["BEGIN", "END"]
    for p in posted:
        assert p["sig"] == "sha256=" + hmac.new(SECRET, p["body"], hashlib.sha256).hexdigest()


def test_no_mail_unless_asked(cluster, mail_dir):
    j = sbatch(cluster, "--wrap", "true")
    assert wait_final(cluster, j) == "COMPLETED"
    time.sleep(1.5)
    assert calls(mail_dir, j) == [] and hooks_for(j) == []


def test_a_bad_mail_type_is_refused(cluster):
    before = cluster.run(["squeue", "-h"]).stdout
    r = cluster.run(["sbatch", "--mail-type=BEGIN,SOMETIMES", "--wrap", "true"], cwd=cluster.dir)
    assert r.returncode == 1 and r.stderr == "sbatch: error: --mail-type=BEGIN,SOMETIMES invalid\n"
    assert cluster.run(["squeue", "-h"]).stdout == before


@pytest.mark.parametrize("user", ["--exec=!touch /tmp/pwned", "-Sx=y", "|/bin/sh", "/etc/passwd",
                                  "!id", "someone,-x"])
def test_a_mail_user_mailprog_could_misread_is_refused(cluster, mail_dir, user):
    """MailProg runs as the controller's user with --mail-user as its argument: an option, a
    pipe, a file or a shell escape is refused at submit, and nothing is queued."""
    before = cluster.run(["squeue", "-h", "-o", "%i"]).stdout
    r = cluster.run(["sbatch", "--mail-type=BEGIN", f"--mail-user={user}", "--wrap", "true"],
                    cwd=cluster.dir)
    assert r.returncode == 1 and r.stdout == "", (r.stdout, r.stderr)
    assert "Invalid --mail-user specification" in r.stderr and "'-'" in r.stderr, r.stderr
    assert cluster.run(["squeue", "-h", "-o", "%i"]).stdout == before


def test_a_mail_user_list_goes_to_mailprog_as_slurm_passes_it(cluster, mail_dir):
    j = sbatch(cluster, "--mail-type=END", "--mail-user=someone,other@lab.example", "--wrap", "true")
    assert wait_final(cluster, j) == "COMPLETED"
    got = wait_for(lambda: calls(mail_dir, j))
    assert [c["args"][2] for c in got] == ["someone,other@lab.example"], got


def test_a_job_webhook_only_where_the_operator_allows(cluster, hooks):
    port = hooks.server_port
    r = cluster.run(["sbatch", f"--mail-user=http://127.0.0.1:{port}/elsewhere", "--mail-type=END",
                     "--wrap", "true"], cwd=cluster.dir)
    assert r.returncode == 1 and "WebhookAllowedURLs" in r.stderr, r.stderr
    r = cluster.run(["sbatch", f"--mail-user=http://127.0.0.1:{port}/jobs/../admin",
                     "--mail-type=END", "--wrap", "true"], cwd=cluster.dir)
    assert r.returncode == 1 and "WebhookAllowedURLs" in r.stderr, r.stderr  # not a prefix match
    j = sbatch(cluster, f"--mail-user=http://127.0.0.1:{port}/jobs/mine", "--mail-type=END",
                       "--wrap", "true")
    assert wait_final(cluster, j) == "COMPLETED"
    assert wait_for(lambda: len(hooks_for(j)) >= 2), "the job's webhook and the cluster's"


def test_an_idle_gpu_is_flagged_and_notified(cluster, mail_dir):
    j = sbatch(cluster, "--gres=gpu:1", "--wrap", "sleep 60")
    try:
        assert wait_state(cluster, j, "RUNNING") == "RUNNING"
        show = lambda: cluster.run(["scontrol", "show", "job", str(j)]).stdout
        text = wait_for(lambda: "AdminComment=IdleGPU" in show() and show(), timeout=25)
        assert text, f"not flagged: {show()}\n{cluster.log_tails()}"
        assert "AdminComment=IdleGPU: 1 GPU(s) under 5% for 3 s since " in text
        notice = wait_for(lambda: calls(mail_dir, j))
        assert notice and "Idle GPU" in notice[0]["args"][1], notice
        assert cluster.state(j) == "RUNNING"  # IdleGPUAction=notify leaves it running
    finally:
        cluster.run(["scancel", str(j)])


def test_a_notice_waiting_when_the_controller_is_killed_is_delivered_after(cluster, mail_dir):
    (mail_dir / "fail").touch()
    j = sbatch(cluster, "--mail-type=END", "--mail-user=later", "--wrap", "true")
    assert wait_final(cluster, j) == "COMPLETED"
    time.sleep(1.5)  # the first try fails (MailProg exits 3): the notice waits in the outbox
    assert calls(mail_dir, j) == []
    controller = cluster.pid_of("controller")
    os.kill(controller, signal.SIGKILL)
    _wait_gone(controller, 10)
    (mail_dir / "fail").unlink()
    r = cluster.up()
    assert r.returncode == 0, f"{r.stdout}{r.stderr}\n{cluster.log_tails()}"
    got = wait_for(lambda: calls(mail_dir, j), timeout=30)
    assert [c["args"][2] for c in got] == ["later"], f"{got}\n{cluster.log_tails()}"


def test_smtp_server_delivers_mail(cluster, tmp_path):
    """Last: it points the controller at an SMTP server and restarts it."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    got = []

    class Keep(Message):
        def handle_message(self, message):
            got.append(message)

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    smtp = Controller(Keep(), hostname="127.0.0.1", port=port)
    smtp.start()
    try:
        with open(cluster.conf, "a") as f:
            f.write(f"\nSmtpServer=127.0.0.1:{port}\nSmtpFrom=slurm@lab.example\n")
        controller = cluster.pid_of("controller")
        os.kill(controller, signal.SIGTERM)
        _wait_gone(controller, 15)
        assert cluster.up().returncode == 0
        j = sbatch(cluster, "--mail-type=END", "--mail-user=alice@lab.example", "--wrap", "true")
        assert wait_final(cluster, j) == "COMPLETED"
        assert wait_for(lambda: got), cluster.log_tails()
        msg = got[0]
        assert msg["To"] == "alice@lab.example" and msg["From"] == "slurm@lab.example"
        assert msg["Subject"].startswith(f"Slurm Job_id={j} Name=wrap Ended, Run time ")
    finally:
        smtp.stop()
