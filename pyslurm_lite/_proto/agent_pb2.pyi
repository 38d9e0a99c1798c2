from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StepLaunch(_message.Message):
    __slots__ = ("job", "step_id", "argv", "env", "cwd", "uid", "gid", "groups", "task_ids", "node_id", "credential", "step_nodes", "step_tasks_per_node", "node_addrs", "std_out", "std_err", "stdin_to_all", "cpus_per_task", "user", "unbuffered", "cpu_bind", "distribution", "stdin_mode", "gpus_per_task", "rlimits", "srun_host", "pty", "winsize", "task_prolog", "task_epilog")
    class EnvEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_FIELD_NUMBER: _ClassVar[int]
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    ENV_FIELD_NUMBER: _ClassVar[int]
    CWD_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    TASK_IDS_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CREDENTIAL_FIELD_NUMBER: _ClassVar[int]
    STEP_NODES_FIELD_NUMBER: _ClassVar[int]
    STEP_TASKS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    NODE_ADDRS_FIELD_NUMBER: _ClassVar[int]
    STD_OUT_FIELD_NUMBER: _ClassVar[int]
    STD_ERR_FIELD_NUMBER: _ClassVar[int]
    STDIN_TO_ALL_FIELD_NUMBER: _ClassVar[int]
    CPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    UNBUFFERED_FIELD_NUMBER: _ClassVar[int]
    CPU_BIND_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    STDIN_MODE_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    RLIMITS_FIELD_NUMBER: _ClassVar[int]
    SRUN_HOST_FIELD_NUMBER: _ClassVar[int]
    PTY_FIELD_NUMBER: _ClassVar[int]
    WINSIZE_FIELD_NUMBER: _ClassVar[int]
    TASK_PROLOG_FIELD_NUMBER: _ClassVar[int]
    TASK_EPILOG_FIELD_NUMBER: _ClassVar[int]
    job: _types_pb2.Job
    step_id: int
    argv: _containers.RepeatedScalarFieldContainer[str]
    env: _containers.ScalarMap[str, str]
    cwd: str
    uid: int
    gid: int
    groups: _containers.RepeatedScalarFieldContainer[int]
    task_ids: _containers.RepeatedScalarFieldContainer[int]
    node_id: int
    credential: str
    step_nodes: _containers.RepeatedScalarFieldContainer[str]
    step_tasks_per_node: _containers.RepeatedScalarFieldContainer[int]
    node_addrs: _containers.RepeatedScalarFieldContainer[str]
    std_out: str
    std_err: str
    stdin_to_all: bool
    cpus_per_task: int
    user: str
    unbuffered: bool
    cpu_bind: str
    distribution: str
    stdin_mode: str
    gpus_per_task: int
    rlimits: _containers.RepeatedScalarFieldContainer[str]
    srun_host: str
    pty: bool
    winsize: Winsize
    task_prolog: str
    task_epilog: str
    def __init__(self, job: _Optional[_Union[_types_pb2.Job, _Mapping]] = ..., step_id: _Optional[int] = ..., argv: _Optional[_Iterable[str]] = ..., env: _Optional[_Mapping[str, str]] = ..., cwd: _Optional[str] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., groups: _Optional[_Iterable[int]] = ..., task_ids: _Optional[_Iterable[int]] = ..., node_id: _Optional[int] = ..., credential: _Optional[str] = ..., step_nodes: _Optional[_Iterable[str]] = ..., step_tasks_per_node: _Optional[_Iterable[int]] = ..., node_addrs: _Optional[_Iterable[str]] = ..., std_out: _Optional[str] = ..., std_err: _Optional[str] = ..., stdin_to_all: _Optional[bool] = ..., cpus_per_task: _Optional[int] = ..., user: _Optional[str] = ..., unbuffered: _Optional[bool] = ..., cpu_bind: _Optional[str] = ..., distribution: _Optional[str] = ..., stdin_mode: _Optional[str] = ..., gpus_per_task: _Optional[int] = ..., rlimits: _Optional[_Iterable[str]] = ..., srun_host: _Optional[str] = ..., pty: _Optional[bool] = ..., winsize: _Optional[_Union[Winsize, _Mapping]] = ..., task_prolog: _Optional[str] = ..., task_epilog: _Optional[str] = ...) -> None: ...

class Winsize(_message.Message):
    __slots__ = ("rows", "cols")
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    rows: int
    cols: int
    def __init__(self, rows: _Optional[int] = ..., cols: _Optional[int] = ...) -> None: ...

class StepInput(_message.Message):
    __slots__ = ("launch", "stdin", "stdin_eof", "signal", "winsize", "pmi_done")
    LAUNCH_FIELD_NUMBER: _ClassVar[int]
    STDIN_FIELD_NUMBER: _ClassVar[int]
    STDIN_EOF_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    WINSIZE_FIELD_NUMBER: _ClassVar[int]
    PMI_DONE_FIELD_NUMBER: _ClassVar[int]
    launch: StepLaunch
    stdin: bytes
    stdin_eof: bool
    signal: int
    winsize: Winsize
    pmi_done: PmiFence
    def __init__(self, launch: _Optional[_Union[StepLaunch, _Mapping]] = ..., stdin: _Optional[bytes] = ..., stdin_eof: _Optional[bool] = ..., signal: _Optional[int] = ..., winsize: _Optional[_Union[Winsize, _Mapping]] = ..., pmi_done: _Optional[_Union[PmiFence, _Mapping]] = ...) -> None: ...

class StepOutput(_message.Message):
    __slots__ = ("task_id", "stream", "data", "exited", "exit_code", "exit_signal", "error", "started", "pmi_fence", "pmi_abort")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    EXITED_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    PMI_FENCE_FIELD_NUMBER: _ClassVar[int]
    PMI_ABORT_FIELD_NUMBER: _ClassVar[int]
    task_id: int
    stream: int
    data: bytes
    exited: bool
    exit_code: int
    exit_signal: int
    error: str
    started: bool
    pmi_fence: PmiFence
    pmi_abort: PmiAbort
    def __init__(self, task_id: _Optional[int] = ..., stream: _Optional[int] = ..., data: _Optional[bytes] = ..., exited: _Optional[bool] = ..., exit_code: _Optional[int] = ..., exit_signal: _Optional[int] = ..., error: _Optional[str] = ..., started: _Optional[bool] = ..., pmi_fence: _Optional[_Union[PmiFence, _Mapping]] = ..., pmi_abort: _Optional[_Union[PmiAbort, _Mapping]] = ...) -> None: ...

class PmiFence(_message.Message):
    __slots__ = ("seq", "kvs")
    class KvsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SEQ_FIELD_NUMBER: _ClassVar[int]
    KVS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    kvs: _containers.ScalarMap[str, str]
    def __init__(self, seq: _Optional[int] = ..., kvs: _Optional[_Mapping[str, str]] = ...) -> None: ...

class PmiAbort(_message.Message):
    __slots__ = ("task_id", "exit_code", "message")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    task_id: int
    exit_code: int
    message: str
    def __init__(self, task_id: _Optional[int] = ..., exit_code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("jobs", "instance", "node_addrs", "epoch", "credentials")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    NODE_ADDRS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    CREDENTIALS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_types_pb2.Job]
    instance: str
    node_addrs: _containers.RepeatedScalarFieldContainer[str]
    epoch: str
    credentials: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_types_pb2.Job, _Mapping]]] = ..., instance: _Optional[str] = ..., node_addrs: _Optional[_Iterable[str]] = ..., epoch: _Optional[str] = ..., credentials: _Optional[_Iterable[str]] = ...) -> None: ...

class LaunchJobsReply(_message.Message):
    __slots__ = ("accepted",)
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    accepted: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, accepted: _Optional[_Iterable[int]] = ...) -> None: ...

class SignalJobsRequest(_message.Message):
    __slots__ = ("job_ids", "signal", "batch_only", "terminate", "reason", "steps_only", "restart_counts")
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    BATCH_ONLY_FIELD_NUMBER: _ClassVar[int]
    TERMINATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    STEPS_ONLY_FIELD_NUMBER: _ClassVar[int]
    RESTART_COUNTS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    signal: int
    batch_only: bool
    terminate: bool
    reason: str
    steps_only: bool
    restart_counts: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ..., signal: _Optional[int] = ..., batch_only: _Optional[bool] = ..., terminate: _Optional[bool] = ..., reason: _Optional[str] = ..., steps_only: _Optional[bool] = ..., restart_counts: _Optional[_Iterable[int]] = ...) -> None: ...

class SignalJobsReply(_message.Message):
    __slots__ = ("job_ids",)
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    job_ids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, job_ids: _Optional[_Iterable[int]] = ...) -> None: ...
