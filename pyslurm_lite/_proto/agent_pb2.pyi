from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AgentPingRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AgentPingReply(_message.Message):
    __slots__ = ("node", "running")
    NODE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    node: str
    running: _containers.RepeatedCompositeFieldContainer[_types_pb2.RunningJob]
    def __init__(self, node: _Optional[str] = ..., running: _Optional[_Iterable[_Union[_types_pb2.RunningJob, _Mapping]]] = ...) -> None: ...

class LaunchJobsRequest(_message.Message):
    __slots__ = ("jobs", "instance", "node_addrs")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    NODE_ADDRS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_types_pb2.Job]
    instance: str
    node_addrs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_types_pb2.Job, _Mapping]]] = ..., instance: _Optional[str] = ..., node_addrs: _Optional[_Iterable[str]] = ...) -> None: ...

class LaunchJobsReply(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, accepted: _Optional[_Iterable[int]] = ...) -> None: ...

class SignalJobsRequest(_message.Message):
    __slots__ = ("job_ids", "signal", "batch_only", "terminate", "reason", "steps_only")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    BATCH_ONLY_FIELD_NUMBER: _ClassVar[int]
    TERMINATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STEPS_ONLY_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    signal: int
    batch_only: bool
    terminate: bool
    reason: str
    steps_only: bool
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., signal: _Optional[int] = ..., batch_only: _Optional[bool] = ..., terminate: _Optional[bool] = ..., reason: _Optional[str] = ..., steps_only: _Optional[bool] = ...) -> None: ...

class SignalJobsReply(_message.Message):
    __slots__ = ("job_ids",)
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ...) -> None: ...
