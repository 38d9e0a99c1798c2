"""Job lifecycle in the controller: submit, cancel, hold/release/requeue, start, end.

Every operation changes memory and commits to the store under the state lock, then returns the
Effects (launches, signals) that dispatch must carry to agents once the lock is released. So
nothing reaches an agent before the state that explains it is durable.
"""

from __future__ import annotations

import dataclasses
import logging
import signal as _signal

from .. import cycletrace
from ..config import collect
from ..errors import InvalidRequest, NotFound, PermissionDenied, StaleState, Unsatisfiable
from ..model import Job, JobSpec, JobState, NodeAllocation, Reason
from ..sched import Plan
from ..sched.placement import spec_for_nodes
from ..sched.projection import MAX_JOB_TEST, projectable
from .assoc_policy import admit, check_submit_limits
from .auth import Caller, Users, allowed, require
from .effects import Effects, Ending, Launch, Signal
from .job_filter import JobFilter, names_job as _names
from .job_timers import limit_to_deadline
from .priority_mgr import billing_at_start
from .state import ClusterState
from .job_update import AppliedWithError
from .notify import screen_mail
from .validate import check_deadline, check_job_counts, validate_spec

# Effects, Ending, JobFilter, Launch and Signal live in effects.py and job_filter.py; they are
# re-exported here, where the servicers and managers have always found them.
__all__ = ["Caller", "Effects", "Ending", "JobFilter", "JobManager", "Launch", "Signal"]

log = logging.getLogger("pyslurm_lite.controller.jobs")

BASE_PRIORITY = 4294901759  # priority/basic: Slurm's first job priority, decreasing by one
MASTER_PORT_BASE = 29500  # MASTER_PORT range for distributed training, one port per job
MASTER_PORT_RANGE = 2000
NO_PRIORITY = -1  # JobSpec.priority: --priority not given
# What a non-operator's --priority becomes: slurmctld (validate_job_create_req) drops it without
# a word; here the submitting command is told, since nothing may differ silently.
UNBOUND_GPUS = ("--gres-flags=enforce-binding has no effect here: no GPU of this cluster is bound to "
                "cores (gres.conf Cores=)")
PRIORITY_DROPPED = ("--priority={} was ignored: only an operator (root, SlurmUser or an "
                    "AdminUsers member) may set a job's priority")


class JobManager:
    def __init__(self, state: ClusterState, users: Users | None = None):
        self.s = state
        self.users = users or Users(state.cfg)
        # called with the jobs that ended, after their commit (usage charging, notifications)
        self.on_ended = None

    # ---- submit -------------------------------------------------------------------------------
    def submit(self, spec: JobSpec, caller: Caller, warnings: list[str] | None = None) -> int:
        """warnings: gets what was changed in the request, for the command to print."""
        if spec.array:
            return self._submit_array(spec, caller, warnings)
        return self.submit_many([spec], caller, warnings)[0]

    def _screen(self, spec: JobSpec, caller: Caller, warnings: list[str] | None) -> None:
        """Submit-time rules on the caller: --priority is an operator's (0, a hold, anyone's);
        a deadline already past is refused."""
        if spec.priority not in (NO_PRIORITY, 0) and not caller.operator:
            if warnings is not None:
                warnings.append(PRIORITY_DROPPED.format(spec.priority))
            spec.priority = NO_PRIORITY
        if spec.priority == 0:
            spec.hold = True
        check_deadline(spec, self.s.clock())
        screen_mail(self.s.cfg, spec)  # --mail-type words, --mail-user (webhooks allowed)
        if spec.gres_flags == "enforce-binding" and warnings is not None and not self._gpus_bound():
            warnings.append(UNBOUND_GPUS)

    def _gpus_bound(self) -> bool:
        """Does any GPU here name the cores close to it (gres.conf Cores=, NVML's affinity)?
        Without one, --gres-flags=enforce-binding changes nothing, and the user is told so."""
        return any(g.cores for n in self.s.nodes.values() for g in self.s.node_gpus(n))

    def _submit_array(self, spec: JobSpec, caller: Caller, warnings: list[str] | None = None) -> int:
        """An array is a job per index, with consecutive ids from the array's own, committed
        together; returns the array's id (the first task's). The spec is checked once, and its
        size before any task is made (MaxArraySize)."""
        from .. import arrays
        self.users.bind_submission(spec, caller)
        self._screen(spec, caller, warnings)
        admit(self.s.accounts, self.s.cfg.accounting_storage_enforce, spec)  # -A, --qos
        part, limit = validate_spec(self.s.cfg, spec, self.s.reservations,
                                    operator=allowed("negative_nice", caller))
        indices, throttle = arrays.parse(spec.array, self.s.cfg.max_array_size)
        tasks = [(dataclasses.replace(spec, environment=dict(spec.environment)), part, limit)
                 for _ in indices]
        return self._accept(tasks, caller, array=(indices, throttle, arrays.fold(indices)))[0]

    def submit_many(self, specs: list[JobSpec], caller: Caller,
                    warnings: list[str] | None = None) -> list[int]:
        """Validate every spec (all or nothing), commit the jobs, then make them visible."""
        if not specs:
            return []
        checked = []
        for spec in specs:
            self.users.bind_submission(spec, caller)
            self._screen(spec, caller, warnings)
            admit(self.s.accounts, self.s.cfg.accounting_storage_enforce, spec)  # -A, --qos
            checked.append((spec, *validate_spec(self.s.cfg, spec, self.s.reservations,
                                                 operator=allowed("negative_nice", caller))))
        return self._accept(checked, caller)

    def _active_counts(self, skip: int = 0) -> dict[tuple[str, str], int]:
        """Jobs held now, by (user, QOS), job `skip` left out: only when some QOS limits
        submissions per user."""
        if all(q.max_submit_jobs_per_user < 0 for q in self.s.cfg.qos.values()):
            return {}
        counts: dict[tuple[str, str], int] = {}
        for job in self.s.active_jobs():
            if job.job_id == skip:
                continue
            key = (job.spec.user, job.spec.qos or "normal")
            counts[key] = counts.get(key, 0) + 1
        return counts

    def _check_submit(self, spec: JobSpec, job_id: int) -> None:
        """The submit limits (MaxJobCount, MaxSubmitJobsPerUser of the QOS, MaxSubmitJobs of
        the association) for job `job_id` entering the queue as `spec`: it is not counted
        among the jobs held, since it leaves wherever it was. Callers hold the lock."""
        def others():
            return [j for j in self.s.active_jobs() if j.job_id != job_id]
        held = len(self.s.active) - (job_id in self.s.active)
        check_job_counts(self.s.cfg, [spec], held, self._active_counts(skip=job_id), spec.user)
        check_submit_limits(self.s.accounts, self.s.cfg.accounting_storage_enforce, [spec], others)

    def _check_move(self, job: Job, new: Job) -> None:
        """scontrol update Account=/QOS=: a move is a submission to the new association and
        QOS (else a user at MaxSubmitJobs there could submit elsewhere and move the jobs)."""
        self._check_submit(new.spec, job.job_id)

    def _readmit(self, job: Job) -> None:
        """Requeueing an ended job queues it again: the association and QOS it names are
        checked, and the submit limits, as for a submission (its association may have been
        deleted, or its limits lowered, since it ran)."""
        spec = dataclasses.replace(job.spec, environment={}, script="")
        admit(self.s.accounts, self.s.cfg.accounting_storage_enforce, spec)
        self._check_submit(spec, job.job_id)
        job.spec.account, job.spec.qos = spec.account, spec.qos

    def _accept(self, checked: list, caller: Caller, array=None) -> list[int]:
        """Checked (spec, partition, time limit) triples become jobs: ids, commit, visible."""
        now = self.s.clock()
        with self.s.lock:  # counted and numbered together: two submitters cannot both fit
            check_job_counts(self.s.cfg, [c[0] for c in checked], len(self.s.active),
                             self._active_counts(), caller.user)
            check_submit_limits(self.s.accounts, self.s.cfg.accounting_storage_enforce,
                                [c[0] for c in checked], self.s.active_jobs)  # MaxSubmitJobs
            first = self.s.next_job_id
            self.s.next_job_id += len(checked)
        jobs, scripts = [], []
        for job_id, (spec, part, limit) in enumerate(checked, first):
            jobs.append(Job(job_id=job_id, spec=spec, submit_time=now,
                            eligible_time=spec.begin_time or now,
                            priority=_initial_priority(spec, job_id), held=spec.hold,
                            direct_priority=spec.priority > 0,
                            time_limit=limit, partition=part.name,
                            reason=Reason.HELD_USER if spec.hold else Reason.NONE))
            if array is not None:
                indices, throttle, folded = array
                jobs[-1].array_job_id, jobs[-1].array_task_id = first, indices[job_id - first]
                jobs[-1].array_limit, jobs[-1].array_tasks = throttle, folded
            scripts.append((spec.script, spec.environment))
            spec.script, spec.environment = "", {}  # kept in the database until launch
        # Durable before anyone can see them: the scheduler only finds them after the commit,
        # and the ids are handed out only then. Outside the state lock, so commits can group.
        self.s.store.insert_jobs(jobs, scripts)
        with self.s.lock:
            for job in jobs:
                self.s.jobs[job.job_id] = job
                self.s.touch(job)
            self.s.new_jobs = True
        self.s.diag.add(jobs_submitted=len(jobs))
        self.s.submissions += 1
        self.s.changed.set()
        return [j.job_id for j in jobs]

    # ---- queries ------------------------------------------------------------------------------
    def find(self, flt: JobFilter, caller: Caller | None = None) -> list[Job]:
        """Jobs matching flt that the caller may see (PrivateData=jobs hides others' jobs)."""
        jobs = self._find(flt)
        private = "jobs" in self.s.cfg.private_data
        if caller is not None and not allowed("view", caller, None, private):
            jobs = [j for j in jobs if allowed("view", caller, j.spec.uid, private)]
        return jobs

    def _find(self, flt: JobFilter) -> list[Job]:
        ids, tasks = set(flt.job_ids), flt.task_pairs()
        with self.s.lock:
            known_arrays = {j.array_job_id for j in self.s.jobs.values() if j.array_job_id}
            arrays = (ids | {a for a, _ in tasks}) & known_arrays
            if ids and not arrays and not tasks:
                pool = [self.s.jobs[i] for i in sorted(ids) if i in self.s.jobs]
            else:
                pool = self.s.jobs.values()
            jobs = [j for j in pool if flt.matches(j, ids, tasks)]
            missing = [i for i in sorted(ids) if i not in self.s.jobs]
        if tasks and not ids and not arrays:
            raise NotFound("Invalid job id specified")  # no array of that id is known
        if missing:  # finished and forgotten: accounting still has them
            found = self.s.store.load_finished(missing)
            if not found and len(missing) == len(ids):
                raise NotFound("Invalid job id specified")  # none of the ids exists at all
            jobs += [j for j in found if flt.matches(j, ids)]
        return jobs

    def _own(self, job: Job, caller: Caller, action: str = "update") -> None:
        require(action, caller, job.spec.uid)

    # ---- cancel and signal --------------------------------------------------------------------
    def cancel(self, flt: JobFilter, caller: Caller, signo: int = 0, batch_only: bool = False,
               full: bool = False) -> tuple[list[int], list[tuple[int, str]], Effects]:
        """scancel. With a signal: --batch signals the batch shell, --full every process of the
        job, neither every process but the batch shell (Slurm's "the steps")."""
        done, errors, effects = [], [], Effects()
        ids, tasks = set(flt.job_ids), flt.task_pairs()
        with self.s.lock:
            targets = [j for j in self.s.jobs.values() if flt.matches(j, ids, tasks)]
            if flt.job_ids or tasks:
                errors += _unnamed(flt.job_ids, tasks, targets)
            changed = []
            for job in targets:
                try:
                    self._own(job, caller, "signal" if signo else "cancel")
                except PermissionDenied as e:
                    errors.append((job.job_id, e.message))
                    continue
                if job.state.is_final:
                    continue
                if signo and job.state == JobState.RUNNING:
                    effects.signals += [
                        Signal(n, [job.job_id], signo, batch_only=batch_only,
                               steps_only=not (batch_only or full))
                        for n in (job.node_names[:1] if batch_only else job.node_names)]
                elif not signo or job.state == JobState.PENDING:
                    job.cancelled_by = str(caller.uid)  # sacct's "CANCELLED by UID"
                    effects.signals += self._end(job, JobState.CANCELLED, Reason.NONE)
                    changed.append(job)
                done.append(job.job_id)
            self.s.save(changed)
        if changed:
            self.s.changed.set()
        return done, errors, effects

    def _signal_effects(self, job: Job, signo: int, terminate: bool = False, batch_only: bool = False,
                        reason: str = "") -> list[Signal]:
        nodes = job.node_names[:1] if batch_only else job.node_names
        runs = [job.restart_count] if terminate else []
        return [Signal(n, [job.job_id], signo, terminate, batch_only, reason, restart_counts=runs)
                for n in nodes]

    def _end(self, job: Job, state: JobState, reason: Reason, now: float | None = None) -> list[Signal]:
        """End a job in `state`. A running job keeps its resources until its agent confirms its
        processes are gone (COMPLETING), so nothing new lands on a node still busy with it."""
        was_running = job.state == JobState.RUNNING
        job.state, job.reason = state, reason
        self.s.diag.ended(state)
        job.end_time = now or self.s.clock()
        if not was_running:
            return []
        self.s.job_completed(job)  # EASY++ learns its run time (sched_policy)
        self.s.completing.add(job.job_id)
        return self._signal_effects(job, _signal.SIGTERM, terminate=True, reason=state.value.lower())

    # ---- hold / release / requeue -------------------------------------------------------------
    def update(self, job_ids: list[int], action: str, caller: Caller, array_tasks=(),
               changes: dict[str, str] | None = None
               ) -> tuple[list[int], list[tuple], Effects]:
        """hold, uhold, release, requeue, requeuehold, or "update" (scontrol update's fields)
        on the jobs named: ids (an array's id names each of its tasks not yet finished) and
        task names (12_3). Errors are (id or task name, Slurm's message)."""
        done, errors, effects, changed = [], [], Effects(), []
        ids = set(job_ids)
        tasks = JobFilter(array_tasks=list(array_tasks)).task_pairs()
        with self.s.lock:
            targets = self._named(ids, tasks)
            errors += _unnamed(list(job_ids), tasks, targets)
            for job in targets:
                try:
                    self._own(job, caller, _ACTION_RULE.get(action, "update"))
                    if action == "update":
                        self._change(job, changes or {}, caller)
                    else:
                        effects.extend(self._apply_action(job, action, caller))
                    changed.append(job)
                    done.append(job.job_id)
                except AppliedWithError as e:  # made, and still an error to the caller
                    changed.append(job)
                    errors.append((_label(job, ids), e.message))
                except (NotFound, PermissionDenied, StaleState, InvalidRequest, Unsatisfiable) as e:
                    errors.append((_label(job, ids), e.message))
            self.s.save(changed)
        self.s.changed.set()
        return done, errors, effects

    def _named(self, ids: set[int], tasks: set[tuple[int, int]]) -> list[Job]:
        """Jobs named by ids or task names, by id; an array named by its id loses its finished
        tasks (nothing to hold or change there). Callers hold the lock."""
        if not tasks and all(self.s.jobs[i].array_job_id == 0 for i in ids if i in self.s.jobs) \
                and not ids & {j.array_job_id for j in self.s.active_jobs()}:
            return [self.s.jobs[i] for i in sorted(ids) if i in self.s.jobs]
        found = [j for j in self.s.jobs.values() if _names(j, ids, tasks)]
        return sorted((j for j in found if j.job_id in ids or not j.state.is_final
                       or (j.array_job_id, j.array_task_id) in tasks), key=lambda j: j.job_id)

    def _change(self, job: Job, changes: dict[str, str], caller: Caller) -> None:
        from . import job_update
        ctx = job_update.Context(self.s.cfg, caller.operator, self.s.clock(), self.s.reservations,
                                 self.s.accounts, check_move=self._check_move)
        job_update.apply(job, changes, ctx)
        if job.state == JobState.PENDING and job.reason in (Reason.DEPENDENCY, Reason.DEPENDENCY_NEVER,
                                                            Reason.BEGIN_TIME):
            job.reason = Reason.NONE  # the next pass says why it still waits, if it does
        log.info("job %s updated by %s: %s", job.job_id, caller.user,
                 " ".join(f"{k}={v}" for k, v in changes.items()))

    def _apply_action(self, job: Job, action: str, caller: Caller) -> Effects:
        effects = Effects()
        if action in ("hold", "uhold"):
            if job.state != JobState.PENDING:
                raise StaleState("Job is no longer pending execution")
            job.held = True
            job.held_by_admin = action == "hold" and allowed("admin_hold", caller)
            job.expected_start = 0.0  # held: no start is projected (the passes leave it out)
            job.reason = Reason.HELD_ADMIN if job.held_by_admin else Reason.HELD_USER
        elif action == "release":
            if job.state != JobState.PENDING:
                raise StaleState("Job is no longer pending execution")
            if job.held_by_admin:
                require("release_admin_hold", caller)
            job.held = job.held_by_admin = False
            job.reason = Reason.NONE
        elif action in ("requeue", "requeuehold"):
            if job.state == JobState.PENDING:
                raise StaleState("Job is pending execution")
            if job.state.is_final:  # a running job is held already; an ended one is queued anew
                self._readmit(job)
            effects.signals += self.requeue(job, hold=action == "requeuehold")
        else:
            raise InvalidRequest(f"unknown job update '{action}'")
        return effects

    def requeue(self, job: Job, hold: bool = False, reason: str = "requeue") -> list[Signal]:
        """Back to PENDING under the same id with the restart count up; running processes are
        killed first (the job's resources stay held until the agent confirms)."""
        signals = []
        if job.state == JobState.RUNNING:
            signals = self._signal_effects(job, _signal.SIGTERM, terminate=True, reason=reason)
            self.s.completing.add(job.job_id)
            # the run's use since its last charge, charged by the priority manager's next round
            self.s.unbilled.append(dataclasses.replace(job, end_time=self.s.clock(), steps=[],
                                                       usage=[], allocations=list(job.allocations)))
        job.state, job.reason = JobState.PENDING, Reason.BEGIN_TIME if not hold else Reason.HELD_USER
        job.restart_count += 1
        job.held = hold
        job.start_time = job.end_time = 0.0
        job.batch_host = ""
        job.eligible_time = self.s.clock()
        if job.job_id not in self.s.completing:
            self.s.release_allocations(job)
            job.allocations = []
        return signals

    # ---- scheduling results -------------------------------------------------------------------
    def apply_plan(self, plan: Plan) -> Effects:
        """Start planned jobs that still fit live state; commit them RUNNING, then launch."""
        effects, started = Effects(), []
        now = self.s.clock()
        with self.s.lock:
            if plan.projecting:
                self.s.projected_at = now  # the next projection in bf_interval seconds
            for jid, reason in plan.reasons.items():
                job = self.s.jobs.get(jid)
                if job is not None and reason == Reason.DEPENDENCY_NEVER and job.spec.kill_on_invalid_dep \
                        and job.state == JobState.PENDING:
                    self._end(job, JobState.CANCELLED, Reason.DEPENDENCY_NEVER, now)  # --kill-on-invalid-dep
                    started.append(job)  # saved below with the starts
                    continue
                expected = _expected_start(plan, jid, job, reason)
                desc = _state_desc(reason, plan.unavailable.get(jid, ()))
                note = _start_note(plan, jid, job, expected)
                if job is not None and job.state == JobState.PENDING and \
                        (job.reason, job.expected_start, job.state_desc, job.start_note) != \
                        (reason, expected, desc, note):
                    job.reason, job.expected_start, job.state_desc = reason, expected, desc
                    job.start_note = note
                    self.s.touch_listing(job)
            effects.signals += self._preempt(plan.preemptions, now)
            for start in plan.starts:
                job = self.s.jobs.get(start.job_id)
                if job is None or job.state != JobState.PENDING or job.job_id in self.s.completing:
                    continue
                if not all(self.s.fits_now(a, job.spec.exclusive) for a in start.allocations):
                    log.info("dropped stale start of job %s", start.job_id)
                    continue
                self._start(job, list(start.allocations), now)
                self.s.job_started(job)  # the starvation guard's bound follows the waits
                started.append(job)
            cycletrace.marks("start.decided", (j.job_id for j in started))
            self.s.save(started)
            cycletrace.marks("start.committed", (j.job_id for j in started))
            self.s.diag.add(jobs_started=sum(j.state == JobState.RUNNING for j in started))
            # the epochs are read under the same lock as the starts: a registration after
            # this point reconciles without these launches, and the agent will refuse them
            epochs = dict(self.s.epochs)
        by_node: dict[str, list[Job]] = {}
        for job in started:
            if job.spec.batch and job.state == JobState.RUNNING:  # an allocation for srun/salloc has no script to launch
                by_node.setdefault(job.allocations[0].node, []).append(job)
        effects.launches = [Launch(node, jobs, epochs.get(node, "")) for node, jobs in by_node.items()]
        return effects

    def _preempt(self, preemptions, now: float) -> list[Signal]:
        """Mark victims (committed with the plan's starts), then SIGTERM every process of each
        one; its grace time runs from now (preemptions_due ends it)."""
        signals, marked = [], []
        for p in preemptions:
            job = self.s.jobs.get(p.job_id)
            if job is None or job.state != JobState.RUNNING or job.preempt_time:
                continue
            job.preempt_time, job.preempt_mode = now + p.grace, p.mode
            log.info("job %s preempted by job %s (%s after %ss)", job.job_id, p.by, p.mode, p.grace)
            self.s.diag.add(preempted_jobs=1)
            marked.append(job)
            if p.grace > 0:
                signals += self._signal_effects(job, _signal.SIGTERM)
        self.s.save(marked)
        return signals

    def _start(self, job: Job, allocations: list[NodeAllocation], now: float) -> None:
        if len(allocations) != job.spec.num_nodes:  # -N min-max, or more -w nodes than -N
            job.spec = spec_for_nodes(job.spec, len(allocations))
        job.allocations = allocations
        job.batch_host = allocations[0].node
        job.state, job.reason, job.state_desc = JobState.RUNNING, Reason.NONE, ""
        job.start_time, job.end_time = now, 0.0
        job.time_limit = limit_to_deadline(job, now)
        job.master_port = self._free_master_port(job)
        job.billing = billing_at_start(self.s, job)  # TRESBillingWeights, charged while it runs
        self.s.hold_allocations(job)

    def _free_master_port(self, job: Job) -> int:
        used = set().union(*(self.s.ports.get(n, ()) for n in job.node_names))
        for k in range(MASTER_PORT_RANGE):
            port = MASTER_PORT_BASE + (job.job_id + k) % MASTER_PORT_RANGE
            if port not in used:
                return port
        return MASTER_PORT_BASE

    # ---- reports from agents ------------------------------------------------------------------
    def jobs_ended(self, endings: list["Ending"]) -> Effects:
        """Apply agents' reports that jobs' batch scripts are gone, in one transaction.
        Idempotent: a repeated report changes nothing. The job's other nodes are told to clean
        up (steps left running there, cgroups)."""
        effects = Effects()
        with self.s.lock:
            cycletrace.marks("end.received", (e.job_id for e in endings))
            changed = [job for e in endings if (job := self._apply_ending(e)) is not None]
            for job in changed:
                effects.signals += [Signal(n, [job.job_id], 0, True, False, "complete",
                                           restart_counts=[job.restart_count])
                                    for n in job.node_names[1:] if job.state.is_final]
                for step in job.steps:
                    if step.state == JobState.RUNNING:
                        step.state, step.end_time = JobState.CANCELLED, job.end_time
            self.s.save(changed)
            cycletrace.marks("end.committed", (j.job_id for j in changed))
        if self.on_ended is not None:
            self.on_ended([j for j in changed if j.state.is_final])
        if changed:
            self.s.changed.set()
        return effects

    def _apply_ending(self, e: "Ending") -> Job | None:
        job = self.s.jobs.get(e.job_id)
        if job is None:
            return None
        if job.state == JobState.RUNNING and job.restart_count == e.restart_count:
            job.exit_code, job.exit_signal = e.exit_code, e.exit_signal
            job.end_time = self.s.clock()
            job.state, job.reason = _final_state(e.exit_code, e.exit_signal, e.oom, e.message)
            self.s.diag.ended(job.state)
            self.s.release_allocations(job)
            self.s.job_completed(job)  # EASY++ learns its run time (sched_policy)
            return job
        if job.job_id in self.s.completing:
            if job.state.is_final and not job.exit_signal and not job.exit_code:
                job.exit_code, job.exit_signal = e.exit_code, e.exit_signal
            self.s.release_allocations(job)
            if job.state == JobState.PENDING:  # requeued: its old allocation is now free
                job.allocations = []
            return job
        return None

def _initial_priority(spec: JobSpec, job_id: int) -> int:
    """An operator's --priority, else priority/basic's (multifactor recomputes it)."""
    return spec.priority if spec.priority > 0 else max(BASE_PRIORITY - job_id, 1)


def _label(job: Job, ids: set[int]):
    """How an error names a job: its id, or its task name when named through its array."""
    if job.array_job_id and job.job_id not in ids:
        from ..arrays import task_name
        return task_name(job.array_job_id, job.array_task_id)
    return job.job_id


def _unnamed(ids: list[int], tasks: set[tuple[int, int]], found: list[Job]) -> list[tuple]:
    """(id, "Invalid job id specified") for each id or task name (12_3) that found no job; a
    task is reported by its name, as Slurm does."""
    named = {j.job_id for j in found} | {j.array_job_id for j in found}
    have = {(j.array_job_id, j.array_task_id) for j in found if j.array_job_id}
    from ..arrays import task_name
    return ([(i, "Invalid job id specified") for i in ids if i not in named]
            + [(task_name(a, t), "Invalid job id specified") for a, t in sorted(tasks - have)])


_ACTION_RULE = {"hold": "hold", "uhold": "hold", "release": "release", "requeue": "requeue",
                "requeuehold": "requeue"}


def _expected_start(plan: Plan, jid: int, job: Job | None, reason: Reason) -> float:
    """A pending job's expected start: its backfill reservation, else its projected start
    (sched/projection.py), else 0 (unknown). A pass that did not project (between two every
    bf_interval), or whose projection stopped at bf_max_job_test before this job, leaves the
    last projection of a job still waiting for resources as it was, as Slurm leaves the start
    times backfill set until it runs again."""
    if jid in plan.reservations:
        return plan.reservations[jid]
    if job is None or not projectable(reason):
        return 0.0
    if not plan.projecting or plan.unprojected.get(jid) == MAX_JOB_TEST:
        return job.expected_start
    return plan.projected.get(jid, 0.0)


def _start_note(plan: Plan, jid: int, job: Job | None, expected: float) -> str:
    """Why a pending job shows no projected start: the limit the projection stopped at
    (bf_max_job_test, bf_window), as the last projecting pass found; "" when it has one."""
    if expected or job is None:
        return ""
    if not plan.projecting:
        return job.start_note
    return plan.unprojected.get(jid, "")


def _state_desc(reason: Reason, unavailable: tuple[str, ...]) -> str:
    """Slurm's state_desc for a pending job: the -w nodes that are down or drained."""
    if reason == Reason.REQ_NODE_NOT_AVAIL and unavailable:
        return f"{reason.value}, UnavailableNodes:{collect(unavailable)}"
    return ""


def _final_state(exit_code: int, exit_signal: int, oom: bool, message: str) -> tuple[JobState, Reason]:
    if oom:
        return JobState.OUT_OF_MEMORY, Reason.NONE
    if message:
        return JobState.FAILED, Reason.NON_ZERO_EXIT
    if exit_signal:
        return JobState.FAILED, Reason.RAISED_SIGNAL
    if exit_code:
        return JobState.FAILED, Reason.NON_ZERO_EXIT
    return JobState.COMPLETED, Reason.NONE
