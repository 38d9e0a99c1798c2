"""The Python client API: submit, list, cancel and inspect jobs; what every CLI uses.

    from pyslurm_lite.client import Client
    c = Client()                          # finds slurm.conf like the CLIs do
    jid = c.submit(JobSpec(script="#!/bin/sh\\necho hi\\n", work_dir="/tmp"))
    c.job(jid).state                      # 'PENDING' | 'RUNNING' | 'COMPLETED' ...
    c.cancel([jid])

grpc is imported on first use, so a CLI that fails early (bad option) never pays for it.
Listing methods return protobuf messages whose fields have the dataclasses' names (fast for
thousands of jobs); `raw=False` converts them to model dataclasses.
"""

from __future__ import annotations

import os
import pwd

from . import config as config_mod
from .errors import NotFound
from .model import Job, JobSpec, Node, Partition

DEFAULT_TIMEOUT = 30.0  # seconds for one call to the controller


class Client:
    def __init__(self, cfg: config_mod.Config | None = None, conf_path: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT):
        self.cfg = cfg or config_mod.load(conf_path)
        self.timeout = timeout
        self._stub = None

    # ---- plumbing -----------------------------------------------------------------------------
    def _call(self, method: str, request):
        import grpc

        from .rpcutil import client_channel, identity_metadata, raise_domain
        if self._stub is None:
            from ._proto import controller_pb2_grpc
            self._stub = controller_pb2_grpc.ControllerStub(client_channel(self.cfg.controller_target))
            self._md = identity_metadata()
        try:
            return getattr(self._stub, method)(request, timeout=self.timeout, metadata=self._md)
        except grpc.RpcError as e:
            raise_domain(e, f"Unable to contact slurm controller (connect failure) at "
                            f"{self.cfg.controller_target}")

    @staticmethod
    def _pb():
        from ._proto import controller_pb2
        return controller_pb2

    # ---- jobs ---------------------------------------------------------------------------------
    def submit(self, spec: JobSpec) -> int:
        from . import wire
        from ._proto import types_pb2
        if not spec.user:
            spec.uid, spec.gid = os.getuid(), os.getgid()
            spec.user = _user_name(spec.uid)
        req = self._pb().SubmitJobRequest(spec=wire.to_msg(spec, types_pb2.JobSpec))
        return self._call("SubmitJob", req).job_id

    def submit_many(self, specs: list[JobSpec], batch: int = 500) -> list[int]:
        """Submit many specs, `batch` per call; each call is committed as a whole before it
        returns. Job ids come back in the specs' order."""
        from . import wire
        ids: list[int] = []
        for i in range(0, len(specs), batch):
            req = self._pb().SubmitJobsRequest()
            for spec in specs[i:i + batch]:
                if not spec.user:
                    spec.uid, spec.gid, spec.user = os.getuid(), os.getgid(), _user_name(os.getuid())
                wire.fill_msg(req.specs.add(), spec)
            ids += self._call("SubmitJobs", req).job_ids
        return ids

    submit_async = submit_many  # the name the first benchmarks used

    def jobs(self, job_ids=(), states=(), users=(), partitions=(), names=(), nodes=(),
             include_finished: bool = False, raw: bool = True):
        pb = self._pb()
        flt = pb.JobFilter(job_ids=list(job_ids), states=list(states), users=list(users),
                           partitions=list(partitions), names=list(names), nodes=list(nodes),
                           include_finished=include_finished)
        reply = self._call("GetJobs", pb.GetJobsRequest(filter=flt))
        if raw:
            return list(reply.jobs), reply.now
        from . import wire
        return [wire.from_msg(j, Job) for j in reply.jobs], reply.now

    def job(self, job_id: int) -> Job:
        jobs, _ = self.jobs(job_ids=[job_id], raw=False)
        if not jobs:
            raise NotFound("Invalid job id specified")
        return jobs[0]

    def cancel(self, job_ids=(), signal: int = 0, batch_only: bool = False, full: bool = False,
               states=(), users=(), partitions=(), names=(), nodes=()):
        pb = self._pb()
        flt = pb.JobFilter(job_ids=list(job_ids), states=list(states), users=list(users),
                           partitions=list(partitions), names=list(names), nodes=list(nodes))
        reply = self._call("CancelJobs", pb.CancelJobsRequest(filter=flt, signal=signal,
                                                              batch_only=batch_only, full=full))
        return list(reply.job_ids), [(e.job_id, e.message) for e in reply.errors]

    def update_jobs(self, job_ids, action: str):
        reply = self._call("UpdateJobs", self._pb().UpdateJobsRequest(job_ids=list(job_ids), action=action))
        return list(reply.job_ids), [(e.job_id, e.message) for e in reply.errors]

    # ---- nodes and partitions -----------------------------------------------------------------
    def nodes(self, names=(), raw: bool = True):
        reply = self._call("GetNodes", self._pb().GetNodesRequest(names=list(names)))
        if raw:
            return list(reply.nodes), reply.now
        from . import wire
        return [wire.from_msg(n, Node) for n in reply.nodes], reply.now

    def partitions(self, raw: bool = True):
        reply = self._call("GetPartitions", self._pb().GetPartitionsRequest())
        if raw:
            return list(reply.partitions), list(reply.nodes)
        from . import wire
        return ([wire.from_msg(p, Partition) for p in reply.partitions],
                [wire.from_msg(n, Node) for n in reply.nodes])

    def update_nodes(self, names, state: str, reason: str = "") -> None:
        self._call("UpdateNodes", self._pb().UpdateNodesRequest(names=list(names), state=state, reason=reason))

    def ping(self):
        return self._call("Ping", self._pb().PingRequest())


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)
