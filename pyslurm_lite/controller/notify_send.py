"""Delivery of queued notifications: the outbox worker and its three channels.

  mail     MailProg -s SUBJECT RECIPIENT, the body on stdin and Slurm's SLURM_JOB_* environment,
           as the controller's user (Slurm's SlurmUser), no shell, killed after MAIL_PROG_TIMEOUT;
  smtp     SmtpServer=host[:port] (ours): one message through smtplib, From SmtpFrom;
  webhook  a JSON POST to WebhookURL or a job's allowed --mail-user URL, signed
           `X-Pyslurm-Signature: sha256=<HMAC-SHA256 of the body>` with WebhookSecretFile's key;
           WebhookFormat=slack posts {"text": subject}.

Owns: sending and the retry schedule (exponential back-off from RETRY_FIRST up to RETRY_MAX).
Runs on its own thread (`run_forever`), so a slow mail server or a hung MailProg delays only
other notices, never the scheduler or an RPC. Must not: decide what to send (notify.py does).
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import logging
import os
import smtplib
import socket
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.request
from email.message import EmailMessage
from email.policy import SMTP as _SMTP

from ..errors import ConfigError
from .notify import mail_recipients_ok, webhook_allowed

log = logging.getLogger("pyslurm_lite.controller.notify")

MAIL_PROG_TIMEOUT = 60.0  # seconds a MailProg may run (Slurm's MAIL_PROG_TIMEOUT is 120 s)
NET_TIMEOUT = 15.0  # seconds for an SMTP conversation or a webhook POST
RETRY_FIRST = 5.0  # seconds before the first retry; doubled each time
RETRY_MAX = 3600.0  # seconds: the longest wait between tries
POLL = 1.0  # seconds between looks at the outbox when nothing wakes the worker
KEEP_SENT = 86400.0  # seconds a sent notice's key is kept (no repeat of it within that time)
GIVE_UP = 3 * 86400.0  # seconds after which a notice still failing is dropped, with an error
SMTP_PORT = 25
SIGNATURE_HEADER = "X-Pyslurm-Signature"
# RFC 5322's hard line limit: a Slurm subject stays on one header line, as MailProg's would
SMTP_POLICY = _SMTP.clone(max_line_length=998)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A webhook is POSTed where it was allowed to go, not where a reply points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


class DeliveryError(Exception):
    """One try failed; the notice is retried later."""


class Refused(Exception):
    """A notice whose target may not be used (queued before today's checks, or the allow-list
    changed since): dropped, never tried."""


def load_webhook_secret(cfg) -> bytes:
    """WebhookSecretFile's key, or b"" when none is set. It signs what the cluster says, so a
    file others could read or replace is refused (ConfigError at start): a regular file, not a
    symlink, owned by root or the controller's user, no group or other access, in a directory
    only they can change. Checked on the open file (fstat), so it cannot be swapped between
    the check and the read."""
    path = cfg.webhook_secret_file
    if not path:
        return b""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        why = "a symbolic link is not accepted" if e.errno == errno.ELOOP else e.strerror
        raise ConfigError(f"WebhookSecretFile={path}: {why}") from None
    with os.fdopen(fd, "rb") as f:
        _check_secret_owner(path, os.fstat(f.fileno()))
        _check_secret_dir(path)
        data = f.read(65536).strip()
    if not data:
        raise ConfigError(f"WebhookSecretFile={path} is empty")
    return data


def _trusted(uid: int) -> bool:
    return uid in (0, os.geteuid())


def _check_secret_owner(path: str, st: os.stat_result) -> None:
    if not stat.S_ISREG(st.st_mode):
        raise ConfigError(f"WebhookSecretFile={path} is not a regular file")
    if not _trusted(st.st_uid):
        raise ConfigError(f"WebhookSecretFile={path} must be owned by root (owner uid {st.st_uid})")
    if st.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"WebhookSecretFile={path} must not be readable or writable by group "
                          f"or others (mode {stat.S_IMODE(st.st_mode):04o}); chmod 600 it")


def _check_secret_dir(path: str) -> None:
    """Whoever may change the file's directory may replace the file: root or the controller's
    user only (a sticky directory such as /tmp, owned by root, lets nobody else rename it)."""
    parent = os.path.dirname(os.path.abspath(path))
    st = os.stat(parent)
    writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
    if not _trusted(st.st_uid) or (writable and not st.st_mode & stat.S_ISVTX):
        raise ConfigError(f"WebhookSecretFile={path}: its directory {parent} must be owned by "
                          f"root and writable by nobody else (owner uid {st.st_uid}, mode "
                          f"{stat.S_IMODE(st.st_mode):04o})")


def sign(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def backoff(attempts: int) -> float:
    """Seconds to wait after `attempts` failed tries: 5, 10, 20, ... up to an hour."""
    return min(RETRY_FIRST * 2 ** max(attempts - 1, 0), RETRY_MAX)


class Sender:
    """Takes due notices from the store's outbox and delivers them, one at a time."""

    def __init__(self, store, cfg, wake: threading.Event | None = None, clock=time.time):
        self.store, self.cfg, self.clock = store, cfg, clock
        self.wake = wake or threading.Event()
        self.secret = load_webhook_secret(cfg)
        self._pruned = 0.0

    def run_once(self, now: float) -> int:
        """Try every due notice once; returns how many went out."""
        sent = 0
        for row in self.store.due_outbox(now):
            try:
                self.deliver(row)
            except Refused as e:
                log.error("notification %s dropped: %s", row["key"], e)
                self.store.outbox_sent(row["id"], now)  # done with; pruned as sent ones
                continue
            except DeliveryError as e:
                if now - row["created"] > GIVE_UP:  # e.g. an address no server takes
                    log.error("notification %s to %s dropped after %d tries: %s", row["key"],
                              row["target"], row["attempts"] + 1, e)
                    self.store.outbox_sent(row["id"], now)  # done with; pruned as sent ones
                    continue
                attempts = row["attempts"] + 1
                wait = backoff(attempts)
                log.warning("notification %s to %s failed (try %d, next in %.0f s): %s",
                            row["key"], row["target"], attempts, wait, e)
                self.store.outbox_retry(row["id"], attempts, now + wait, str(e))
                continue
            self.store.outbox_sent(row["id"], self.clock())
            log.info("notification %s sent to %s", row["key"], row["target"])
            sent += 1
        if now - self._pruned > KEEP_SENT / 24:
            self.store.prune_outbox(now - KEEP_SENT)
            self._pruned = now
        return sent

    def run_forever(self, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                self.run_once(self.clock())
            except Exception:  # the loop's boundary: a broken row must not end delivery
                log.exception("notification pass failed")
            self.wake.wait(POLL)
            self.wake.clear()

    def deliver(self, row: dict) -> None:
        payload = json.loads(row["payload"])
        channel = row["channel"]
        self.screen(channel, row["target"])
        if channel == "mail":
            self._mail_prog(row["target"], payload)
        elif channel == "smtp":
            self._smtp(row["target"], payload)
        elif channel == "webhook":
            self._webhook(row["target"], payload)
        else:
            raise DeliveryError(f"unknown channel {channel}")

    def screen(self, channel: str, target: str) -> None:
        """The submit-time checks again, just before use: a row may be older than them, and
        MailProg runs with the controller's rights (a recipient "-..." would be its option)."""
        if channel in ("mail", "smtp") and not mail_recipients_ok(target):
            raise Refused(f"recipient {target[:64]!r} is not a plain address list: not sent")
        if channel == "webhook" and target != self.cfg.webhook_url \
                and not webhook_allowed(target, self.cfg):
            raise Refused(f"webhook {target[:128]} is not under WebhookAllowedURLs")

    def _mail_prog(self, recipient: str, payload: dict) -> None:
        argv = [self.cfg.mail_prog, "-s", payload["subject"], recipient]
        try:
            r = subprocess.run(argv, input=payload["body"].encode(), env=payload["environment"],
                               capture_output=True, timeout=MAIL_PROG_TIMEOUT, cwd="/")
        except subprocess.TimeoutExpired:
            raise DeliveryError(f"MailProg {argv[0]} ran past {MAIL_PROG_TIMEOUT:.0f} s") from None
        except OSError as e:
            raise DeliveryError(f"MailProg {argv[0]}: {e.strerror}") from None
        if r.returncode != 0:
            out = (r.stderr or r.stdout).decode(errors="replace").strip()[:200]
            raise DeliveryError(f"MailProg {argv[0]} exited {r.returncode}: {out}")

    def _smtp(self, recipient: str, payload: dict) -> None:
        host, _, port = self.cfg.smtp_server.rpartition(":") if ":" in self.cfg.smtp_server \
            else (self.cfg.smtp_server, "", str(SMTP_PORT))
        msg = EmailMessage(policy=SMTP_POLICY)
        msg["From"] = self.cfg.smtp_from or f"slurm@{socket.getfqdn()}"
        msg["To"] = recipient
        msg["Subject"] = payload["subject"]
        msg.set_content(payload["body"])
        try:
            with smtplib.SMTP(host, int(port), timeout=NET_TIMEOUT) as smtp:
                smtp.send_message(msg)
        except (OSError, smtplib.SMTPException, ValueError) as e:
            raise DeliveryError(f"SMTP {self.cfg.smtp_server}: {e}") from None

    def _webhook(self, url: str, payload: dict) -> None:
        if self.cfg.webhook_format == "slack":
            doc = {"text": payload["subject"]}
        else:
            doc = {**payload["job"], "event": payload["event"], "subject": payload["subject"],
                   "cluster": self.cfg.cluster_name}
        body = json.dumps(doc, sort_keys=True).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "pyslurm-lite"}
        if self.secret:
            headers[SIGNATURE_HEADER] = sign(self.secret, body)
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with _OPENER.open(request, timeout=NET_TIMEOUT) as reply:
                reply.read(4096)
        except urllib.error.HTTPError as e:
            raise DeliveryError(f"webhook {url}: HTTP {e.code}") from None
        except (OSError, ValueError) as e:
            raise DeliveryError(f"webhook {url}: {e}") from None
