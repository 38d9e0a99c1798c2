from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GresRequest(_message.Message):
    __slots__ = ("name", "type", "count")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    count: int
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class JobSpec(_message.Message):
    __slots__ = ("name", "script", "argv", "work_dir", "std_out", "std_err", "std_in", "open_mode", "partition", "account", "qos", "num_nodes", "num_tasks", "ntasks_set", "cpus_per_task", "ntasks_per_node", "mem_per_node", "mem_per_cpu", "time_limit", "gres", "gpus", "gpus_per_node", "gpu_type", "environment", "export", "begin_time", "hold", "user", "uid", "gid", "groups", "submit_host", "nice", "requeue", "constraint", "exclusive", "comment", "nodelist", "exclude", "signal", "batch", "submit_dir", "array", "cpus_per_gpu", "mem_per_gpu", "dependency", "kill_on_invalid_dep", "reservation", "gpus_per_task", "max_nodes", "min_cpus_per_node", "overcommit", "mem_whole_node", "exclusive_user", "rlimits", "deadline", "priority", "mail_type", "mail_user", "req_switch", "wait4switch", "gpu_bind", "gres_flags")
    class EnvironmentEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    SCRIPT_FIELD_NUMBER: _ClassVar[int]
    ARGV_FIELD_NUMBER: _ClassVar[int]
    WORK_DIR_FIELD_NUMBER: _ClassVar[int]
    STD_OUT_FIELD_NUMBER: _ClassVar[int]
    STD_ERR_FIELD_NUMBER: _ClassVar[int]
    STD_IN_FIELD_NUMBER: _ClassVar[int]
    OPEN_MODE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    QOS_FIELD_NUMBER: _ClassVar[int]
    NUM_NODES_FIELD_NUMBER: _ClassVar[int]
    NUM_TASKS_FIELD_NUMBER: _ClassVar[int]
    NTASKS_SET_FIELD_NUMBER: _ClassVar[int]
    CPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    NTASKS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    MEM_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    MEM_PER_CPU_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    GRES_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENVIRONMENT_FIELD_NUMBER: _ClassVar[int]
    EXPORT_FIELD_NUMBER: _ClassVar[int]
    BEGIN_TIME_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    GID_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_HOST_FIELD_NUMBER: _ClassVar[int]
    NICE_FIELD_NUMBER: _ClassVar[int]
    REQUEUE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    COMMENT_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_FIELD_NUMBER: _ClassVar[int]
    SIGNAL_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_DIR_FIELD_NUMBER: _ClassVar[int]
    ARRAY_FIELD_NUMBER: _ClassVar[int]
    CPUS_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    MEM_PER_GPU_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_FIELD_NUMBER: _ClassVar[int]
    KILL_ON_INVALID_DEP_FIELD_NUMBER: _ClassVar[int]
    RESERVATION_FIELD_NUMBER: _ClassVar[int]
    GPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    MAX_NODES_FIELD_NUMBER: _ClassVar[int]
    MIN_CPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    OVERCOMMIT_FIELD_NUMBER: _ClassVar[int]
    MEM_WHOLE_NODE_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_USER_FIELD_NUMBER: _ClassVar[int]
    RLIMITS_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    MAIL_TYPE_FIELD_NUMBER: _ClassVar[int]
    MAIL_USER_FIELD_NUMBER: _ClassVar[int]
    REQ_SWITCH_FIELD_NUMBER: _ClassVar[int]
    WAIT4SWITCH_FIELD_NUMBER: _ClassVar[int]
    GPU_BIND_FIELD_NUMBER: _ClassVar[int]
    GRES_FLAGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    script: str
    argv: _containers.RepeatedScalarFieldContainer[str]
    work_dir: str
    std_out: str
    std_err: str
    std_in: str
    open_mode: str
    partition: str
    account: str
    qos: str
    num_nodes: int
    num_tasks: int
    ntasks_set: bool
    cpus_per_task: int
    ntasks_per_node: int
    mem_per_node: int
    mem_per_cpu: int
    time_limit: int
    gres: _containers.RepeatedCompositeFieldContainer[GresRequest]
    gpus: int
    gpus_per_node: int
    gpu_type: str
    environment: _containers.ScalarMap[str, str]
    export: str
    begin_time: float
    hold: bool
    user: str
    uid: int
    gid: int
    groups: _containers.RepeatedScalarFieldContainer[int]
    submit_host: str
    nice: int
    requeue: bool
    constraint: str
    exclusive: bool
    comment: str
    nodelist: str
    exclude: str
    signal: str
    batch: bool
    submit_dir: str
    array: str
    cpus_per_gpu: int
    mem_per_gpu: int
    dependency: str
    kill_on_invalid_dep: bool
    reservation: str
    gpus_per_task: int
    max_nodes: int
    min_cpus_per_node: int
    overcommit: bool
    mem_whole_node: bool
    exclusive_user: bool
    rlimits: _containers.RepeatedScalarFieldContainer[str]
    deadline: float
    priority: int
    mail_type: str
    mail_user: str
    req_switch: int
    wait4switch: int
    gpu_bind: str
    gres_flags: str
    def __init__(self, name: _Optional[str] = ..., script: _Optional[str] = ..., argv: _Optional[_Iterable[str]] = ..., work_dir: _Optional[str] = ..., std_out: _Optional[str] = ..., std_err: _Optional[str] = ..., std_in: _Optional[str] = ..., open_mode: _Optional[str] = ..., partition: _Optional[str] = ..., account: _Optional[str] = ..., qos: _Optional[str] = ..., num_nodes: _Optional[int] = ..., num_tasks: _Optional[int] = ..., ntasks_set: _Optional[bool] = ..., cpus_per_task: _Optional[int] = ..., ntasks_per_node: _Optional[int] = ..., mem_per_node: _Optional[int] = ..., mem_per_cpu: _Optional[int] = ..., time_limit: _Optional[int] = ..., gres: _Optional[_Iterable[_Union[GresRequest, _Mapping]]] = ..., gpus: _Optional[int] = ..., gpus_per_node: _Optional[int] = ..., gpu_type: _Optional[str] = ..., environment: _Optional[_Mapping[str, str]] = ..., export: _Optional[str] = ..., begin_time: _Optional[float] = ..., hold: _Optional[bool] = ..., user: _Optional[str] = ..., uid: _Optional[int] = ..., gid: _Optional[int] = ..., groups: _Optional[_Iterable[int]] = ..., submit_host: _Optional[str] = ..., nice: _Optional[int] = ..., requeue: _Optional[bool] = ..., constraint: _Optional[str] = ..., exclusive: _Optional[bool] = ..., comment: _Optional[str] = ..., nodelist: _Optional[str] = ..., exclude: _Optional[str] = ..., signal: _Optional[str] = ..., batch: _Optional[bool] = ..., submit_dir: _Optional[str] = ..., array: _Optional[str] = ..., cpus_per_gpu: _Optional[int] = ..., mem_per_gpu: _Optional[int] = ..., dependency: _Optional[str] = ..., kill_on_invalid_dep: _Optional[bool] = ..., reservation: _Optional[str] = ..., gpus_per_task: _Optional[int] = ..., max_nodes: _Optional[int] = ..., min_cpus_per_node: _Optional[int] = ..., overcommit: _Optional[bool] = ..., mem_whole_node: _Optional[bool] = ..., exclusive_user: _Optional[bool] = ..., rlimits: _Optional[_Iterable[str]] = ..., deadline: _Optional[float] = ..., priority: _Optional[int] = ..., mail_type: _Optional[str] = ..., mail_user: _Optional[str] = ..., req_switch: _Optional[int] = ..., wait4switch: _Optional[int] = ..., gpu_bind: _Optional[str] = ..., gres_flags: _Optional[str] = ...) -> None: ...

class NodeAllocation(_message.Message):
    __slots__ = ("node", "cpus", "mem", "gpus", "shares", "share_name")
    NODE_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    MEM_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    SHARES_FIELD_NUMBER: _ClassVar[int]
    SHARE_NAME_FIELD_NUMBER: _ClassVar[int]
    node: str
    cpus: int
    mem: int
    gpus: _containers.RepeatedScalarFieldContainer[int]
    shares: _containers.RepeatedScalarFieldContainer[int]
    share_name: str
    def __init__(self, node: _Optional[str] = ..., cpus: _Optional[int] = ..., mem: _Optional[int] = ..., gpus: _Optional[_Iterable[int]] = ..., shares: _Optional[_Iterable[int]] = ..., share_name: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_id", "spec", "state", "reason", "priority", "submit_time", "eligible_time", "start_time", "end_time", "exit_code", "exit_signal", "allocations", "restart_count", "held", "held_by_admin", "time_limit", "partition", "master_port", "batch_host", "steps", "next_step_id", "expected_start", "array_job_id", "array_task_id", "array_limit", "array_tasks", "factors", "preempt_time", "preempt_mode", "cancelled_by", "state_desc", "direct_priority", "admin_comment", "billing", "usage", "start_note")
    class FactorsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_TIME_FIELD_NUMBER: _ClassVar[int]
    ELIGIBLE_TIME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    RESTART_COUNT_FIELD_NUMBER: _ClassVar[int]
    HELD_FIELD_NUMBER: _ClassVar[int]
    HELD_BY_ADMIN_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MASTER_PORT_FIELD_NUMBER: _ClassVar[int]
    BATCH_HOST_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    NEXT_STEP_ID_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_START_FIELD_NUMBER: _ClassVar[int]
    ARRAY_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASK_ID_FIELD_NUMBER: _ClassVar[int]
    ARRAY_LIMIT_FIELD_NUMBER: _ClassVar[int]
    ARRAY_TASKS_FIELD_NUMBER: _ClassVar[int]
    FACTORS_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_TIME_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_MODE_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_BY_FIELD_NUMBER: _ClassVar[int]
    STATE_DESC_FIELD_NUMBER: _ClassVar[int]
    DIRECT_PRIORITY_FIELD_NUMBER: _ClassVar[int]
    ADMIN_COMMENT_FIELD_NUMBER: _ClassVar[int]
    BILLING_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    START_NOTE_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    spec: JobSpec
    state: str
    reason: str
    priority: int
    submit_time: float
    eligible_time: float
    start_time: float
    end_time: float
    exit_code: int
    exit_signal: int
    allocations: _containers.RepeatedCompositeFieldContainer[NodeAllocation]
    restart_count: int
    held: bool
    held_by_admin: bool
    time_limit: int
    partition: str
    master_port: int
    batch_host: str
    steps: _containers.RepeatedCompositeFieldContainer[Step]
    next_step_id: int
    expected_start: float
    array_job_id: int
    array_task_id: int
    array_limit: int
    array_tasks: str
    factors: _containers.ScalarMap[str, float]
    preempt_time: float
    preempt_mode: str
    cancelled_by: str
    state_desc: str
    direct_priority: bool
    admin_comment: str
    billing: float
    usage: _containers.RepeatedCompositeFieldContainer[UsageSample]
    start_note: str
    def __init__(self, job_id: _Optional[int] = ..., spec: _Optional[_Union[JobSpec, _Mapping]] = ..., state: _Optional[str] = ..., reason: _Optional[str] = ..., priority: _Optional[int] = ..., submit_time: _Optional[float] = ..., eligible_time: _Optional[float] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., exit_code: _Optional[int] = ..., exit_signal: _Optional[int] = ..., allocations: _Optional[_Iterable[_Union[NodeAllocation, _Mapping]]] = ..., restart_count: _Optional[int] = ..., held: _Optional[bool] = ..., held_by_admin: _Optional[bool] = ..., time_limit: _Optional[int] = ..., partition: _Optional[str] = ..., master_port: _Optional[int] = ..., batch_host: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[Step, _Mapping]]] = ..., next_step_id: _Optional[int] = ..., expected_start: _Optional[float] = ..., array_job_id: _Optional[int] = ..., array_task_id: _Optional[int] = ..., array_limit: _Optional[int] = ..., array_tasks: _Optional[str] = ..., factors: _Optional[_Mapping[str, float]] = ..., preempt_time: _Optional[float] = ..., preempt_mode: _Optional[str] = ..., cancelled_by: _Optional[str] = ..., state_desc: _Optional[str] = ..., direct_priority: _Optional[bool] = ..., admin_comment: _Optional[str] = ..., billing: _Optional[float] = ..., usage: _Optional[_Iterable[_Union[UsageSample, _Mapping]]] = ..., start_note: _Optional[str] = ...) -> None: ...

class UsageSample(_message.Message):
    __slots__ = ("step", "node", "restart_count", "time", "user_cpu", "system_cpu", "rss", "max_rss", "ave_rss", "samples", "gpus", "gpu_util", "ave_gpu_util", "max_gpu_util", "gpu_mem", "max_gpu_mem", "start", "tasks", "job_id")
    STEP_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    RESTART_COUNT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    USER_CPU_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_CPU_FIELD_NUMBER: _ClassVar[int]
    RSS_FIELD_NUMBER: _ClassVar[int]
    MAX_RSS_FIELD_NUMBER: _ClassVar[int]
    AVE_RSS_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_UTIL_FIELD_NUMBER: _ClassVar[int]
    AVE_GPU_UTIL_FIELD_NUMBER: _ClassVar[int]
    MAX_GPU_UTIL_FIELD_NUMBER: _ClassVar[int]
    GPU_MEM_FIELD_NUMBER: _ClassVar[int]
    MAX_GPU_MEM_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    step: str
    node: str
    restart_count: int
    time: float
    user_cpu: float
    system_cpu: float
    rss: int
    max_rss: int
    ave_rss: float
    samples: int
    gpus: int
    gpu_util: float
    ave_gpu_util: float
    max_gpu_util: float
    gpu_mem: int
    max_gpu_mem: int
    start: float
    tasks: int
    job_id: int
    def __init__(self, step: _Optional[str] = ..., node: _Optional[str] = ..., restart_count: _Optional[int] = ..., time: _Optional[float] = ..., user_cpu: _Optional[float] = ..., system_cpu: _Optional[float] = ..., rss: _Optional[int] = ..., max_rss: _Optional[int] = ..., ave_rss: _Optional[float] = ..., samples: _Optional[int] = ..., gpus: _Optional[int] = ..., gpu_util: _Optional[float] = ..., ave_gpu_util: _Optional[float] = ..., max_gpu_util: _Optional[float] = ..., gpu_mem: _Optional[int] = ..., max_gpu_mem: _Optional[int] = ..., start: _Optional[float] = ..., tasks: _Optional[int] = ..., job_id: _Optional[int] = ...) -> None: ...

class ForeignGpu(_message.Message):
    __slots__ = ("index", "pids", "memory")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    PIDS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    index: int
    pids: _containers.RepeatedScalarFieldContainer[int]
    memory: int
    def __init__(self, index: _Optional[int] = ..., pids: _Optional[_Iterable[int]] = ..., memory: _Optional[int] = ...) -> None: ...

class Step(_message.Message):
    __slots__ = ("step_id", "name", "state", "nodes", "num_tasks", "tasks_per_node", "cpus_per_task", "start_time", "end_time", "exit_code", "exit_signal", "exclusive", "cpus_per_node", "task_nodes", "distribution", "allocations", "gpus_held", "overlap")
    STEP_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    NUM_TASKS_FIELD_NUMBER: _ClassVar[int]
    TASKS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    CPUS_PER_TASK_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    CPUS_PER_NODE_FIELD_NUMBER: _ClassVar[int]
    TASK_NODES_FIELD_NUMBER: _ClassVar[int]
    DISTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    ALLOCATIONS_FIELD_NUMBER: _ClassVar[int]
    GPUS_HELD_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    step_id: int
    name: str
    state: str
    nodes: _containers.RepeatedScalarFieldContainer[str]
    num_tasks: int
    tasks_per_node: _containers.RepeatedScalarFieldContainer[int]
    cpus_per_task: int
    start_time: float
    end_time: float
    exit_code: int
    exit_signal: int
    exclusive: bool
    cpus_per_node: _containers.RepeatedScalarFieldContainer[int]
    task_nodes: _containers.RepeatedScalarFieldContainer[int]
    distribution: str
    allocations: _containers.RepeatedCompositeFieldContainer[NodeAllocation]
    gpus_held: bool
    overlap: bool
    def __init__(self, step_id: _Optional[int] = ..., name: _Optional[str] = ..., state: _Optional[str] = ..., nodes: _Optional[_Iterable[str]] = ..., num_tasks: _Optional[int] = ..., tasks_per_node: _Optional[_Iterable[int]] = ..., cpus_per_task: _Optional[int] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., exit_code: _Optional[int] = ..., exit_signal: _Optional[int] = ..., exclusive: _Optional[bool] = ..., cpus_per_node: _Optional[_Iterable[int]] = ..., task_nodes: _Optional[_Iterable[int]] = ..., distribution: _Optional[str] = ..., allocations: _Optional[_Iterable[_Union[NodeAllocation, _Mapping]]] = ..., gpus_held: _Optional[bool] = ..., overlap: _Optional[bool] = ...) -> None: ...

class GpuShareUse(_message.Message):
    __slots__ = ("index", "name", "count")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    index: int
    name: str
    count: int
    def __init__(self, index: _Optional[int] = ..., name: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class GpuFault(_message.Message):
    __slots__ = ("index", "kind", "detail")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    index: int
    kind: str
    detail: str
    def __init__(self, index: _Optional[int] = ..., kind: _Optional[str] = ..., detail: _Optional[str] = ...) -> None: ...

class GpuDevice(_message.Message):
    __slots__ = ("index", "type", "uuid", "name", "memory_mb", "minor", "pci_bus_id", "numa_node", "simulated", "file", "links", "pci_switch", "cores", "mig_parent", "mig_index", "mig_files")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    UUID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MB_FIELD_NUMBER: _ClassVar[int]
    MINOR_FIELD_NUMBER: _ClassVar[int]
    PCI_BUS_ID_FIELD_NUMBER: _ClassVar[int]
    NUMA_NODE_FIELD_NUMBER: _ClassVar[int]
    SIMULATED_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    PCI_SWITCH_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    MIG_PARENT_FIELD_NUMBER: _ClassVar[int]
    MIG_INDEX_FIELD_NUMBER: _ClassVar[int]
    MIG_FILES_FIELD_NUMBER: _ClassVar[int]
    index: int
    type: str
    uuid: str
    name: str
    memory_mb: int
    minor: int
    pci_bus_id: str
    numa_node: int
    simulated: bool
    file: str
    links: _containers.RepeatedScalarFieldContainer[int]
    pci_switch: str
    cores: str
    mig_parent: int
    mig_index: int
    mig_files: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, index: _Optional[int] = ..., type: _Optional[str] = ..., uuid: _Optional[str] = ..., name: _Optional[str] = ..., memory_mb: _Optional[int] = ..., minor: _Optional[int] = ..., pci_bus_id: _Optional[str] = ..., numa_node: _Optional[int] = ..., simulated: _Optional[bool] = ..., file: _Optional[str] = ..., links: _Optional[_Iterable[int]] = ..., pci_switch: _Optional[str] = ..., cores: _Optional[str] = ..., mig_parent: _Optional[int] = ..., mig_index: _Optional[int] = ..., mig_files: _Optional[_Iterable[str]] = ...) -> None: ...

class NodeConfig(_message.Message):
    __slots__ = ("name", "addr", "port", "cpus", "real_memory", "gres", "features", "weight", "sockets", "cores_per_socket", "threads_per_core", "metrics_port")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ADDR_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    CPUS_FIELD_NUMBER: _ClassVar[int]
    REAL_MEMORY_FIELD_NUMBER: _ClassVar[int]
    GRES_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    SOCKETS_FIELD_NUMBER: _ClassVar[int]
    CORES_PER_SOCKET_FIELD_NUMBER: _ClassVar[int]
    THREADS_PER_CORE_FIELD_NUMBER: _ClassVar[int]
    METRICS_PORT_FIELD_NUMBER: _ClassVar[int]
    name: str
    addr: str
    port: int
    cpus: int
    real_memory: int
    gres: _containers.RepeatedCompositeFieldContainer[GresRequest]
    features: _containers.RepeatedScalarFieldContainer[str]
    weight: int
    sockets: int
    cores_per_socket: int
    threads_per_core: int
    metrics_port: int
    def __init__(self, name: _Optional[str] = ..., addr: _Optional[str] = ..., port: _Optional[int] = ..., cpus: _Optional[int] = ..., real_memory: _Optional[int] = ..., gres: _Optional[_Iterable[_Union[GresRequest, _Mapping]]] = ..., features: _Optional[_Iterable[str]] = ..., weight: _Optional[int] = ..., sockets: _Optional[int] = ..., cores_per_socket: _Optional[int] = ..., threads_per_core: _Optional[int] = ..., metrics_port: _Optional[int] = ...) -> None: ...

class Node(_message.Message):
    __slots__ = ("config", "state", "drain", "reason", "reason_time", "responding", "last_heartbeat", "boot_time", "gpus", "alloc_cpus", "alloc_mem", "alloc_gpus", "real_cpus", "real_memory", "free_memory", "cpu_load", "agent_version", "foreign_gpus", "gpu_faults", "alloc_shares")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REASON_TIME_FIELD_NUMBER: _ClassVar[int]
    RESPONDING_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    BOOT_TIME_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    ALLOC_CPUS_FIELD_NUMBER: _ClassVar[int]
    ALLOC_MEM_FIELD_NUMBER: _ClassVar[int]
    ALLOC_GPUS_FIELD_NUMBER: _ClassVar[int]
    REAL_CPUS_FIELD_NUMBER: _ClassVar[int]
    REAL_MEMORY_FIELD_NUMBER: _ClassVar[int]
    FREE_MEMORY_FIELD_NUMBER: _ClassVar[int]
    CPU_LOAD_FIELD_NUMBER: _ClassVar[int]
    AGENT_VERSION_FIELD_NUMBER: _ClassVar[int]
    FOREIGN_GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_FAULTS_FIELD_NUMBER: _ClassVar[int]
    ALLOC_SHARES_FIELD_NUMBER: _ClassVar[int]
    config: NodeConfig
    state: str
    drain: bool
    reason: str
    reason_time: float
    responding: bool
    last_heartbeat: float
    boot_time: float
    gpus: _containers.RepeatedCompositeFieldContainer[GpuDevice]
    alloc_cpus: int
    alloc_mem: int
    alloc_gpus: _containers.RepeatedScalarFieldContainer[int]
    real_cpus: int
    real_memory: int
    free_memory: int
    cpu_load: float
    agent_version: str
    foreign_gpus: _containers.RepeatedCompositeFieldContainer[ForeignGpu]
    gpu_faults: _containers.RepeatedCompositeFieldContainer[GpuFault]
    alloc_shares: _containers.RepeatedCompositeFieldContainer[GpuShareUse]
    def __init__(self, config: _Optional[_Union[NodeConfig, _Mapping]] = ..., state: _Optional[str] = ..., drain: _Optional[bool] = ..., reason: _Optional[str] = ..., reason_time: _Optional[float] = ..., responding: _Optional[bool] = ..., last_heartbeat: _Optional[float] = ..., boot_time: _Optional[float] = ..., gpus: _Optional[_Iterable[_Union[GpuDevice, _Mapping]]] = ..., alloc_cpus: _Optional[int] = ..., alloc_mem: _Optional[int] = ..., alloc_gpus: _Optional[_Iterable[int]] = ..., real_cpus: _Optional[int] = ..., real_memory: _Optional[int] = ..., free_memory: _Optional[int] = ..., cpu_load: _Optional[float] = ..., agent_version: _Optional[str] = ..., foreign_gpus: _Optional[_Iterable[_Union[ForeignGpu, _Mapping]]] = ..., gpu_faults: _Optional[_Iterable[_Union[GpuFault, _Mapping]]] = ..., alloc_shares: _Optional[_Iterable[_Union[GpuShareUse, _Mapping]]] = ...) -> None: ...

class Partition(_message.Message):
    __slots__ = ("name", "nodes", "default", "max_time", "default_time", "max_nodes", "state", "priority_tier", "priority_job_factor", "allow_accounts", "allow_groups", "preempt_mode", "grace_time", "tres_billing_weights")
    class TresBillingWeightsEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_FIELD_NUMBER: _ClassVar[int]
    MAX_TIME_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIME_FIELD_NUMBER: _ClassVar[int]
    MAX_NODES_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_TIER_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_JOB_FACTOR_FIELD_NUMBER: _ClassVar[int]
    ALLOW_ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_GROUPS_FIELD_NUMBER: _ClassVar[int]
    PREEMPT_MODE_FIELD_NUMBER: _ClassVar[int]
    GRACE_TIME_FIELD_NUMBER: _ClassVar[int]
    TRES_BILLING_WEIGHTS_FIELD_NUMBER: _ClassVar[int]
    name: str
    nodes: _containers.RepeatedScalarFieldContainer[str]
    default: bool
    max_time: int
    default_time: int
    max_nodes: int
    state: str
    priority_tier: int
    priority_job_factor: int
    allow_accounts: _containers.RepeatedScalarFieldContainer[str]
    allow_groups: _containers.RepeatedScalarFieldContainer[str]
    preempt_mode: str
    grace_time: int
    tres_billing_weights: _containers.ScalarMap[str, float]
    def __init__(self, name: _Optional[str] = ..., nodes: _Optional[_Iterable[str]] = ..., default: _Optional[bool] = ..., max_time: _Optional[int] = ..., default_time: _Optional[int] = ..., max_nodes: _Optional[int] = ..., state: _Optional[str] = ..., priority_tier: _Optional[int] = ..., priority_job_factor: _Optional[int] = ..., allow_accounts: _Optional[_Iterable[str]] = ..., allow_groups: _Optional[_Iterable[str]] = ..., preempt_mode: _Optional[str] = ..., grace_time: _Optional[int] = ..., tres_billing_weights: _Optional[_Mapping[str, float]] = ...) -> None: ...

class Reservation(_message.Message):
    __slots__ = ("name", "start_time", "end_time", "nodes", "users", "accounts", "flags")
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_TIME_FIELD_NUMBER: _ClassVar[int]
    END_TIME_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    USERS_FIELD_NUMBER: _ClassVar[int]
    ACCOUNTS_FIELD_NUMBER: _ClassVar[int]
    FLAGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    start_time: float
    end_time: float
    nodes: _containers.RepeatedScalarFieldContainer[str]
    users: _containers.RepeatedScalarFieldContainer[str]
    accounts: _containers.RepeatedScalarFieldContainer[str]
    flags: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., start_time: _Optional[float] = ..., end_time: _Optional[float] = ..., nodes: _Optional[_Iterable[str]] = ..., users: _Optional[_Iterable[str]] = ..., accounts: _Optional[_Iterable[str]] = ..., flags: _Optional[_Iterable[str]] = ...) -> None: ...

class ShareRow(_message.Message):
    __slots__ = ("account", "user", "raw_shares", "norm_shares", "raw_usage", "effective_usage", "fairshare", "norm_usage", "level_fs", "grp_tres_mins", "tres_run_mins", "parent")
    ACCOUNT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    RAW_SHARES_FIELD_NUMBER: _ClassVar[int]
    NORM_SHARES_FIELD_NUMBER: _ClassVar[int]
    RAW_USAGE_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_USAGE_FIELD_NUMBER: _ClassVar[int]
    FAIRSHARE_FIELD_NUMBER: _ClassVar[int]
    NORM_USAGE_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FS_FIELD_NUMBER: _ClassVar[int]
    GRP_TRES_MINS_FIELD_NUMBER: _ClassVar[int]
    TRES_RUN_MINS_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    account: str
    user: str
    raw_shares: int
    norm_shares: float
    raw_usage: float
    effective_usage: float
    fairshare: float
    norm_usage: float
    level_fs: float
    grp_tres_mins: str
    tres_run_mins: str
    parent: str
    def __init__(self, account: _Optional[str] = ..., user: _Optional[str] = ..., raw_shares: _Optional[int] = ..., norm_shares: _Optional[float] = ..., raw_usage: _Optional[float] = ..., effective_usage: _Optional[float] = ..., fairshare: _Optional[float] = ..., norm_usage: _Optional[float] = ..., level_fs: _Optional[float] = ..., grp_tres_mins: _Optional[str] = ..., tres_run_mins: _Optional[str] = ..., parent: _Optional[str] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ("job_id", "restart_count", "kind", "exit_code", "exit_signal", "oom", "timeout", "time", "message")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RESTART_COUNT_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    EXIT_CODE_FIELD_NUMBER: _ClassVar[int]
    EXIT_SIGNAL_FIELD_NUMBER: _ClassVar[int]
    OOM_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    TIME_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    restart_count: int
    kind: str
    exit_code: int
    exit_signal: int
    oom: bool
    timeout: bool
    time: float
    message: str
    def __init__(self, job_id: _Optional[int] = ..., restart_count: _Optional[int] = ..., kind: _Optional[str] = ..., exit_code: _Optional[int] = ..., exit_signal: _Optional[int] = ..., oom: _Optional[bool] = ..., timeout: _Optional[bool] = ..., time: _Optional[float] = ..., message: _Optional[str] = ...) -> None: ...

class RunningJob(_message.Message):
    __slots__ = ("job_id", "restart_count")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RESTART_COUNT_FIELD_NUMBER: _ClassVar[int]
    job_id: int
    restart_count: int
    def __init__(self, job_id: _Optional[int] = ..., restart_count: _Optional[int] = ...) -> None: ...
