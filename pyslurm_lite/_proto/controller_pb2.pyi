from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PingRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class PingReply(_message.Message):
    __slots__ = ("cluster_name", "instance", "now", "index", "active")
    CLUSTER_NAME_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    cluster_name: str
    instance: str
    now: float
    index: int
    active: bool
    def __init__(self, cluster_name: _Optional[str] = ..., instance: _Optional[str] = ..., now: _Optional[float] = ..., index: _Optional[int] = ..., active: _Optional[bool] = ...) -> None: ...

class TakeoverRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TakeoverReply(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...

class IssueTokenRequest(_message.Message):
    __slots__ = ("user_name", "lifespan")
    USER_NAME_FIELD_NUMBER: _ClassVar[int]
    LIFESPAN_FIELD_NUMBER: _ClassVar[int]
    user_name: str
    lifespan: int
    def __init__(self, user_name: _Optional[str] = ..., lifespan: _Optional[int] = ...) -> None: ...

class IssueTokenReply(_message.Message):
    __slots__ = ("token", "expires", "user_name")
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_FIELD_NUMBER: _ClassVar[int]
    USER_NAME_FIELD_NUMBER: _ClassVar[int]
    token: str
    expires: float
    user_name: str
    def __init__(self, token: _Optional[str] = ..., expires: _Optional[float] = ..., user_name: _Optional[str] = ...) -> None: ...

class SubmitJobRequest(_message.Message):
    __slots__ = ("spec",)
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: _types_pb2.JobSpec
    def __init__(self, spec: _Optional[_Union[_types_pb2.JobSpec, _Mapping]] = ...) -> None: ...

class SubmitJobReply(_message.Message):
    __slots__ = ("job_id", "warnings")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    warnings: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job_id: _Optional[int] = ..., warnings: _Optional[_Iterable[str]] = ...) -> None: ...

class SubmitJobsRequest(_message.Message):
    __slots__ = ("specs",)
    SPECS_FIELD_NUMBER: _ClassVar[int]
    specs: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobSpec]
    def __init__(self, specs: _Optional[_Iterable[_Union[_types_pb2.JobSpec, _Mapping]]] = ...) -> None: ...

class SubmitJobsReply(_message.Message):
    __slots__ = ("job_ids",)
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class JobFilter(_message.Message):
    __slots__ = ("job_ids", "states", "users", "partitions", "names", "include_finished", "nodes", "array_tasks")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_FINISHED_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASKS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    states: _containers.RepeatedScalarFieldContainer[str]
    users: _containers.RepeatedScalarFieldContainer[str]
    partitions: _containers.RepeatedScalarFieldContainer[str]
    names: _containers.RepeatedScalarFieldContainer[str]
    include_finished: bool
    nodes: _containers.RepeatedScalarFieldContainer[str]
    array_tasks: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., states: _Optional[_Iterable[str]] = ..., users: _Optional[_Iterable[str]] = ..., partitions: _Optional[_Iterable[str]] = ..., names: _Optional[_Iterable[str]] = ..., include_finished: _Optional[bool] = ..., nodes: _Optional[_Iterable[str]] = ..., array_tasks: _Optional[_Iterable[str]] = ...) -> None: ...

class GetJobsRequest(_message.Message):
    __slots__ = ("filter",)
    FILTER_FIELD_NUMBER: _ClassVar[int]
    filter: JobFilter
    def __init__(self, filter: _Optional[_Union[JobFilter, _Mapping]] = ...) -> None: ...

class GetJobsReply(_message.Message):
    __slots__ = ("jobs", "now")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_types_pb2.Job]
    now: float
    def __init__(self, jobs: _Optional[_Iterable[_Union[_types_pb2.Job, _Mapping]]] = ..., now: _Optional[float] = ...) -> None: ...

class CancelJobsRequest(_message.Message):
    __slots__ = ("filter", "signal", "batch_only", "full")
    FILTER_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    BATCH_ONLY_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    filter: JobFilter
    signal: int
    batch_only: bool
    full: bool
    def __init__(self, filter: _Optional[_Union[JobFilter, _Mapping]] = ..., signal: _Optional[int] = ..., batch_only: _Optional[bool] = ..., full: _Optional[bool] = ...) -> None: ...

class JobError(_message.Message):
    __slots__ = ("job_id", "message", "id_text")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ID_TEXT_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    message: str
    id_text: str
    def __init__(self, job_id: _Optional[int] = ..., message: _Optional[str] = ..., id_text: _Optional[str] = ...) -> None: ...

class CancelJobsReply(_message.Message):
    __slots__ = ("job_ids", "errors")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    errors: _containers.RepeatedCompositeFieldContainer[JobError]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., errors: _Optional[_Iterable[_Union[JobError, _Mapping]]] = ...) -> None: ...

class UpdateJobsRequest(_message.Message):
    __slots__ = ("job_ids", "action", "array_tasks", "changes")
    class ChangesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASKS_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    action: str
    array_tasks: _containers.RepeatedScalarFieldContainer[str]
    changes: _containers.ScalarMap[str, str]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., action: _Optional[str] = ..., array_tasks: _Optional[_Iterable[str]] = ..., changes: _Optional[_Mapping[str, str]] = ...) -> None: ...

class UpdateJobsReply(_message.Message):
    __slots__ = ("job_ids", "errors")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    errors: _containers.RepeatedCompositeFieldContainer[JobError]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., errors: _Optional[_Iterable[_Union[JobError, _Mapping]]] = ...) -> None: ...

class GetNodesRequest(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class GetNodesReply(_message.Message):
    __slots__ = ("nodes", "now")
    NODES_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[_types_pb2.Node]
    now: float
    def __init__(self, nodes: _Optional[_Iterable[_Union[_types_pb2.Node, _Mapping]]] = ..., now: _Optional[float] = ...) -> None: ...

class UpdateNodesRequest(_message.Message):
    __slots__ = ("names", "state", "reason")
    NAMES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    state: str
    reason: str
    def __init__(self, names: _Optional[_Iterable[str]] = ..., state: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class UpdateNodesReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPartitionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetPartitionsReply(_message.Message):
    __slots__ = ("partitions", "nodes")
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[_types_pb2.Partition]
    nodes: _containers.RepeatedCompositeFieldContainer[_types_pb2.Node]
    def __init__(self, partitions: _Optional[_Iterable[_Union[_types_pb2.Partition, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[_types_pb2.Node, _Mapping]]] = ...) -> None: ...

class RegisterNodeRequest(_message.Message):
    __slots__ = ("node", "cpus", "memory", "gpus", "running", "events", "boot_time", "version")
    NODE_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    BOOT_TIME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    node: str
    cpus: int
    memory: int
    gpus: _containers.RepeatedCompositeFieldContainer[_types_pb2.GpuDevice]
    running: _containers.RepeatedCompositeFieldContainer[_types_pb2.RunningJob]
    events: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobEvent]
    boot_time: float
    version: str
    def __init__(self, node: _Optional[str] = ..., cpus: _Optional[int] = ..., memory: _Optional[int] = ..., gpus: _Optional[_Iterable[_Union[_types_pb2.GpuDevice, _Mapping]]] = ..., running: _Optional[_Iterable[_Union[_types_pb2.RunningJob, _Mapping]]] = ..., events: _Optional[_Iterable[_Union[_types_pb2.JobEvent, _Mapping]]] = ..., boot_time: _Optional[float] = ..., version: _Optional[str] = ...) -> None: ...

class RegisterNodeReply(_message.Message):
    __slots__ = ("instance", "kill_job_ids", "heartbeat_interval", "epoch")
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    KILL_JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    instance: str
    kill_job_ids: _containers.RepeatedScalarFieldContainer[int]
    heartbeat_interval: float
    epoch: str
    def __init__(self, instance: _Optional[str] = ..., kill_job_ids: _Optional[_Iterable[int]] = ..., heartbeat_interval: _Optional[float] = ..., epoch: _Optional[str] = ...) -> None: ...

class NodeHeartbeatRequest(_message.Message):
    __slots__ = ("node", "instance", "running", "free_memory", "cpu_load", "health_error", "usage", "foreign_gpus", "gpu_faults")
    NODE_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    RUNNING_FIELD_NUMBER: _ClassVar[int]
    FREE_MEMORY_FIELD_NUMBER: _ClassVar[int]
    CPU_LOAD_FIELD_NUMBER: _ClassVar[int]
    HEALTH_ERROR_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    FOREIGN_GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_FAULTS_FIELD_NUMBER: _ClassVar[int]
    node: str
    instance: str
    running: _containers.RepeatedCompositeFieldContainer[_types_pb2.RunningJob]
    free_memory: int
    cpu_load: float
    health_error: str
    usage: _containers.RepeatedCompositeFieldContainer[_types_pb2.UsageSample]
    foreign_gpus: _containers.RepeatedCompositeFieldContainer[_types_pb2.ForeignGpu]
    gpu_faults: _containers.RepeatedCompositeFieldContainer[_types_pb2.GpuFault]
    def __init__(self, node: _Optional[str] = ..., instance: _Optional[str] = ..., running: _Optional[_Iterable[_Union[_types_pb2.RunningJob, _Mapping]]] = ..., free_memory: _Optional[int] = ..., cpu_load: _Optional[float] = ..., health_error: _Optional[str] = ..., usage: _Optional[_Iterable[_Union[_types_pb2.UsageSample, _Mapping]]] = ..., foreign_gpus: _Optional[_Iterable[_Union[_types_pb2.ForeignGpu, _Mapping]]] = ..., gpu_faults: _Optional[_Iterable[_Union[_types_pb2.GpuFault, _Mapping]]] = ...) -> None: ...

class NodeHeartbeatReply(_message.Message):
    __slots__ = ("reregister",)
    REREGISTER_FIELD_NUMBER: _ClassVar[int]
    reregister: bool
    def __init__(self, reregister: _Optional[bool] = ...) -> None: ...

class ReportJobEventsRequest(_message.Message):
    __slots__ = ("node", "instance", "events", "usage")
    NODE_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    node: str
    instance: str
    events: _containers.RepeatedCompositeFieldContainer[_types_pb2.JobEvent]
    usage: _containers.RepeatedCompositeFieldContainer[_types_pb2.UsageSample]
    def __init__(self, node: _Optional[str] = ..., instance: _Optional[str] = ..., events: _Optional[_Iterable[_Union[_types_pb2.JobEvent, _Mapping]]] = ..., usage: _Optional[_Iterable[_Union[_types_pb2.UsageSample, _Mapping]]] = ...) -> None: ...

class ReportJobEventsReply(_message.Message):
    __slots__ = ("reregister",)
    REREGISTER_FIELD_NUMBER: _ClassVar[int]
    reregister: bool
    def __init__(self, reregister: _Optional[bool] = ...) -> None: ...

class CreateStepRequest(_message.Message):
    __slots__ = ("job_id", "name", "num_nodes", "num_tasks", "ntasks_per_node", "cpus_per_task", "exclusive", "overlap", "nodelist", "distribution", "task_nodes", "mem_per_node", "mem_per_cpu", "gpus", "gpus_per_node", "gpus_per_task", "gpus_none", "overcommit")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NUM_NODES_FIELD_NUMBER: _ClassVar[int]
    NUM_TASKS_FIELD_NUMBER: _ClassVar[int]
    NTASKS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    CPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    TASK_NODES_FIELD_NUMBER: _ClassVar[int]
    MEM_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    MEM_PER_CPU_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    GPUS_NONE_FIELD_NUMBER: _ClassVar[int]
    OVERCOMMIT_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    name: str
    num_nodes: int
    num_tasks: int
    ntasks_per_node: int
    cpus_per_task: int
    exclusive: bool
    overlap: bool
    nodelist: str
    distribution: str
    task_nodes: _containers.RepeatedScalarFieldContainer[str]
    mem_per_node: int
    mem_per_cpu: int
    gpus: int
    gpus_per_node: int
    gpus_per_task: int
    gpus_none: bool
    overcommit: bool
    def __init__(self, job_id: _Optional[int] = ..., name: _Optional[str] = ..., num_nodes: _Optional[int] = ..., num_tasks: _Optional[int] = ..., ntasks_per_node: _Optional[int] = ..., cpus_per_task: _Optional[int] = ..., exclusive: _Optional[bool] = ..., overlap: _Optional[bool] = ..., nodelist: _Optional[str] = ..., distribution: _Optional[str] = ..., task_nodes: _Optional[_Iterable[str]] = ..., mem_per_node: _Optional[int] = ..., mem_per_cpu: _Optional[int] = ..., gpus: _Optional[int] = ..., gpus_per_node: _Optional[int] = ..., gpus_per_task: _Optional[int] = ..., gpus_none: _Optional[bool] = ..., overcommit: _Optional[bool] = ...) -> None: ...

class StepNode(_message.Message):
    __slots__ = ("name", "target", "addr", "task_ids")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    ADDR_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    target: str
    addr: str
    task_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., target: _Optional[str] = ..., addr: _Optional[str] = ..., task_ids: _Optional[_Iterable[int]] = ...) -> None: ...

class CreateStepReply(_message.Message):
    __slots__ = ("step_id", "nodes", "job", "credential")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    nodes: _containers.RepeatedCompositeFieldContainer[StepNode]
    job: _types_pb2.Job
    credential: str
    def __init__(self, step_id: _Optional[int] = ..., nodes: _Optional[_Iterable[_Union[StepNode, _Mapping]]] = ..., job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., credential: _Optional[str] = ...) -> None: ...

class CompleteStepRequest(_message.Message):
    __slots__ = ("job_id", "step_id", "exit_code", "exit_signal")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    step_id: int
    exit_code: int
    exit_signal: int
    def __init__(self, job_id: _Optional[int] = ..., step_id: _Optional[int] = ..., exit_code: _Optional[int] = ..., exit_signal: _Optional[int] = ...) -> None: ...

class CompleteStepReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class CompleteJobRequest(_message.Message):
    __slots__ = ("job_id", "exit_code", "exit_signal")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    exit_code: int
    exit_signal: int
    def __init__(self, job_id: _Optional[int] = ..., exit_code: _Optional[int] = ..., exit_signal: _Optional[int] = ...) -> None: ...

class CompleteJobReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetSharesRequest(_message.Message):
    __slots__ = ("users",)
    USERS_FIELD_NUMBER: _ClassVar[int]
    users: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, users: _Optional[_Iterable[str]] = ...) -> None: ...

class GetSharesReply(_message.Message):
    __slots__ = ("rows",)
    ROWS_FIELD_NUMBER: _ClassVar[int]
    rows: _containers.RepeatedCompositeFieldContainer[_types_pb2.ShareRow]
    def __init__(self, rows: _Optional[_Iterable[_Union[_types_pb2.ShareRow, _Mapping]]] = ...) -> None: ...

class SacctmgrRequest(_message.Message):
    __slots__ = ("verb", "entity", "names", "where", "set", "dry_run")
    class WhereEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class SetEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    VERB_FIELD_NUMBER: _ClassVar[int]
    ENTITY_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    WHERE_FIELD_NUMBER: _ClassVar[int]
    SET_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    verb: str
    entity: str
    names: _containers.RepeatedScalarFieldContainer[str]
    where: _containers.ScalarMap[str, str]
    set: _containers.ScalarMap[str, str]
    dry_run: bool
    def __init__(self, verb: _Optional[str] = ..., entity: _Optional[str] = ..., names: _Optional[_Iterable[str]] = ..., where: _Optional[_Mapping[str, str]] = ..., set: _Optional[_Mapping[str, str]] = ..., dry_run: _Optional[bool] = ...) -> None: ...

class AcctRecord(_message.Message):
    __slots__ = ("fields",)
    class FieldsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.ScalarMap[str, str]
    def __init__(self, fields: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SacctmgrReply(_message.Message):
    __slots__ = ("records", "messages")
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    records: _containers.RepeatedCompositeFieldContainer[AcctRecord]
    messages: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, records: _Optional[_Iterable[_Union[AcctRecord, _Mapping]]] = ..., messages: _Optional[_Iterable[str]] = ...) -> None: ...

class CreateReservationRequest(_message.Message):
    __slots__ = ("reservation", "node_count", "partition")
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    NODE_COUNT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    reservation: _types_pb2.Reservation
    node_count: int
    partition: str
    def __init__(self, reservation: _Optional[_Union[_types_pb2.Reservation, _Mapping]] = ..., node_count: _Optional[int] = ..., partition: _Optional[str] = ...) -> None: ...

class CreateReservationReply(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteReservationRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteReservationReply(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetReservationsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetReservationsReply(_message.Message):
    __slots__ = ("reservations", "now")
    RESERVATIONS_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    reservations: _containers.RepeatedCompositeFieldContainer[_types_pb2.Reservation]
    now: float
    def __init__(self, reservations: _Optional[_Iterable[_Union[_types_pb2.Reservation, _Mapping]]] = ..., now: _Optional[float] = ...) -> None: ...

class GetDiagRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetDiagReply(_message.Message):
    __slots__ = ("now", "since", "jobs_submitted", "jobs_started", "jobs_completed", "jobs_canceled", "jobs_failed", "jobs_pending", "jobs_running", "cycles", "event_cycles", "last_cycle_us", "max_cycle_us", "total_cycle_us", "last_queue_length", "backfilled_jobs", "preempted_jobs")
    NOW_FIELD_NUMBER: _ClassVar[int]
    SINCE_FIELD_NUMBER: _ClassVar[int]
    JOBS_SUBMITTED_FIELD_NUMBER: _ClassVar[int]
    JOBS_STARTED_FIELD_NUMBER: _ClassVar[int]
    JOBS_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    JOBS_CANCELED_FIELD_NUMBER: _ClassVar[int]
    JOBS_FAILED_FIELD_NUMBER: _ClassVar[int]
    JOBS_PENDING_FIELD_NUMBER: _ClassVar[int]
    JOBS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    CYCLES_FIELD_NUMBER: _ClassVar[int]
    EVENT_CYCLES_FIELD_NUMBER: _ClassVar[int]
    LAST_CYCLE_US_FIELD_NUMBER: _ClassVar[int]
    MAX_CYCLE_US_FIELD_NUMBER: _ClassVar[int]
    TOTAL_CYCLE_US_FIELD_NUMBER: _ClassVar[int]
    LAST_QUEUE_LENGTH_FIELD_NUMBER: _ClassVar[int]
    BACKFILLED_JOBS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_JOBS_FIELD_NUMBER: _ClassVar[int]
    now: float
    since: float
    jobs_submitted: int
    jobs_started: int
    jobs_completed: int
    jobs_canceled: int
    jobs_failed: int
    jobs_pending: int
    jobs_running: int
    cycles: int
    event_cycles: int
    last_cycle_us: int
    max_cycle_us: int
    total_cycle_us: int
    last_queue_length: int
    backfilled_jobs: int
    preempted_jobs: int
    def __init__(self, now: _Optional[float] = ..., since: _Optional[float] = ..., jobs_submitted: _Optional[int] = ..., jobs_started: _Optional[int] = ..., jobs_completed: _Optional[int] = ..., jobs_canceled: _Optional[int] = ..., jobs_failed: _Optional[int] = ..., jobs_pending: _Optional[int] = ..., jobs_running: _Optional[int] = ..., cycles: _Optional[int] = ..., event_cycles: _Optional[int] = ..., last_cycle_us: _Optional[int] = ..., max_cycle_us: _Optional[int] = ..., total_cycle_us: _Optional[int] = ..., last_queue_length: _Optional[int] = ..., backfilled_jobs: _Optional[int] = ..., preempted_jobs: _Optional[int] = ...) -> None: ...

class GetJobHistoryRequest(_message.Message):
    __slots__ = ("job_ids", "array_tasks", "users", "accounts", "partitions", "names", "states", "start", "end", "duplicates", "any_eligibility")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASKS_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    DUPLICATES_FIELD_NUMBER: _ClassVar[int]
    ANY_ELIGIBILITY_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    array_tasks: _containers.RepeatedScalarFieldContainer[str]
    users: _containers.RepeatedScalarFieldContainer[str]
    accounts: _containers.RepeatedScalarFieldContainer[str]
    partitions: _containers.RepeatedScalarFieldContainer[str]
    names: _containers.RepeatedScalarFieldContainer[str]
    states: _containers.RepeatedScalarFieldContainer[str]
    start: float
    end: float
    duplicates: bool
    any_eligibility: bool
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., array_tasks: _Optional[_Iterable[str]] = ..., users: _Optional[_Iterable[str]] = ..., accounts: _Optional[_Iterable[str]] = ..., partitions: _Optional[_Iterable[str]] = ..., names: _Optional[_Iterable[str]] = ..., states: _Optional[_Iterable[str]] = ..., start: _Optional[float] = ..., end: _Optional[float] = ..., duplicates: _Optional[bool] = ..., any_eligibility: _Optional[bool] = ...) -> None: ...

class JobRun(_message.Message):
    __slots__ = ("job", "state")
    JOB_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    job: _types_pb2.Job
    state: str
    def __init__(self, job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., state: _Optional[str] = ...) -> None: ...

class GetJobHistoryReply(_message.Message):
    __slots__ = ("runs", "now")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[JobRun]
    now: float
    def __init__(self, runs: _Optional[_Iterable[_Union[JobRun, _Mapping]]] = ..., now: _Optional[float] = ...) -> None: ...
