"""The controller's live state: jobs and nodes in memory, mirrored in the Store.

Owns: the one lock, the in-memory tables, node usage bookkeeping and building the scheduler's
snapshot. Every change to a job goes through `save()` (durable before it takes effect) so the
restart scan finds exactly what was acknowledged. Must not: talk to agents (dispatch does that).
"""

from __future__ import annotations

import math
import threading
import uuid
from dataclasses import replace

from .. import arrays
from ..config import Config
from ..errors import InvalidRequest
from ..model import (AssocTree, GpuDevice, GpuShareUse, Job, JobState, Node, NodeAllocation,
                     NodeState, Reservation,
                     parse_constraint)
from ..sched import JobView, NodeView, PartitionView, RunningView, Snapshot, dependency
from ..sched import gpu_topology, sharing
from ..sched import switches
from ..sched.placement import refine
from ..sched.policy import History, WaitScale
from ..sched.profile import planned_end
from .assoc import Accounts
from .assoc_policy import LimitsCache
from .diag import Diag
from .store import Store

MIN_JOB_AGE = 300  # seconds a finished job stays in memory (squeue -j still shows it), as Slurm


def _dependency_rec(job: Job) -> "dependency.Rec":
    return dependency.Rec(job.state.value, job.start_time, job.array_job_id, job.array_task_id)


def busy_elsewhere(node: Node, foreign_action: str = "exclude") -> set[int]:
    """The node's GPUs not for scheduling: those its agent saw busy with processes no job
    started (unless ForeignGpuAction=report) and those out for a fault (GpuHealthAction=gpu)."""
    foreign = {f.index for f in node.foreign_gpus} if foreign_action == "exclude" else set()
    return foreign | {f.index for f in node.gpu_faults}


HISTORY_SEED = 10000  # started jobs read at start-up for EASY++'s history (sched_policy)


PREDICTIONS_SLACK = 1000  # ended jobs' predictions kept before a sweep


class ClusterState:
    def __init__(self, cfg: Config, store: Store, clock):
        self.cfg = cfg
        self.store = store
        self.clock = clock
        self.lock = threading.RLock()
        self.instance = uuid.uuid4().hex[:12]
        self.jobs: dict[int, Job] = {}
        # ids of jobs not yet over (or still completing): what a scheduling pass looks at, so
        # finished jobs kept for MinJobAge cost it nothing. Kept by touch().
        self.active: set[int] = set()
        self.completing: set[int] = set()  # ended jobs whose processes are not yet confirmed gone
        self.projected_at = -math.inf  # the last pass that projected pending jobs' starts
        self.nodes: dict[str, Node] = {n: Node(config=c) for n, c in cfg.nodes.items()}
        self.registered: set[str] = set()  # nodes registered with this controller instance
        self.epochs: dict[str, str] = {}  # node -> its current registration (launches carry it)
        self._registrations = 0
        self.ports: dict[str, set[int]] = {}  # node -> MASTER_PORTs of the jobs holding it
        # node -> {GPU index: (shard|mps, count in use)}: gres/shard and gres/mps (sched/sharing.py)
        self.share_use: dict[str, dict[int, tuple[str, int]]] = {}
        self.warned: set[tuple[int, int]] = set()  # (job, restart count) given its --signal
        self.versions: dict[int, int] = {}  # job id -> change counter (RPC caches key on it)
        self._views: dict[int, JobView] = {}
        self.next_job_id = cfg.first_job_id
        self.changed = threading.Event()  # wakes the scheduler
        self.new_jobs = False  # submissions since priorities were last computed
        self.submissions = 0  # submit calls so far (the scheduler defers passes over a burst)
        self._final_states: dict[int, dependency.Rec] = {}  # forgotten jobs' final states
        self._array_tasks: dict[int, str] = {}  # forgotten arrays' folded indices, by array id
        self._gone: set[int] = set()  # ids dependencies named that no job ever had
        self.reservations: dict[str, Reservation] = {}  # advance reservations, by name
        self.diag = Diag(since=clock())
        # (account, user) -> {tres: decayed TRES-minutes}; accounts (user "") sum all under them.
        # Refreshed by every usage charge (priority_mgr); GrpTRESMins reads it.
        self.assoc_usage: dict[tuple[str, str], dict[str, float]] = {}
        # runs ended by a requeue, their usage since the last charge not yet charged (copies
        # made before the requeue clears start time and allocations; priority_mgr drains them)
        self.unbilled: list = []
        self.on_save = None  # (jobs about to be committed) -> outbox rows for their changes
        # the accounting database (sacctmgr): loaded, bootstrapped and QOS published now, so
        # cfg.qos is the database's before any job is validated
        self.accounts = Accounts(cfg, store)
        self._assoc_limits = LimitsCache()
        # SchedulerParameters=sched_policy (sched/policy.py): what its guard and its predictions
        # learn from the jobs that start and end (use_policy; seeded by recover())
        self.policy = None
        self.waits: WaitScale | None = None  # the starvation guard's recent waits
        self.history: History | None = None  # EASY++: each uid's last two run times
        self.sched_epoch = 0.0  # a learned score's time origin: the oldest job's submit time
        self.starved: frozenset = frozenset()  # the last pass's starved jobs (they stay so)
        # the guard's clock per pending job: since when it could run (JobView.waiting_since),
        # and the jobs seen unable to run since this controller started (held, --begin,
        # a dependency): when they can again, their wait starts afresh
        self.waiting_since: dict[int, float] = {}
        self.blocked_before: set[int] = set()
        # EASY++: each job's predicted run time, fixed when first planned, as the replay engine
        # fixes it at submit (a later history does not move a plan the job already has)
        self.predictions: dict[int, float] = {}

    # ---- start-up ------------------------------------------------------------------------------
    def recover(self) -> None:
        """Load unfinished jobs and node admin state; recompute node usage from running jobs."""
        with self.lock:
            for job in self.store.load_jobs(active_only=True):
                self.jobs[job.job_id] = job
                self.active.add(job.job_id)
                if job.state in (JobState.RUNNING, JobState.COMPLETING):
                    self._hold_allocations(job)
            self.next_job_id = max(self.next_job_id, self.store.max_job_id() + 1)
            self.reservations = {r.name: r for r in self.store.load_reservations()}
            for name, row in self.store.load_nodes().items():
                node = self.nodes.get(name)
                if node is not None:
                    node.drain = row["drain"]
                    node.reason, node.reason_time = row["reason"], row["reason_time"]
                    if row["down"]:
                        node.state = NodeState.DOWN
            self._refresh_all_nodes()
            self._seed_policy()

    # ---- scheduling policy (sched_policy) -------------------------------------------------------
    def use_policy(self, policy) -> None:
        """The policy scheduling passes run (sched/policy.Policy): keep what it learns from."""
        self.policy = policy
        guard = policy.guard if policy is not None else None
        self.waits = WaitScale(guard) if guard is not None and guard.factor else None
        self.history = History() if policy is not None and policy.predict else None

    def _seed_policy(self) -> None:
        """Learn from the jobs the database holds (one query), as if they had just run: the
        bound and the predictions survive a restart. Afresh: a standby taking over recovers."""
        if self.policy is not None and self.policy.score is not None:
            self.sched_epoch = self.store.oldest_submit()
        self.use_policy(self.policy)
        if self.waits is None and self.history is None:
            return
        window = self.waits.guard.window if self.waits is not None else 0
        if self.waits is not None and not window:  # the mean over every job: one aggregate
            self.waits.seed(*self.store.wait_totals())
        # the last `window` waits, and enough jobs for most users' last two runs
        limit = max(window, HISTORY_SEED if self.history is not None else 0)
        rows = self.store.started_jobs(limit) if limit else []
        if self.waits is not None and window:
            for _, submit, start, _ in rows[-window:]:
                self.waits.started(start - submit)
        if self.history is not None:
            for uid, _, start, end in sorted((r for r in rows if r[3]), key=lambda r: r[3]):
                self.history.completed(uid, end - start)

    def job_started(self, job: Job) -> None:
        """job_mgr: a job started (the guard's bound follows the waits)."""
        if self.waits is not None:
            since = self.waiting_since.pop(job.job_id, None) or job.submit_time
            self.waits.started(max(job.start_time - since, 0.0))

    def _guard_clock(self, pending: tuple, deps: dict, now: float) -> tuple:
        """Each pending job that can run now with since when it could (waiting_since); the
        starvation guard counts waits from there, so a job held, behind a dependency or
        before its --begin time neither starves early nor counts that time in the mean."""
        since: dict[int, float] = {}
        out = []
        for v in pending:
            if v.begin_time > now or v.job_id in deps:
                self.blocked_before.add(v.job_id)
                out.append(v)
                continue
            t = self.waiting_since.get(v.job_id)
            if t is None:
                t = now if v.job_id in self.blocked_before else max(v.submit_time, v.begin_time)
            since[v.job_id] = t
            out.append(replace(v, waiting_since=t) if v.waiting_since != t else v)
        # a job that could run and no longer can (held) starts afresh when it can again
        self.blocked_before.update(j for j in self.waiting_since if j not in since and j in self.active)
        self.blocked_before.intersection_update(self.active)
        self.waiting_since = since
        return tuple(out)

    def job_completed(self, job: Job) -> None:
        """job_mgr: a job that ran has ended (its run time predicts its user's next ones)."""
        self.predictions.pop(job.job_id, None)
        if self.history is not None and job.start_time > 0 and job.end_time >= job.start_time:
            self.history.completed(job.spec.uid, job.end_time - job.start_time)

    def _predicted(self, view: JobView) -> JobView:
        """A pending job with its EASY++ planned minutes, when its user's history is shorter
        than its time limit."""
        if view.time_limit <= 0:
            return view  # nothing would kill it at a prediction that fell short: plan it whole
        limit = view.time_limit * 60
        run = self._prediction(view.job_id, limit)
        if run >= limit:
            return view
        minutes = run / 60
        return replace(view, planned_minutes=minutes,
                       wider=tuple(replace(w, planned_minutes=minutes) for w in view.wider))

    def _planned_end(self, j: Job, now: float) -> float:
        """A running job's EASY++ planned end (0: its time limit's end): start + prediction,
        the next step of policy.LADDER once it has outlived that."""
        if self.history is None or j.job_id in self.completing or j.preempt_time:
            return 0.0
        if j.time_limit <= 0:
            return 0.0  # no limit: planned as before, never ending
        limit = j.time_limit * 60
        return planned_end(j.start_time, limit, self._prediction(j.job_id, limit), now)

    def _prediction(self, job_id: int, limit: float) -> float:
        run = self.predictions.get(job_id)
        if run is None:
            run = self.predictions[job_id] = self.history.predict(self.jobs[job_id].spec.uid, limit)
        return min(run, limit)  # a limit lowered since (scontrol update) caps it

    def assoc_tree(self) -> AssocTree:
        """The account tree with RawShares and users (fair share reads it); cached until a
        sacctmgr change."""
        return self.accounts.tree()

    def new_epoch(self, node: str) -> str:
        """A name for this registration of node, unique across controller restarts."""
        self._registrations += 1
        self.epochs[node] = f"{self.instance}.{self._registrations}"
        return self.epochs[node]

    # ---- persistence --------------------------------------------------------------------------
    def save(self, jobs: list[Job]) -> None:
        """Commit jobs' current form; callers hold the lock and act only after this returns."""
        # the notifications these changes make, committed with them (controller/notify.py)
        self.store.save_jobs(jobs, self.on_save(jobs) if self.on_save and jobs else ())
        for job in jobs:
            self.touch(job)

    def touch(self, job: Job) -> None:
        self.touch_listing(job)
        self._views.pop(job.job_id, None)
        if job.state.is_final and job.job_id not in self.completing:
            self.active.discard(job.job_id)
        else:
            self.active.add(job.job_id)

    def touch_listing(self, job: Job) -> None:
        """Only what listings show changed (its Reason, its expected start): the scheduler's
        view of the job stays valid (a pass may set the Reason of a hundred jobs, and each
        rebuilt view costs the next pass)."""
        self.versions[job.job_id] = self.versions.get(job.job_id, 0) + 1

    def active_jobs(self) -> list[Job]:
        return [self.jobs[i] for i in self.active if i in self.jobs]

    # ---- node usage ---------------------------------------------------------------------------
    def _hold_allocations(self, job: Job) -> None:
        for a in job.allocations:
            self.ports.setdefault(a.node, set()).add(job.master_port)
            node = self.nodes.get(a.node)
            if node is not None:
                node.alloc_cpus += a.cpus
                node.alloc_mem += a.mem
                node.alloc_gpus = sorted(set(node.alloc_gpus) | set(a.gpus))
                sharing.hold(self.share_use.setdefault(a.node, {}), a)
                node.alloc_shares = _share_list(self.share_use[a.node])

    def hold_allocations(self, job: Job) -> None:
        self._hold_allocations(job)
        for a in job.allocations:
            self.refresh_node(a.node)

    def release_allocations(self, job: Job) -> None:
        for a in job.allocations:
            self.ports.get(a.node, set()).discard(job.master_port)
            node = self.nodes.get(a.node)
            if node is None:
                continue
            node.alloc_cpus = max(node.alloc_cpus - a.cpus, 0)
            node.alloc_mem = max(node.alloc_mem - a.mem, 0)
            node.alloc_gpus = [g for g in node.alloc_gpus if g not in a.gpus]
            use = self.share_use.setdefault(a.node, {})
            sharing.release(use, a)  # a GPU other jobs still have shares of stays allocated
            node.alloc_gpus = sorted(set(node.alloc_gpus) | set(use))
            node.alloc_shares = _share_list(use)
            self.refresh_node(a.node)
        self.completing.discard(job.job_id)

    def refresh_node(self, name: str) -> None:
        """Derive a node's base state from usage and liveness."""
        node = self.nodes[name]
        if node.state == NodeState.DOWN or (node.state == NodeState.UNKNOWN and name not in self.registered):
            return
        if node.alloc_cpus == 0 and not node.alloc_gpus:
            node.state = NodeState.IDLE
        elif node.alloc_cpus >= node.config.cpus:
            node.state = NodeState.ALLOCATED
        else:
            node.state = NodeState.MIXED

    def _refresh_all_nodes(self) -> None:
        for name in self.nodes:
            self.refresh_node(name)

    def node_available(self, node: Node) -> bool:
        return (node.name in self.registered and node.responding and not node.drain
                and node.state not in (NodeState.DOWN, NodeState.UNKNOWN))

    # ---- scheduler snapshot -------------------------------------------------------------------
    def job_view(self, job: Job) -> JobView:
        view = self._views.get(job.job_id)
        if view is None:
            spec = job.spec
            n = spec.num_nodes
            view = JobView(
                job_id=job.job_id, priority=job.priority, submit_time=job.submit_time,
                partition=job.partition, num_nodes=n,
                cpus_per_node=tuple(spec.cpus_on_node(i) for i in range(n)),
                mem_per_node=tuple(spec.mem_on_node(i, self.cfg.def_mem_per_cpu,
                                                    self.cfg.def_mem_per_node) for i in range(n)),
                gpus_per_node=spec.gpus_needed_per_node(), gpu_type=spec.gpu_type_wanted(),
                exclusive=spec.exclusive, begin_time=max(spec.begin_time, job.eligible_time),
                held=job.held, held_by_admin=job.held_by_admin,
                features=parse_constraint(spec.constraint),
                time_limit=job.time_limit, array_job_id=job.array_job_id,
                array_limit=job.array_limit, user=spec.user, account=spec.account,
                qos=spec.qos or "normal", reservation=spec.reservation,
                **switches.request(spec, self.cfg.max_switch_wait))  # --switches
            share_name, shares = sharing.request(spec.gres)
            view = replace(view, share_name=share_name, shares_per_node=shares)
            view = refine(view, spec, self.cfg.def_mem_per_cpu, self.cfg.def_mem_per_node)
            self._views[job.job_id] = view
        return view

    def node_view(self, node: Node) -> NodeView:
        gpus = self.node_gpus(node)
        foreign = busy_elsewhere(node, self.cfg.foreign_gpu_action)
        allocated = set(node.alloc_gpus) | foreign
        return NodeView(
            name=node.name, cpus=node.config.cpus, mem=node.config.real_memory,
            # a GPU no job may get while others' processes use it: not part of what the node has
            gpus=tuple((g.index, g.type) for g in gpus if g.index not in foreign),
            free_cpus=node.config.cpus - node.alloc_cpus,
            free_mem=node.config.real_memory - node.alloc_mem,
            free_gpus=tuple(g.index for g in gpus if g.index not in allocated),
            switches=self.cfg.topology.path(node.name) if self.cfg.topology else (),  # topology/tree
            available=self.node_available(node), features=tuple(node.config.features),
            weight=node.config.weight, idle=node.alloc_cpus == 0 and not node.alloc_gpus,
            shares=self.node_shares(node),
            gpu_affinity=gpu_topology.affinity(gpus),  # NVLink/PCIe/NUMA: which GPUs go together
            gpu_cores=gpu_topology.bound_cores(gpus))  # gres.conf Cores= (--gres-flags)

    def node_shares(self, node: Node) -> tuple[tuple[int, str, int, int], ...]:
        """gres/shard and gres/mps on each of the node's GPUs, and how many are in use."""
        return sharing.view_entries(node.config.gres, [g.index for g in self.node_gpus(node)],
                                    self.share_use.get(node.name, {}))

    def node_gpus(self, node: Node) -> list[GpuDevice]:
        """The GPUs the agent reported, else those configuration declares."""
        if node.gpus:
            return node.gpus
        out = []
        for g in node.config.gres:
            if g.name == "gpu":
                out += [GpuDevice(index=len(out) + i, type=g.type) for i in range(g.count)]
        return out

    def snapshot(self) -> Snapshot:
        # Held jobs are left out: nothing a pass decides can change for them (their Reason was
        # set when they were held), and a queue full of held jobs must not slow every pass.
        active = self.active_jobs()
        pending = tuple(self.job_view(j) for j in active
                        if j.state == JobState.PENDING and not j.held
                        and j.job_id not in self.completing)
        if self.history is not None:
            if len(self.predictions) > len(self.active) + PREDICTIONS_SLACK:
                # jobs cancelled while pending never complete: forget theirs now and then
                self.predictions = {k: v for k, v in self.predictions.items() if k in self.active}
            pending = tuple(self._predicted(v) for v in pending)
        deps = self.unmet_dependencies()
        if self.waits is not None:
            pending = self._guard_clock(pending, deps, self.clock())
        if self.policy is not None and self.policy.score is not None and not self.sched_epoch and pending:
            self.sched_epoch = min(v.submit_time for v in pending)
        nodes = tuple(self.node_view(n) for n in self.nodes.values())
        parts = {p.name: PartitionView(p.name, tuple(p.nodes), p.state in ("UP", "DRAIN"),
                                       p.priority_tier, p.preempt_mode, p.grace_time, p.max_time)
                 for p in self.cfg.partitions.values()}
        now = self.clock()
        running = tuple(self.running_view(j, now) for j in active
                        if j.allocations and (j.state == JobState.RUNNING or j.job_id in self.completing))
        array_running: dict[int, int] = {}
        for j in active:
            if j.array_job_id and j.state == JobState.RUNNING:
                array_running[j.array_job_id] = array_running.get(j.array_job_id, 0) + 1
        reservations = tuple(r for r in self.reservations.values() if r.end_time > now)
        return Snapshot(jobs=pending, nodes=nodes, partitions=parts, running=running,
                        project_starts=now - self.projected_at >= self.cfg.bf_interval,
                        sched_epoch=self.sched_epoch,
                        starve_bound=self.waits.bound() if self.waits is not None else math.inf,
                        starved=self.starved,
                        dependencies=deps, array_running=array_running,
                        qos=self.cfg.qos, reservations=reservations,
                        limits=self._assoc_limits.view(self.accounts, self.cfg.accounting_storage_enforce,
                                                       self.assoc_usage))

    def running_view(self, j: Job, now: float) -> RunningView:
        """When it will have let go at the latest: now if it is already ending, its grace time
        plus KillWait if it is being preempted, else its time limit."""
        if j.job_id in self.completing:
            end = now
        elif j.preempt_time:
            end = j.preempt_time + self.cfg.kill_wait
        else:
            end = j.start_time + j.time_limit * 60 if j.time_limit > 0 else math.inf
        return RunningView(j.job_id, tuple(j.allocations), end, start=j.start_time,
                           partition=j.partition, user=j.spec.user, qos=j.spec.qos or "normal",
                           priority=j.priority, requeue=j.spec.requeue,
                           # a requeued victim still completing is on its way out too: its
                           # preemptor must not take a second victim while it goes
                           preempting=bool(j.preempt_time) or j.job_id in self.completing,
                           exclusive_user=j.spec.exclusive_user, account=j.spec.account,
                           planned_end=self._planned_end(j, now))

    def unmet_dependencies(self) -> dict[int, str]:
        """Pending jobs whose --dependency does not hold yet ("wait") or never will ("never")."""
        waiting, unmet = [], {}
        for j in self.active_jobs():
            if j.spec.dependency and j.state == JobState.PENDING:  # the rare test first
                try:  # refused at submit since #13; a record from before may still hold one
                    dependency.parse(j.spec.dependency)
                    waiting.append(j)
                except InvalidRequest:
                    unmet[j.job_id] = dependency.NEVER
        if not waiting:
            return unmet
        wanted = set().union(*(dependency.referenced(j.spec.dependency) for j in waiting))
        recs = self._dependency_records(wanted)
        now = self.clock()
        for job in waiting:
            verdict = dependency.evaluate(job.spec.dependency, recs, self._singleton_busy(job), now,
                                          job.array_task_id if job.array_job_id else None)
            if verdict != dependency.OK:
                unmet[job.job_id] = verdict
        return unmet

    def _dependency_records(self, wanted: set[int]) -> dict[int, dependency.Rec]:
        """The jobs dependencies name, with every task of a named array (its tasks' ids run on
        from the array's). Jobs no longer in memory are looked up in the store once, then
        remembered (final states do not change); ids found nowhere are remembered as gone."""
        ids = set(wanted)
        folded = {j.array_job_id: j.array_tasks for j in self.jobs.values()
                  if j.array_job_id in wanted}
        for array_id in wanted:
            tasks = folded.get(array_id) or self._stored_array_tasks(array_id)
            if tasks:
                ids.update(range(array_id, array_id + len(arrays.parse(tasks)[0])))
        missing = [i for i in ids if i not in self.jobs and i not in self._final_states
                   and i not in self._gone]
        if missing:
            for job in self.store.load_finished(missing):
                self._final_states[job.job_id] = _dependency_rec(job)
            self._gone.update(i for i in missing if i not in self._final_states)
        recs = {i: self._final_states[i] for i in ids if i in self._final_states}
        recs.update({i: _dependency_rec(self.jobs[i]) for i in ids if i in self.jobs})
        return recs

    def _stored_array_tasks(self, array_id: int) -> str:
        """A forgotten array's folded indices, from its first task's final record."""
        rec = self._final_states.get(array_id)
        if rec is None and array_id not in self._gone and array_id not in self.jobs:
            found = self.store.load_finished([array_id])
            for job in found:
                self._final_states[job.job_id] = _dependency_rec(job)
                self._array_tasks[job.job_id] = job.array_tasks if job.array_job_id == job.job_id else ""
            if not found:
                self._gone.add(array_id)
        return self._array_tasks.get(array_id, "")

    def _singleton_busy(self, job: Job) -> bool:
        """singleton: another job of this name and user runs, or an earlier one waits for it."""
        if "singleton" not in job.spec.dependency:
            return False
        return any(o.spec.name == job.spec.name and o.spec.uid == job.spec.uid and o.job_id != job.job_id
                   and (o.state == JobState.RUNNING or (o.state == JobState.PENDING and o.job_id < job.job_id))
                   for o in self.jobs.values())

    def fits_now(self, allocation: NodeAllocation, exclusive: bool) -> bool:
        """Re-check one planned allocation against live state (the plan may be stale)."""
        node = self.nodes.get(allocation.node)
        if node is None or not self.node_available(node):
            return False
        if exclusive and (node.alloc_cpus or node.alloc_gpus):
            return False
        gpus = {g.index for g in self.node_gpus(node)}
        free = gpus - set(node.alloc_gpus) - busy_elsewhere(node, self.cfg.foreign_gpu_action)
        return (node.config.cpus - node.alloc_cpus >= allocation.cpus
                and node.config.real_memory - node.alloc_mem >= allocation.mem
                and set(sharing.whole_gpus(allocation)) <= free
                and sharing.still_fits(self.node_shares(node), allocation, free))

    # ---- housekeeping -------------------------------------------------------------------------
    def purge_old(self, now: float) -> None:
        """Forget finished jobs older than MinJobAge (they stay in the database for sacct)."""
        old = [j for j, job in self.jobs.items() if job.state.is_final
               and j not in self.completing and now - job.end_time > MIN_JOB_AGE]
        for j in old:
            del self.jobs[j]
            self.active.discard(j)
            self.versions.pop(j, None)
            self._views.pop(j, None)


def _share_list(use: dict[int, tuple[str, int]]) -> list[GpuShareUse]:
    """A node's share use as the Node message carries it (sinfo -O GresUsed reads it)."""
    return [GpuShareUse(gpu, name, count) for gpu, (name, count) in sorted(use.items())]
