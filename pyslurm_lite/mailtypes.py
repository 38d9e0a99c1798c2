"""--mail-type's vocabulary, shared by the commands (which check it) and the controller (which
acts on it): Slurm's words, its ALL, and the subject verb slurmctld's agent.c gives each event.

Nothing here does I/O.
"""

from __future__ import annotations

from .errors import InvalidRequest

# Slurm's words (parse_mail_type, src/common/proc_args.c). IDLE_GPU is ours: the idle-GPU
# notice (IdleGPUAction=notify), sent whatever the job asked for.
MAIL_TYPES = ("NONE", "BEGIN", "END", "FAIL", "REQUEUE", "ALL", "INVALID_DEPEND", "STAGE_OUT",
              "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS")
# ALL is Slurm's MAIL_JOB_BEGIN|END|FAIL|REQUEUE|INVALID_DEPEND|STAGE_OUT: not the time limits
ALL = ("BEGIN", "END", "FAIL", "REQUEUE", "INVALID_DEPEND", "STAGE_OUT")
IDLE_GPU = "IDLE_GPU"

# agent.c's _mail_type_str: what the subject says happened
VERB = {
    "BEGIN": "Began", "END": "Ended", "FAIL": "Failed", "REQUEUE": "Requeued",
    "INVALID_DEPEND": "Invalid dependency", "STAGE_OUT": "StageOut/Teardown",
    "TIME_LIMIT": "Reached time limit", "TIME_LIMIT_90": "Reached 90% of time limit",
    "TIME_LIMIT_80": "Reached 80% of time limit", "TIME_LIMIT_50": "Reached 50% of time limit",
    IDLE_GPU: "Idle GPU",
}
# fraction of the time limit after which each TIME_LIMIT_* notice goes, in the order they come
TIME_FRACTIONS = (("TIME_LIMIT_50", 0.5), ("TIME_LIMIT_80", 0.8), ("TIME_LIMIT_90", 0.9),
                  ("TIME_LIMIT", 1.0))


def parse(text: str) -> str:
    """--mail-type=begin,END -> "BEGIN,END" (Slurm's words, upper case, as given); "" for none.
    InvalidRequest, in Slurm's words, for a word it does not know."""
    words = [w.strip().upper() for w in text.split(",")]
    if not text.strip() or any(w not in MAIL_TYPES for w in words):
        raise InvalidRequest(f"--mail-type={text} invalid")
    if words == ["NONE"]:
        return ""
    return ",".join(dict.fromkeys(w for w in words if w != "NONE"))


# print_mail_type's order (src/common/proc_args.c), as scontrol show job prints MailType=
PRINT_ORDER = ("INVALID_DEPEND", "BEGIN", "END", "FAIL", "REQUEUE", "STAGE_OUT", "TIME_LIMIT",
               "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50", "ARRAY_TASKS")


def printed(mail_type: str) -> str:
    """A stored --mail-type as Slurm prints its mask: ALL spelled out, in Slurm's order."""
    words = expand(mail_type)
    return ",".join(w for w in PRINT_ORDER if w in words) or "NONE"


def expand(mail_type: str) -> frozenset[str]:
    """The events a stored --mail-type asks for: ALL spelled out."""
    words = {w for w in mail_type.split(",") if w}
    if "ALL" in words:
        words |= set(ALL)
    return frozenset(words)
