"""Job notifications (--mail-type / --mail-user): which events a job's change makes, what each
notice says (Slurm 22.05's subjects and MailProg environment), and where it goes.

    job change ──state.save()──▶ Notifier.on_save ──rows──▶ outbox table ──▶ notify_send worker
                  (same commit)    (BEGIN, END, ...)          (store.py)      MailProg | SMTP | webhook

Owns: the event rules and the outbox rows' contents; the submit-time check of --mail-type and
--mail-user. Must not: send anything or block (notify_send.py delivers, on its own thread).

Events as slurmctld makes them: BEGIN when a run starts; when it ends, END for COMPLETED and
CANCELLED, else FAIL (END when only END was asked); REQUEUE; INVALID_DEPEND when a dependency
can never be met; TIME_LIMIT_50/80/90 as that share of the time limit passes and TIME_LIMIT when
it is reached, once each per run. An array's tasks make one BEGIN (its first task) and one END or
FAIL (its last) unless ARRAY_TASKS. IDLE_GPU (ours) comes from idle_gpu.py. Each notice has a key
(job, run, event, channel): the outbox queues it once, across controller restarts too.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from .. import mailtypes
from ..errors import InvalidRequest
from ..model import Job, JobSpec, JobState, Reason

log = logging.getLogger("pyslurm_lite.controller.notify")

WEBHOOK_SCHEMES = ("http://", "https://")
MAX_MAIL_USER = 256  # characters
# One recipient of a comma-separated --mail-user list: a user name or a plain address. MailProg
# runs as the controller's user with it as an argument, so nothing a mail program could read as
# an option (-), a pipe (|), a file (/) or a shell escape (!) may get through.
MAIL_ADDRESS = re.compile(r"[A-Za-z0-9._%+=][A-Za-z0-9._%+=-]*(@[A-Za-z0-9][A-Za-z0-9.-]*)?")
DEFAULT_PORTS = {"http": 80, "https": 443}
RECIPIENTS = (" (user names or addresses, comma-separated; none may start with '-', '|', '/' or "
              "'!', nor hold spaces)")


@dataclass(frozen=True)
class Seen:
    """What the notifier last saw of a job: enough to tell what a save changed."""

    state: JobState
    restart_count: int
    start_time: float


# ---- submit time ------------------------------------------------------------------------------
def screen_mail(cfg, spec: JobSpec) -> None:
    """Check --mail-type and --mail-user (the client may be any program) and give the job its
    default recipient, its user (@MailDomain), as slurmctld does at submit. A webhook URL must
    be under one of WebhookAllowedURLs: the controller does not POST wherever a user says. Mail
    recipients must be plain: MailProg runs as the controller's user with them as arguments."""
    spec.mail_type = mailtypes.parse(spec.mail_type) if spec.mail_type else ""
    user = spec.mail_user.strip()
    if len(user) > MAX_MAIL_USER or any(c.isspace() or ord(c) < 32 for c in user):
        raise InvalidRequest(f"Invalid --mail-user specification: {user[:64]!r}{RECIPIENTS}")
    if user.lower().startswith(WEBHOOK_SCHEMES):
        if not webhook_allowed(user, cfg):
            allowed = [e for e in (p.strip() for p in cfg.webhook_allowed_urls.split(",")) if e]
            raise InvalidRequest(
                f"--mail-user={user}: a webhook must be under one of WebhookAllowedURLs "
                f"({', '.join(allowed) or 'none are allowed on this cluster'})")
    elif user and not mail_recipients_ok(user):
        raise InvalidRequest(f"Invalid --mail-user specification: {user[:64]!r}{RECIPIENTS}")
    spec.mail_user = user or default_recipient(cfg, spec.user)


def mail_recipients_ok(user: str) -> bool:
    """Is --mail-user a list of plain recipients (user, user@host), comma-separated as Slurm
    takes it? The sender asks again before running MailProg (rows queued before this check)."""
    return bool(user) and all(MAIL_ADDRESS.fullmatch(a) for a in user.split(","))


def _url_parts(url: str):
    """(scheme, host, port, path) of an http(s) URL without userinfo, or None. Dot segments
    are refused: the allowed path must be the path the server is asked for."""
    try:
        u = urlsplit(url.strip())
        port = u.port
    except ValueError:
        return None
    scheme = u.scheme.lower()
    if scheme not in DEFAULT_PORTS or not u.hostname or "@" in u.netloc or "\\" in url:
        return None
    segments = u.path.split("/")
    if any(seg.lower() in (".", "..", "%2e", "%2e%2e", ".%2e", "%2e.") for seg in segments):
        return None
    return scheme, u.hostname.lower(), port or DEFAULT_PORTS[scheme], u.path or "/"


def allowed_webhooks(cfg) -> list[tuple]:
    """WebhookAllowedURLs as (scheme, host, port, path ending in /); an entry that is no plain
    http(s) URL allows nothing (logged, so the operator sees why)."""
    out = []
    for entry in (p.strip() for p in cfg.webhook_allowed_urls.split(",")):
        if not entry:
            continue
        parts = _url_parts(entry)
        if parts is None:
            log.warning("WebhookAllowedURLs entry %r is not a plain http(s) URL: ignored", entry)
            continue
        scheme, host, port, path = parts
        out.append((scheme, host, port, path if path.endswith("/") else path + "/"))
    return out


def webhook_allowed(url: str, cfg) -> bool:
    """Is url under an allowed entry: the same scheme, host and port exactly, and a path equal
    to the entry's or below it (a prefix ending at a "/")?"""
    parts = _url_parts(url)
    if parts is None:
        return False
    scheme, host, port, path = parts
    return any((scheme, host, port) == (s, h, p) and (path + "/" == prefix
                                                      or path.startswith(prefix))
               for s, h, p, prefix in allowed_webhooks(cfg))


def default_recipient(cfg, user: str) -> str:
    return f"{user}@{cfg.mail_domain}" if cfg.mail_domain and "@" not in user else user


# ---- what a change makes ------------------------------------------------------------------------
def transitions(before: Seen | None, job: Job) -> list[str]:
    """The events between what was seen of a job and its form now (before None: a new job,
    seen pending). Pure."""
    before = before or Seen(JobState.PENDING, job.restart_count, 0.0)
    events = []
    if job.restart_count > before.restart_count:
        events.append("REQUEUE")
    if job.state == JobState.RUNNING and (before.state != JobState.RUNNING
                                          or job.restart_count != before.restart_count):
        events.append("BEGIN")
    if job.state.is_final and not before.state.is_final:
        events.append("END" if job.state in (JobState.COMPLETED, JobState.CANCELLED) else "FAIL")
        if job.state == JobState.TIMEOUT:
            events.append("TIME_LIMIT")
    if job.reason == Reason.DEPENDENCY_NEVER and job.state.is_final and not before.state.is_final:
        events.append("INVALID_DEPEND")  # --kill-on-invalid-dep ended it
    return events


def wanted(event: str, asked: frozenset[str]) -> str:
    """The event to send for one that happened, given what the job asked for ("" none): a
    failure is told as END to one who asked for END alone, as slurmctld does."""
    if event == "FAIL" and "FAIL" not in asked:
        return "END" if "END" in asked else ""
    if event == mailtypes.IDLE_GPU:
        return event
    return event if event in asked else ""


def time_events(job: Job, now: float) -> list[str]:
    """TIME_LIMIT_50/80/90 (and TIME_LIMIT) whose share of a running job's limit has passed."""
    if job.state != JobState.RUNNING or job.time_limit <= 0 or not job.start_time:
        return []
    used = (now - job.start_time) / (job.time_limit * 60)
    return [name for name, share in mailtypes.TIME_FRACTIONS if used >= share]


class Notifier:
    """Turns job changes into outbox rows. Called under the state lock (state.save's hook)."""

    def __init__(self, state):
        self.s = state
        self.cfg = state.cfg
        self.seen: dict[int, Seen] = {}
        self.extra: list[dict] = []  # notices queued for the next save (idle GPUs)
        self.marked: set[tuple[int, int, str]] = set()  # (job, run, event) time notices made
        self.wake = threading.Event()  # set when rows were queued: the sender looks at once

    def recovered(self) -> None:
        """After state.recover(): what the database holds is what has been told."""
        with self.s.lock:
            for job in self.s.jobs.values():
                self.seen[job.job_id] = _seen(job)

    def on_save(self, jobs: list[Job]) -> list[dict]:
        rows, self.extra = self.extra, []
        for job in jobs:
            before = self.seen.get(job.job_id)
            self.seen[job.job_id] = _seen(job)
            try:
                for event in transitions(before, job):
                    rows += self.rows(job, event, before=before)
            except Exception:  # a notice must never keep a job's change from being committed
                log.exception("job %s: its notifications could not be made", job.job_id)
        if rows:
            self.wake.set()
        return rows

    def queue(self, job: Job, event: str, detail: str = "") -> None:
        """A notice to be committed with the job's next save (its caller saves it next)."""
        self.extra += self.rows(job, event, detail=detail)

    def periodic(self, now: float) -> None:
        """Queue the notices no job change makes (monitor pass): TIME_LIMIT_* as the shares of
        running jobs' limits pass, INVALID_DEPEND for pending jobs whose dependency can never
        be met (the scheduler says so in their reason, without a save)."""
        rows = []
        with self.s.lock:
            for job in self.s.active_jobs():
                if not job.spec.mail_type:
                    continue
                never = job.state == JobState.PENDING and job.reason == Reason.DEPENDENCY_NEVER
                for event in time_events(job, now) + (["INVALID_DEPEND"] if never else []):
                    mark = (job.job_id, job.restart_count, event)
                    if mark not in self.marked:
                        self.marked.add(mark)
                        rows += self.rows(job, event)
            self.marked = {m for m in self.marked if m[0] in self.s.active}
            # a job ended and forgotten (MinJobAge) changes no more; one saved again after
            # that (late usage samples) repeats notices whose keys the outbox already holds
            self.seen = {i: v for i, v in self.seen.items() if i in self.s.jobs}
        if rows:
            self.s.store.add_outbox(rows)
            self.wake.set()

    def rows(self, job: Job, event: str, before: Seen | None = None, detail: str = "") -> list[dict]:
        """The outbox rows of one event of one job: one per channel it goes to; none when the
        job did not ask for it, or an array's task is summed up in its array's notice."""
        from .notify_text import ArraySummary, body, environment, subject, summary_of
        asked = mailtypes.expand(job.spec.mail_type)
        send = wanted(event, asked)
        if not send:
            return []
        about, run, key_id = job, job.restart_count, job.job_id
        if job.array_job_id and "ARRAY_TASKS" not in asked and send in ("BEGIN", "END", "FAIL"):
            tasks = [j for j in self.s.jobs.values() if j.array_job_id == job.array_job_id]
            if send != "BEGIN" and not all(t.state.is_final for t in tasks):
                return []  # the array's last task tells of them all
            about, run, key_id = summary_of(job, tasks), 0, job.array_job_id
        ran_from = before.start_time if before and send == "REQUEUE" else 0.0
        now = self.s.clock()
        text = subject(about, send, now, ran_from, detail)
        payload = {"event": send, "subject": text, "body": body(about, text, detail),
                   "environment": environment(about, send, now, self.cfg, ran_from),
                   "job": _job_fields(about.job if isinstance(about, ArraySummary) else job, detail)}
        return [{"key": f"{key_id}.{run}.{send}.{channel}.{_digest(target)}", "job_id": job.job_id,
                 "channel": channel, "target": target, "payload": json.dumps(payload)}
                for channel, target in self.channels(job)]

    def channels(self, job: Job) -> list[tuple[str, str]]:
        """(channel, target) a job's notices go to: its --mail-user (a webhook URL, or an
        address for SmtpServer or MailProg) and the cluster's WebhookURL."""
        user = job.spec.mail_user or default_recipient(self.cfg, job.spec.user)
        if user.lower().startswith(WEBHOOK_SCHEMES):
            out = [("webhook", user)]
        else:
            out = [("smtp" if self.cfg.smtp_server else "mail", user)]
        if self.cfg.webhook_url and self.cfg.webhook_url != user:
            out.append(("webhook", self.cfg.webhook_url))
        return out


def _digest(target: str) -> str:
    """A short stand-in for a recipient or URL in a notice's key (keys are at most 256)."""
    return hashlib.sha256(target.encode()).hexdigest()[:16]


def _seen(job: Job) -> Seen:
    return Seen(job.state, job.restart_count, job.start_time)


def _job_fields(job: Job, detail: str) -> dict:
    """The webhook's JSON fields besides event and subject."""
    return {"job_id": job.job_id, "array_job_id": job.array_job_id or None,
            "array_task_id": job.array_task_id if job.array_job_id else None,
            "name": job.spec.name, "user": job.spec.user, "account": job.spec.account,
            "partition": job.partition, "state": job.state.value,
            "exit_code": f"{job.exit_code}:{job.exit_signal}", "nodes": job.node_names,
            "submit_time": job.submit_time, "start_time": job.start_time,
            "end_time": job.end_time, "detail": detail}
