"""The Agent gRPC servicer: thin, over the StepManager."""

from __future__ import annotations

from ..rpc import wire
from .._proto import agent_pb2 as pb, agent_pb2_grpc, types_pb2
from ..model import Job
from ..rpc.grpcutil import rpc_method
from .stepmgr import StepManager
from .taskmgr import TaskManager


class AgentServicer(agent_pb2_grpc.AgentServicer):
    def __init__(self, node: str, steps: StepManager, tasks: TaskManager, admit):
        """`admit(epoch)`: a context manager held while launches are accepted and started;
        raises StaleState unless epoch is this agent's current registration (daemon.py)."""
        self.node, self.steps, self.tasks, self.admit = node, steps, tasks, admit

    def LaunchStep(self, request_iterator, context):
        # a stream: errors travel in-band as StepOutput.error (see taskmgr)
        return self.tasks.serve(request_iterator, context)

    @rpc_method
    def Ping(self, request, context):
        running = [types_pb2.RunningJob(job_id=j, restart_count=r)
                   for j, r in self.steps.running_jobs().items()]
        return pb.AgentPingReply(node=self.node, running=running)

    @rpc_method
    def LaunchJobs(self, request, context):
        addrs = dict(a.split("=", 1) for a in request.node_addrs if "=" in a)
        creds = list(request.credentials)  # one per job, in order; a job without one is refused
        accepted = []
        with self.admit(request.epoch):
            for i, msg in enumerate(request.jobs):
                job = wire.from_msg(msg, Job)
                self.steps.launch(job, addrs, creds[i] if i < len(creds) else "")
                accepted.append(job.job_id)
        return pb.LaunchJobsReply(accepted=accepted)

    @rpc_method
    def SignalJobs(self, request, context):
        ids = list(request.job_ids)
        if request.terminate:
            done = self.steps.terminate(ids, request.reason, list(request.restart_counts))
        else:
            done = self.steps.signal(ids, request.signal, request.batch_only, request.steps_only)
        return pb.SignalJobsReply(job_ids=done)
