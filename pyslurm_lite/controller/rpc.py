"""The Controller gRPC servicer: convert the message, call one domain function, convert back.

Domain errors become status codes in rpcutil.rpc_method, never here.
"""

from __future__ import annotations

import struct
import threading

import grpc

from ..rpc import wire
from .._proto import controller_pb2 as pb, controller_pb2_grpc, types_pb2
from ..model import ForeignGpu, GpuDevice, GpuFault, JobSpec, Reservation, UsageSample
from ..errors import PermissionDenied, Unauthenticated
from ..rpc import authn, jwt
from ..rpc.grpcutil import rpc_method
from . import accounting, token_mgr
from .auth import allowed, require
from .dispatch import Dispatcher
from .job_mgr import Caller, Ending, JobFilter, JobManager
from .node_mgr import NodeManager
from .resv_mgr import ReservationManager
from .state import ClusterState
from .step_mgr import StepManager, StepResources


def _filter(msg) -> JobFilter:
    return JobFilter(job_ids=list(msg.job_ids), states=list(msg.states), users=list(msg.users),
                     partitions=list(msg.partitions), names=list(msg.names),
                     include_finished=msg.include_finished, nodes=list(msg.nodes),
                     array_tasks=list(msg.array_tasks))


def _job_errors(errors) -> list:
    """(job id, or a task name such as "12_3", message) -> JobError messages."""
    return [pb.JobError(job_id=j, message=m) if isinstance(j, int)
            else pb.JobError(job_id=int(str(j).split("_")[0]), id_text=str(j), message=m)
            for j, m in errors]


_RUN_JOB, _RUN_STATE, _REPLY_RUNS, _REPLY_JOBS = (
    wire.length_delimited(m.DESCRIPTOR.fields_by_name[f].number) for m, f in (
        (pb.JobRun, "job"), (pb.JobRun, "state"), (pb.GetJobHistoryReply, "runs"),
        (pb.GetJobsReply, "jobs")))


def _history_reply(runs: list, now: float):
    """GetJobHistory's reply put together from the runs' jobs serialized: sacct over 10,000
    jobs takes half the time of building 10,000 JobRun messages in Python."""
    reply = pb.GetJobHistoryReply(now=now)
    reply.MergeFromString(b"".join(
        _REPLY_RUNS(_RUN_JOB(r.job.SerializeToString()) + _RUN_STATE(r.state.encode())) for r in runs))
    return reply


def _history_query(msg) -> accounting.HistoryQuery:
    from ..arrays import parse_task_name
    return accounting.HistoryQuery(
        job_ids=list(msg.job_ids), array_tasks=[parse_task_name(t) for t in msg.array_tasks],
        users=list(msg.users),
        accounts=list(msg.accounts), partitions=list(msg.partitions), names=list(msg.names),
        states=list(msg.states), start=msg.start, end=msg.end, duplicates=msg.duplicates,
        any_eligibility=msg.any_eligibility)


def _node_of(request) -> str:
    """An agent's report names its node: it must be the node whose key signed the call."""
    who = authn.principal()
    if who is None or who.kind != authn.DAEMON or who.daemon != f"node:{request.node}":
        raise PermissionDenied(f"a report for node {request.node} signed by "
                               f"{who.daemon if who else 'nobody'}")
    return request.node


class ControllerServicer(controller_pb2_grpc.ControllerServicer):
    def __init__(self, state: ClusterState, jobs: JobManager, nodes: NodeManager, dispatch: Dispatcher,
                 steps: StepManager, reservations: ReservationManager, priorities=None):
        self.s, self.jobs, self.nodes, self.dispatch, self.steps = state, jobs, nodes, dispatch, steps
        self.reservations = reservations
        self.priorities = priorities  # PriorityManager: sshare's rows
        self.users = jobs.users
        self._msg_cache: dict[int, tuple[int, types_pb2.Job]] = {}
        self._cache_lock = threading.Lock()

    def _job_msg(self, job) -> types_pb2.Job:
        msg = types_pb2.Job()
        msg.ParseFromString(self._job_bytes(job))
        return msg

    def _job_bytes(self, job) -> bytes:
        """A job serialised, cached until the job changes (squeue asks for thousands at once)."""
        version = self.s.versions.get(job.job_id, -1)
        with self._cache_lock:
            hit = self._msg_cache.get(job.job_id)
            if hit is not None and hit[0] == version:
                return hit[1]
        blob = wire.to_msg(job, types_pb2.Job).SerializeToString()
        with self._cache_lock:
            if len(self._msg_cache) > 4 * max(len(self.s.jobs), 1000):
                self._msg_cache.clear()
            self._msg_cache[job.job_id] = (version, blob)
        return blob

    def _caller(self) -> Caller:
        """The authenticated user making the call in flight (authn checked the token)."""
        who = authn.principal()
        if who is None or who.user is None:
            raise Unauthenticated("this method needs a user's token")
        return self.users.caller(who.user.uid, who.user.gid)

    def get_jobs_raw(self, request, context) -> bytes:
        """GetJobs, answered from the cached serialised jobs without building a reply message:
        protobuf's encoding of `repeated Job jobs = 1; double now = 2;` is just the parts in a
        row (field 1 length-delimited per job, field 2 a fixed64)."""
        jobs = self.jobs.find(_filter(request.filter), self._caller())
        out = [b"\x11" + struct.pack("<d", self.s.clock())]
        for job in jobs:
            blob = self._job_bytes(job)
            out.append(b"\x0a" + _varint(len(blob)) + blob)
        return b"".join(out)

    def raw_handlers(self):
        """Generic handlers served before the generated ones (same method name and wire format)."""
        behavior = rpc_method(lambda _self, request, context: self.get_jobs_raw(request, context))
        handler = grpc.unary_unary_rpc_method_handler(
            lambda request, context: behavior(self, request, context),
            request_deserializer=pb.GetJobsRequest.FromString, response_serializer=lambda b: b)
        return grpc.method_handlers_generic_handler("pyslurm_lite.v1.Controller", {"GetJobs": handler})

    index = 0  # which SlurmctldHost= line this controller is (the daemon sets it)

    @rpc_method
    def Ping(self, request, context):
        return pb.PingReply(cluster_name=self.s.cfg.cluster_name, instance=self.s.instance,
                            now=self.s.clock(), index=self.index, active=True)

    @rpc_method
    def Takeover(self, request, context):
        """scontrol takeover asked of the controller in control: nothing to do (as Slurm's)."""
        if not self._caller().operator:
            raise PermissionDenied("Access/permission denied: takeover is for operators")
        return pb.TakeoverReply(message="already in control")

    @rpc_method
    def SubmitJob(self, request, context):
        spec = wire.from_msg(request.spec, JobSpec)
        warnings: list[str] = []
        job_id = self.jobs.submit(spec, self._caller(), warnings)
        return pb.SubmitJobReply(job_id=job_id, warnings=warnings)

    @rpc_method
    def SubmitJobs(self, request, context):
        specs = [wire.from_msg(m, JobSpec) for m in request.specs]
        return pb.SubmitJobsReply(job_ids=self.jobs.submit_many(specs, self._caller()))

    @rpc_method
    def GetJobs(self, request, context):
        jobs = self.jobs.find(_filter(request.filter), self._caller())
        reply = pb.GetJobsReply(now=self.s.clock())
        reply.MergeFromString(b"".join(_REPLY_JOBS(self._job_bytes(j)) for j in jobs))
        return reply

    @rpc_method
    def IssueToken(self, request, context):
        caller, who = self._caller(), authn.principal()
        got = token_mgr.issue(self.s.cfg, caller, who.user.issuer == jwt.ISSUER, request.user_name,
                              request.lifespan, self.s.clock())
        return pb.IssueTokenReply(token=got.token, expires=got.expires, user_name=got.user_name)

    @rpc_method
    def GetJobHistory(self, request, context):
        now = self.s.clock()
        runs = accounting.job_history(self.s.store, _history_query(request), now, self.s.cfg.max_array_size)
        runs = accounting.visible(runs, self._caller(), "jobs" in self.s.cfg.private_data)
        runs = accounting.with_live_reasons(runs, self.s)
        runs = accounting.with_live_usage(runs, self.s)
        return _history_reply(runs, now)

    @rpc_method
    def CancelJobs(self, request, context):
        done, errors, effects = self.jobs.cancel(_filter(request.filter), self._caller(),
                                                 request.signal, request.batch_only, request.full)
        self.dispatch.send(effects)
        return pb.CancelJobsReply(job_ids=done, errors=_job_errors(errors))

    @rpc_method
    def UpdateJobs(self, request, context):
        done, errors, effects = self.jobs.update(list(request.job_ids), request.action, self._caller(),
                                                 list(request.array_tasks), dict(request.changes))
        self.dispatch.send(effects)
        return pb.UpdateJobsReply(job_ids=done, errors=_job_errors(errors))

    def _node_msgs(self, names):
        with self.s.lock:
            nodes = [self.s.nodes[n] for n in (names or self.s.nodes) if n in self.s.nodes]
            return [wire.to_msg(n, types_pb2.Node) for n in nodes]

    @rpc_method
    def GetNodes(self, request, context):
        names = list(request.names)
        missing = [n for n in names if n not in self.s.nodes]
        if missing:
            from ..errors import NotFound
            raise NotFound(f"Node {missing[0]} not found")
        return pb.GetNodesReply(nodes=self._node_msgs(names), now=self.s.clock())

    @rpc_method
    def UpdateNodes(self, request, context):
        require("update_node", self._caller())
        self.dispatch.send(self.nodes.update(list(request.names), request.state, request.reason))
        return pb.UpdateNodesReply()

    @rpc_method
    def GetPartitions(self, request, context):
        parts = [wire.to_msg(p, types_pb2.Partition) for p in self.s.cfg.partitions.values()]
        return pb.GetPartitionsReply(partitions=parts, nodes=self._node_msgs(None))

    @rpc_method
    def Sacctmgr(self, request, context):
        from .assoc_cmds import Request, execute
        req = Request(request.verb, request.entity, list(request.names), dict(request.where),
                      dict(request.set), request.dry_run, self._active_jobs)
        records, lines = execute(self.s.accounts, req, allowed("accounting", self._caller()))
        return pb.SacctmgrReply(records=[pb.AcctRecord(fields=r) for r in records], messages=lines)

    def _active_jobs(self):
        with self.s.lock:
            return self.s.active_jobs()

    @rpc_method
    def GetShares(self, request, context):
        rows = self.priorities.shares(list(request.users))
        return pb.GetSharesReply(rows=[wire.to_msg(r, types_pb2.ShareRow) for r in rows])

    @rpc_method
    def GetDiag(self, request, context):
        d = self.s.diag
        with self.s.lock:
            pending = sum(j.state.value == "PENDING" for j in self.s.jobs.values())
            running = sum(j.state.value == "RUNNING" for j in self.s.jobs.values())
        return pb.GetDiagReply(
            now=self.s.clock(), since=d.since, jobs_submitted=d.jobs_submitted,
            jobs_started=d.jobs_started, jobs_completed=d.jobs_completed,
            jobs_canceled=d.jobs_canceled, jobs_failed=d.jobs_failed, jobs_pending=pending,
            jobs_running=running, cycles=d.cycles, event_cycles=d.event_cycles,
            last_cycle_us=d.last_cycle_us, max_cycle_us=d.max_cycle_us,
            total_cycle_us=d.total_cycle_us, last_queue_length=d.last_queue_length,
            backfilled_jobs=d.backfilled_jobs, preempted_jobs=d.preempted_jobs)

    @rpc_method
    def CreateReservation(self, request, context):
        resv = wire.from_msg(request.reservation, Reservation)
        name = self.reservations.create(resv, request.node_count, request.partition, self._caller())
        return pb.CreateReservationReply(name=name)

    @rpc_method
    def DeleteReservation(self, request, context):
        self.reservations.delete(request.name, self._caller())
        return pb.DeleteReservationReply()

    @rpc_method
    def GetReservations(self, request, context):
        return pb.GetReservationsReply(
            reservations=[wire.to_msg(r, types_pb2.Reservation) for r in self.reservations.list()],
            now=self.s.clock())

    @rpc_method
    def CreateStep(self, request, context):
        step, job, credential = self.steps.create(
            request.job_id, self._caller(), request.name, request.num_nodes, request.num_tasks,
            request.ntasks_per_node, request.cpus_per_task, request.exclusive, request.nodelist,
            request.distribution, list(request.task_nodes),
            resources=wire.from_msg(request, StepResources))
        reply = pb.CreateStepReply(step_id=step.step_id, credential=credential,
                                   job=self._job_msg(job))
        for k, name in enumerate(step.nodes):
            node = self.s.cfg.nodes[name]
            reply.nodes.add(name=name, addr=node.addr, target=f"{node.addr}:{node.port or self.s.cfg.slurmd_port}",
                            task_ids=[t for t, n in enumerate(step.task_nodes) if n == k])
        return reply

    @rpc_method
    def CompleteStep(self, request, context):
        self.steps.complete(request.job_id, request.step_id, request.exit_code, request.exit_signal,
                            self._caller())
        return pb.CompleteStepReply()

    @rpc_method
    def CompleteJob(self, request, context):
        self.dispatch.send(self.steps.complete_allocation(request.job_id, request.exit_code,
                                                          request.exit_signal, self._caller()))
        return pb.CompleteJobReply()

    @rpc_method
    def RegisterNode(self, request, context):
        _node_of(request)
        self.dispatch.send(self.jobs.jobs_ended(_endings(request.events)))
        kill, effects, epoch = self.nodes.register(
            request.node, request.cpus, request.memory,
            [wire.from_msg(g, GpuDevice) for g in request.gpus],
            {r.job_id: r.restart_count for r in request.running}, request.boot_time, request.version)
        self.dispatch.send(effects)
        # Lost runs after the new epoch: a run requeued before it was relaunched under the old
        # one, which the agent refused, and the job sat RUNNING until a heartbeat requeued it again
        # (restart count +2). register() has requeued what is not running; a later run is not hit.
        for ev in request.events:
            if ev.kind == "lost":
                self.dispatch.send(self.nodes.job_lost(ev.job_id, request.node, ev.time))
        return pb.RegisterNodeReply(instance=self.s.instance, kill_job_ids=kill,
                                    heartbeat_interval=self.s.cfg.heartbeat_interval, epoch=epoch)

    @rpc_method
    def NodeHeartbeat(self, request, context):
        _node_of(request)
        if request.health_error:
            self.nodes.health(request.node, request.health_error)
        self.nodes.record_usage(request.node, [wire.from_msg(u, UsageSample) for u in request.usage])
        self.nodes.foreign_gpus(request.node, [wire.from_msg(f, ForeignGpu) for f in request.foreign_gpus])
        self.nodes.gpu_health(request.node, [wire.from_msg(f, GpuFault) for f in request.gpu_faults])
        again, effects = self.nodes.heartbeat(request.node, request.instance,
                                              {r.job_id: r.restart_count for r in request.running},
                                              request.free_memory, request.cpu_load)
        self.dispatch.send(effects)
        return pb.NodeHeartbeatReply(reregister=again)

    @rpc_method
    def ReportJobEvents(self, request, context):
        _node_of(request)
        if request.instance != self.s.instance:
            return pb.ReportJobEventsReply(reregister=True)
        # ended steps' final usage first: the ending below commits the job with it
        self.nodes.record_usage(request.node, [wire.from_msg(u, UsageSample) for u in request.usage],
                                final=True)
        self.dispatch.send(self.jobs.jobs_ended(_endings(request.events)))
        return pb.ReportJobEventsReply(reregister=False)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _endings(events) -> list[Ending]:
    return [Ending(e.job_id, e.restart_count, e.exit_code, e.exit_signal, e.oom,
                   e.message if e.kind == "launch_failed" else "")
            for e in events if e.kind in ("ended", "launch_failed")]
