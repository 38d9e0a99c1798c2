"""slurm.conf and gres.conf, a subset in Slurm's own syntax, parsed into a frozen Config.

Owns: finding the file (PYSLURM_LITE_CONF, then /etc/pyslurm-lite/slurm.conf), parsing lines of
Key=Value pairs (NodeName and PartitionName lines hold several), validating values, expanding
hostlists. Every error names the file and the line. Must not: open sockets or touch state.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from .errors import ConfigError
from .hostlists import MAX_HOSTLIST, collect, expand  # noqa: F401 (re-exported: callers import them from here)
from .confvalues import (_gather_frequency, _int, _limit, _names, _preempt_mode,
                         _seconds, _seconds_or_minutes, _tres_weights, _yes_no)
from .model import UNLIMITED, GresRequest, NodeConfig, Partition, Qos
from .units import parse_time_limit

DEFAULT_CONF = "/etc/pyslurm-lite/slurm.conf"
ENV_CONF = "PYSLURM_LITE_CONF"


@dataclass
class GresDevice:
    """One gres.conf device line, expanded: a GPU index with its type and device file."""

    name: str
    type: str = ""
    file: str = ""
    index: int = 0
    links: list[int] = field(default_factory=list)  # Links=: NVLinks to each GPU (-1 itself)
    cores: str = ""  # Cores=: the cores close to this GPU, a cpulist


@dataclass
class Config:
    path: str = ""
    cluster_name: str = "cluster"
    controller_host: str = "localhost"
    controller_addr: str = ""
    controller_port: int = 6817
    # every SlurmctldHost= line in order, the primary first, then backups: (name, addr, port);
    # addr "" is the name, port 0 is SlurmctldPort (ours: name(addr:port) gives one its own)
    controller_hosts: list[tuple[str, str, int]] = field(default_factory=list)
    slurmctld_timeout: int = 120  # SlurmctldTimeout: seconds before a backup takes over
    rest_port: int = 0  # RestPort (ours): the HTTP server (slurmrestd's API, dashboard); 0 off
    # AuthAltTypes=auth/jwt and AuthAltParameters=jwt_key=PATH: `scontrol token` and the
    # X-SLURM-USER-TOKEN header (rpc/jwt.py); the key defaults to one beside the cluster key
    auth_alt_types: list[str] = field(default_factory=list)
    jwt_key_file: str = ""
    slurmd_port: int = 6818
    state_save_location: str = "/var/spool/pyslurm-lite"
    database_url: str = ""
    auth_key_file: str = ""
    slurmd_spool_dir: str = ""
    # MpsControlProgram= (ours): nvidia-cuda-mps-control, which the agent runs per GPU for the
    # jobs using gres/mps (agent/mps.py); "": no MPS daemon is managed
    mps_control_program: str = ""
    def_mem_per_cpu: int = 0
    def_mem_per_node: int = 0
    kill_wait: int = 30  # seconds between SIGTERM and SIGKILL
    slurmd_timeout: int = 300  # seconds of silence before a node is marked DOWN
    heartbeat_interval: float = 2.0  # seconds between agent heartbeats
    job_requeue: bool = True
    return_to_service: int = 1
    max_batch_requeue: int = 5  # node-failure requeues before a job is held instead
    health_check_program: str = ""
    task_prolog: str = ""  # TaskProlog: run as the user before each task (agent/taskprolog.py)
    task_epilog: str = ""  # TaskEpilog: run as the user after each task
    health_check_interval: int = 0  # seconds; 0 = never
    priority_type: str = "priority/basic"
    priority_weights: dict = field(default_factory=dict)  # age, fairshare, jobsize, partition, qos
    priority_max_age: int = 7 * 24 * 60  # minutes
    priority_decay_half_life: int = 7 * 24 * 60  # minutes
    first_job_id: int = 1
    min_job_age: int = 300  # MinJobAge: seconds an ended job stays in memory; 0: for ever
    task_plugin: str = "task/cgroup"
    mpi_default: str = "none"  # MpiDefault: srun's --mpi when none is given (none | pmi2)
    proctrack_type: str = "proctrack/auto"  # cgroup when the host has a usable hierarchy
    # cgroup.conf beside slurm.conf (cgroupconf.py): CgroupPlugin, and what a job's cgroup
    # enforces (ConstrainDevices/Cores/RAMSpace; YES unless the file says NO)
    cgroup_plugin: str = "autodetect"
    constrain_devices: bool = True
    constrain_cores: bool = True
    constrain_ram_space: bool = True
    gres_types: list[str] = field(default_factory=list)
    nodes: dict[str, NodeConfig] = field(default_factory=dict)
    partitions: dict[str, Partition] = field(default_factory=dict)
    gres_devices: dict[str, list[GresDevice]] = field(default_factory=dict)
    gres_autodetect: str = ""
    qos: dict[str, Qos] = field(default_factory=lambda: {"normal": Qos("normal")})
    preempt_type: str = "preempt/none"
    preempt_mode: str = "OFF"
    preempt_exempt_time: int = 0  # seconds a job runs before it may be preempted
    scheduler_parameters: dict[str, str] = field(default_factory=dict)  # bf_max_job_test=...
    # ---- security and limits (Slurm's names and defaults)
    slurm_user: str = "root"  # SlurmUser: an operator, as root is
    admin_users: list[str] = field(default_factory=list)  # AdminUsers: ours, see README Security
    disable_root_jobs: bool = False  # DisableRootJobs=YES: root may not submit jobs
    private_data: list[str] = field(default_factory=list)  # PrivateData=jobs,...
    max_array_size: int = 1001  # MaxArraySize: array indices lie in [0, MaxArraySize)
    max_job_count: int = 10000  # MaxJobCount: jobs the controller holds at once
    auth_socket: str = "/run/pyslurm-lite/sack.socket"  # AuthInfo=socket=PATH
    cred_expire: int = 120  # AuthInfo=cred_expire=SECONDS: launch credentials' lifetime
    token_ttl: int = 60  # AuthInfo=ttl=SECONDS: user tokens' lifetime (at most 60)
    tls_ca: str = ""  # TLSParameters=ca_cert_file=...: the CA that signed the daemons' certificates
    tls_cert: str = ""  # TLSParameters=cert_file=...: this cluster's daemon certificate
    tls_key: str = ""  # TLSParameters=cert_key_file=...
    # PropagateResourceLimits / PropagateResourceLimitsExcept: which of the submitter's limits
    # commands send with a job (rlimits.py)
    propagate_rlimits: str = "ALL"
    propagate_rlimits_except: str = ""
    # ---- accounting and observability (#15)
    # AccountingStorageEnforce=associations,limits,qos,safe: which rules of the accounting
    # database submissions and the scheduler obey (lower case; empty: none)
    accounting_storage_enforce: list[str] = field(default_factory=list)
    priority_flags: list[str] = field(default_factory=list)  # PriorityFlags= (upper case)
    priority_calc_period: int = 5 * 60  # PriorityCalcPeriod (seconds): usage charged this often
    priority_weight_tres: dict[str, float] = field(default_factory=dict)  # PriorityWeightTRES
    acct_gather_frequency: int = 30  # JobAcctGatherFrequency (task=): seconds between samples
    job_acct_gather_type: str = "jobacct_gather/cgroup"  # JobAcctGatherType
    idle_gpu_threshold: float = 0.0  # IdleGPUThreshold (ours): percent a GPU must stay under
    idle_gpu_time: int = 0  # IdleGPUTime (ours): seconds under it before a job is flagged; 0 off
    idle_gpu_action: str = "none"  # IdleGPUAction (ours): none | notify | cancel | requeue
    # GpuHealthAction (ours): what a GPU fault the agent sees (XID, ECC, retired pages, lost)
    # does: drain the node (Slurm's way), take only that GPU out of scheduling, or log it
    gpu_health_action: str = "drain"
    # ForeignGpuAction (ours): a GPU busy with processes no job started is kept out of
    # scheduling (exclude) or only reported (report)
    foreign_gpu_action: str = "exclude"
    mail_prog: str = "/bin/mail"  # MailProg: called as MailProg -s SUBJECT USER, body on stdin
    mail_domain: str = ""  # MailDomain: appended to user names without an @
    smtp_server: str = ""  # SmtpServer=host[:port] (ours): mail sent over SMTP instead
    smtp_from: str = ""  # SmtpFrom (ours): the sender address
    webhook_url: str = ""  # WebhookURL (ours): JSON POST for every job notification
    webhook_secret_file: str = ""  # WebhookSecretFile (ours): HMAC-SHA256 key (root-owned)
    webhook_format: str = "json"  # WebhookFormat (ours): json | slack
    # WebhookAllowedURLs (ours): comma-separated URL prefixes a job's --mail-user=https://... may
    # start with (empty: no per-job webhooks)
    webhook_allowed_urls: str = ""
    metrics_port: int = 0  # MetricsPort (ours): the controller's Prometheus /metrics; 0 off
    # ---- network topology (topology.py)
    topology_plugin: str = "topology/none"  # TopologyPlugin: topology/tree reads topology.conf
    topology: object = None  # topology.Topology when topology/tree, else None
    max_switch_wait: int = 300  # SchedulerParameters=max_switch_wait= (seconds): --switches' wait cap
    bf_window: int = 1440  # SchedulerParameters=bf_window= (minutes): how far starts are projected
    bf_interval: int = 30  # SchedulerParameters=bf_interval= (seconds): how often they are projected
    # SchedulerParameters=sched_policy= (ours): a name of sched/policy.POLICIES; easy is EASY
    sched_policy: str = "easy"
    extra: dict[str, str] = field(default_factory=dict)
    # "file:line: Key=Value" of every key read but not implemented: daemons warn with each
    ignored: list[str] = field(default_factory=list)

    @property
    def controller_target(self) -> str:
        return f"{self.controller_addr or self.controller_host}:{self.controller_port}"

    @property
    def controller_targets(self) -> list[str]:
        """host:port of every controller, the primary first: where clients and agents call, in
        this order."""
        if not self.controller_hosts:
            return [self.controller_target]
        return [f"{addr or name}:{port or self.controller_port}"
                for name, addr, port in self.controller_hosts]

    @property
    def db_url(self) -> str:
        return self.database_url or f"sqlite:///{os.path.join(self.state_save_location, 'state.db')}"

    @property
    def key_path(self) -> str:
        return self.auth_key_file or os.path.join(self.state_save_location, "auth.key")

    def default_partition(self) -> Partition | None:
        for p in self.partitions.values():
            if p.default:
                return p
        return next(iter(self.partitions.values()), None)

    def node_partitions(self, node: str) -> list[str]:
        return [p.name for p in self.partitions.values() if node in p.nodes]


def warn_ignored(cfg: Config, log) -> None:
    """What a daemon says at start about each key it read and does not implement (Slurm's
    daemons name the keys they do not know): nothing a Slurm user wrote is dropped unsaid."""
    for item in cfg.ignored:
        log.warning("%s: not implemented by pyslurm-lite, ignored", item)
    if exposed_database_password(cfg):
        log.warning("%s: DatabaseURL holds a password and the file is readable by group or others "
                    "(every command reads slurm.conf): anyone with it can write jobs that run as "
                    "root; put the password in the controller user's ~/.pgpass (README: PostgreSQL)",
                    cfg.path)


def exposed_database_password(cfg: Config) -> bool:
    """A password in DatabaseURL of a slurm.conf that users other than its owner can read."""
    m = re.match(r"[\w+.-]+://[^/@:]*:([^/@]*)@", cfg.database_url or "")
    if not m or not m.group(1) or not cfg.path:
        return False
    try:
        return bool(os.stat(cfg.path).st_mode & 0o044)
    except OSError:
        return False


def conf_path(explicit: str | None = None) -> str:
    return explicit or os.environ.get(ENV_CONF) or DEFAULT_CONF


def load(path: str | None = None) -> Config:
    """Read slurm.conf (and gres.conf, cgroup.conf beside it); ConfigError when missing or
    malformed."""
    path = conf_path(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError(f"cannot read configuration file {path}: {e.strerror}") from None
    cfg = parse(text, path)
    gres_path = os.path.join(os.path.dirname(os.path.abspath(path)), "gres.conf")
    if os.path.exists(gres_path):
        with open(gres_path, encoding="utf-8") as f:
            parse_gres(f.read(), gres_path, cfg)
    if cfg.topology_plugin == "topology/tree":
        from . import topology
        cfg.topology = topology.load(os.path.dirname(os.path.abspath(path)), list(cfg.nodes))
    from .cgroupconf import load_beside  # it reuses this module's line parsing
    load_beside(path, cfg)
    return cfg


_SHARED: dict[tuple, Config] = {}
BESIDE = ("gres.conf", "cgroup.conf", "topology.conf")  # what load() reads beside slurm.conf


def load_shared(path: str | None = None) -> Config:
    """load() for a client that only reads the result: parsed once per process while the files
    are unchanged. sbatch wants slurm.conf twice (the limits to propagate, the controller's
    address), and one parse is a tenth of its start-up."""
    path = conf_path(path)
    stamp = (path, *(_file_stamp(f) for f in (path, *(os.path.join(
        os.path.dirname(os.path.abspath(path)), name) for name in BESIDE))))
    if stamp not in _SHARED:
        _SHARED.clear()
        _SHARED[stamp] = load(path)
    return _SHARED[stamp]


def _file_stamp(path: str) -> tuple | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _pairs(line: str, where: str) -> list[tuple[str, str]]:
    try:
        words = shlex.split(line, comments=False, posix=True)
    except ValueError as e:
        raise ConfigError(f"{where}: cannot parse line: {e}") from None
    pairs = []
    for w in words:
        if "=" not in w:
            raise ConfigError(f"{where}: expected Key=Value, got '{w}'")
        k, v = w.split("=", 1)
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", k):
            raise ConfigError(f"{where}: bad key '{k}'")
        pairs.append((k.lower(), v))
    return pairs


def _lines(text: str, path: str):
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if line:
            yield f"{path}:{no}", line


def parse_gres_spec(spec: str, where: str = "") -> list[GresRequest]:
    """'gpu:a100:4,gpu:2' -> GresRequests; Slurm's NodeName Gres= and --gres syntax."""
    out = []
    for item in filter(None, spec.split(",")):
        parts = item.split(":")
        name = parts[0]
        count, gtype = 1, ""
        if len(parts) == 2:
            if parts[1].isascii() and parts[1].isdigit() and len(parts[1]) <= 9:
                count = int(parts[1])
            else:
                gtype = parts[1]
        elif len(parts) == 3:
            gtype, count_s = parts[1], parts[2]
            if not (count_s.isascii() and count_s.isdigit() and len(count_s) <= 9):
                raise ConfigError(f"{where}: bad gres count in '{item}'".lstrip(": "))
            count = int(count_s)
        elif len(parts) > 3 or not name:
            raise ConfigError(f"{where}: bad gres '{item}'".lstrip(": "))
        if not re.fullmatch(r"[A-Za-z][\w.-]*", name):
            raise ConfigError(f"{where}: bad gres name in '{item}'".lstrip(": "))
        out.append(GresRequest(name=name, type=gtype, count=count))
    return out


_SIMPLE_KEYS = {
    "clustername": ("cluster_name", str),
    "slurmctldport": ("controller_port", int),
    "slurmdport": ("slurmd_port", int),
    "statesavelocation": ("state_save_location", str),
    "databaseurl": ("database_url", str),
    "authkeyfile": ("auth_key_file", str),
    "slurmdspooldir": ("slurmd_spool_dir", str),
    "mpscontrolprogram": ("mps_control_program", str),
    "defmempercpu": ("def_mem_per_cpu", int),
    "defmempernode": ("def_mem_per_node", int),
    "killwait": ("kill_wait", int),
    "slurmdtimeout": ("slurmd_timeout", int),
    "heartbeatinterval": ("heartbeat_interval", float),
    "returntoservice": ("return_to_service", int),
    "maxbatchrequeue": ("max_batch_requeue", int),
    "healthcheckprogram": ("health_check_program", str),
    "healthcheckinterval": ("health_check_interval", int),
    "taskprolog": ("task_prolog", str),
    "taskepilog": ("task_epilog", str),
    "firstjobid": ("first_job_id", int),
    "minjobage": ("min_job_age", int),
    "taskplugin": ("task_plugin", str),
    "mpidefault": ("mpi_default", str),
    "proctracktype": ("proctrack_type", str),
    "slurmuser": ("slurm_user", str),
    "maxarraysize": ("max_array_size", int),
    "maxjobcount": ("max_job_count", int),
    "propagateresourcelimits": ("propagate_rlimits", str),
    "propagateresourcelimitsexcept": ("propagate_rlimits_except", str),
    "idlegputime": ("idle_gpu_time", int),
    "mailprog": ("mail_prog", str),
    "maildomain": ("mail_domain", str),
    "smtpserver": ("smtp_server", str),
    "smtpfrom": ("smtp_from", str),
    "webhookurl": ("webhook_url", str),
    "webhooksecretfile": ("webhook_secret_file", str),
    "webhookallowedurls": ("webhook_allowed_urls", str),
    "metricsport": ("metrics_port", int),
    "restport": ("rest_port", int),
    "slurmctldtimeout": ("slurmctld_timeout", int),
    "idlegputhreshold": ("idle_gpu_threshold", float),
}
CHOICES = {  # keys whose value is one of a few words
    "idlegpuaction": ("idle_gpu_action", ("none", "notify", "cancel", "requeue")),
    "gpuhealthaction": ("gpu_health_action", ("drain", "gpu", "none")),
    "foreigngpuaction": ("foreign_gpu_action", ("exclude", "report")),
    "webhookformat": ("webhook_format", ("json", "slack")),
    "jobacctgathertype": ("job_acct_gather_type", ("jobacct_gather/cgroup", "jobacct_gather/linux",
                                                   "jobacct_gather/none")),
}
ENFORCE_WORDS = ("associations", "limits", "qos", "safe", "nojobs", "nosteps", "wckeys", "all")
ENFORCE_DONE = ("associations", "limits", "qos")

EXTRA_READ = {"schedulertype"}  # keys kept in Config.extra that some module reads from there
NODE_KEYS = {"nodename", "nodeaddr", "port", "metricsport", "cpus", "realmemory", "gres", "feature", "features",
             "weight", "sockets", "corespersocket", "threadspercore"}
PARTITION_KEYS = {"partitionname", "nodes", "default", "maxtime", "defaulttime", "maxnodes",
                  "state", "prioritytier", "allowaccounts", "allowgroups", "preemptmode",
                  "gracetime", "priorityjobfactor", "tresbillingweights"}

AUTH_INFO_KEYS = {"socket": "auth_socket", "cred_expire": "cred_expire", "ttl": "token_ttl"}
TLS_KEYS = {"ca_cert_file": "tls_ca", "cert_file": "tls_cert", "cert_key_file": "tls_key"}


def parse(text: str, path: str = "slurm.conf") -> Config:
    cfg = Config(path=path)
    for where, line in _lines(text, path):
        pairs = _pairs(line, where)
        key, value = pairs[0]
        if key == "nodename":
            _node_line(cfg, pairs, where)
        elif key == "partitionname":
            _partition_line(cfg, pairs, where)
        elif key == "qosname":
            _qos_line(cfg, pairs, where)
        elif len(pairs) > 1:
            raise ConfigError(f"{where}: only NodeName and PartitionName lines take several keys")
        else:
            _simple_key(cfg, key, value, where)
    _validate(cfg)
    return cfg


def _simple_key(cfg: Config, key: str, value: str, where: str) -> None:
    if key == "slurmctldhost":
        # SlurmctldHost=name(addr) as in Slurm, one line per controller (primary first); ours:
        # name(addr:port) when two controllers share an address
        m = re.fullmatch(r"([^()]+)(?:\(([^():]+)(?::(\d{1,5}))?\))?", value.strip())
        if not m:
            raise ConfigError(f"{where}: bad SlurmctldHost={value}")
        name, addr, port = m.group(1).strip(), m.group(2) or "", int(m.group(3) or 0)
        if port > 65535:
            raise ConfigError(f"{where}: bad port in SlurmctldHost={value}")
        if not cfg.controller_hosts:
            cfg.controller_host, cfg.controller_addr = name, addr
        cfg.controller_hosts.append((name, addr, port))
    elif key == "authalttypes":
        cfg.auth_alt_types = [t.strip() for t in value.split(",") if t.strip()]
        bad = [t for t in cfg.auth_alt_types if t != "auth/jwt"]
        if bad:
            raise ConfigError(f"{where}: unknown AuthAltTypes={','.join(bad)}; valid: auth/jwt")
    elif key == "authaltparameters":
        _options(cfg, value, {"jwt_key": "jwt_key_file"}, "AuthAltParameters", where)
    elif key == "jobrequeue":
        cfg.job_requeue = value.strip() not in ("0", "no", "NO")
    elif key == "priorityweighttres":
        cfg.priority_weight_tres = _tres_weights(value, "PriorityWeightTRES", where, units=False)
        _note_unweighable(cfg, cfg.priority_weight_tres, "PriorityWeightTRES", where)
    elif key == "accountingstorageenforce":
        words = [w.strip().lower() for w in value.split(",") if w.strip()]
        bad = [w for w in words if w not in ENFORCE_WORDS]
        if bad:
            raise ConfigError(f"{where}: unknown AccountingStorageEnforce={','.join(bad)}; "
                              f"valid: {', '.join(ENFORCE_WORDS)}")
        if "all" in words:
            words = ["associations", "limits", "qos", "safe", "wckeys"]
        if ("limits" in words or "qos" in words or "safe" in words) and "associations" not in words:
            words.append("associations")  # as Slurm: limits and qos imply associations
        cfg.accounting_storage_enforce = words
        # read but without effect here (no WCKeys, no job-usage precheck, always store jobs and
        # steps): named by the daemons' start-up warning, never dropped unsaid
        cfg.ignored += [f"{where}: AccountingStorageEnforce={w}" for w in words if w not in ENFORCE_DONE]
    elif key == "priorityflags":
        cfg.priority_flags = [w.strip().upper() for w in value.split(",") if w.strip()]
    elif key == "prioritycalcperiod":
        cfg.priority_calc_period = _seconds_or_minutes(value, "PriorityCalcPeriod", where)
    elif key == "jobacctgatherfrequency":
        cfg.acct_gather_frequency = _gather_frequency(value, where)
    elif key in CHOICES:
        attr, valid = CHOICES[key]
        if value.lower() not in valid:
            raise ConfigError(f"{where}: unknown {key}={value}; valid: {', '.join(valid)}")
        setattr(cfg, attr, value.lower())
    elif key.startswith("priorityweight"):
        cfg.priority_weights[key[len("priorityweight"):]] = _int(value, key, where)
    elif key in ("prioritymaxage", "prioritydecayhalflife"):
        try:
            minutes = parse_time_limit(value)
        except Exception:
            raise ConfigError(f"{where}: bad {key}={value}") from None
        setattr(cfg, "priority_max_age" if key == "prioritymaxage" else "priority_decay_half_life", minutes)
    elif key == "prioritytype":
        if value not in ("priority/basic", "priority/multifactor"):
            raise ConfigError(f"{where}: unknown PriorityType={value}; valid: priority/basic, priority/multifactor")
        cfg.priority_type = value
    elif key == "preempttype":
        if value not in PREEMPT_TYPES:
            raise ConfigError(f"{where}: unknown PreemptType={value}; valid: {', '.join(PREEMPT_TYPES)}")
        cfg.preempt_type = value
    elif key == "preemptmode":
        cfg.preempt_mode = _preempt_mode(value, where)
    elif key == "preemptexempttime":
        cfg.preempt_exempt_time = _seconds(value, key, where)
    elif key == "schedulerparameters":
        for item in filter(None, value.split(",")):
            k, _, v = item.partition("=")
            cfg.scheduler_parameters[k.strip().lower()] = v.strip()
    elif key in ("adminusers", "privatedata"):
        names = [n.strip() for n in value.split(",") if n.strip()]
        if key == "privatedata":
            names = [n.lower() for n in names]
        setattr(cfg, "admin_users" if key == "adminusers" else "private_data", names)
    elif key == "disablerootjobs":
        cfg.disable_root_jobs = _yes_no(value, "DisableRootJobs", where)
    elif key == "authinfo":
        _options(cfg, value, AUTH_INFO_KEYS, "AuthInfo", where)
    elif key == "tlsparameters":
        _options(cfg, value, TLS_KEYS, "TLSParameters", where)
    elif key == "topologyplugin":
        from .topology import PLUGINS, plugin_of
        cfg.topology_plugin = plugin_of(value, where)
        if cfg.topology_plugin not in PLUGINS:  # Slurm's others: said at start, not applied
            cfg.ignored.append(f"{where}: TopologyPlugin={value} (only topology/tree is implemented)")
    elif key == "grestypes":
        cfg.gres_types = [t for t in value.split(",") if t]
    elif key in _SIMPLE_KEYS:
        attr, kind = _SIMPLE_KEYS[key]
        if kind is int:
            setattr(cfg, attr, _int(value, key, where))
        elif kind is float:
            try:
                setattr(cfg, attr, float(value))
            except ValueError:
                raise ConfigError(f"{where}: {key}={value} is not a number") from None
        else:
            setattr(cfg, attr, value)
    else:
        # Other Slurm keys are kept so a real slurm.conf loads, and named by the daemons'
        # warnings (ignored) unless something reads them from extra.
        cfg.extra[key] = value
        if key not in EXTRA_READ:
            cfg.ignored.append(f"{where}: {key}={value}")


def _options(cfg: Config, value: str, known: dict[str, str], key: str, where: str) -> None:
    """Key=opt=value,opt=value (AuthInfo, TLSParameters): each option to its Config field."""
    for item in filter(None, value.split(",")):
        opt, eq, v = item.partition("=")
        opt = opt.strip().lower()
        if opt not in known or not eq:
            raise ConfigError(f"{where}: unknown {key} option '{item}'; valid: "
                              f"{', '.join(o + '=' for o in known)}")
        attr = known[opt]
        if isinstance(getattr(cfg, attr), int):
            setattr(cfg, attr, _int(v, f"{key} {opt}", where, 1))
        else:
            setattr(cfg, attr, v.strip())


def _note_unweighable(cfg: Config, weights: dict[str, float], key: str, where: str) -> None:
    """Weights of TRES no job counts here (energy, licenses, billing itself) change nothing:
    say so at start rather than drop them unsaid."""
    cfg.ignored += [f"{where}: {key} weight {name}={w:g} (no job counts {name} here)"
                    for name, w in weights.items()
                    if name in ("energy", "billing") or name.startswith("license/")]


def _note_ignored(cfg: Config, pairs, known: set[str], where: str) -> None:
    cfg.ignored += [f"{where}: {k}={v} (on a {pairs[0][0]} line)" for k, v in pairs if k not in known]


def _node_line(cfg: Config, pairs, where: str) -> None:
    _note_ignored(cfg, pairs, NODE_KEYS, where)
    names = expand(pairs[0][1], where)
    if pairs[0][1].upper() == "DEFAULT":
        raise ConfigError(f"{where}: NodeName=DEFAULT is not supported")
    opts = dict(pairs[1:])
    addrs = expand(opts["nodeaddr"], where) if "nodeaddr" in opts else []
    if addrs and len(addrs) not in (1, len(names)):
        raise ConfigError(f"{where}: NodeAddr lists {len(addrs)} addresses for {len(names)} nodes")
    ports = expand(opts["port"], where) if "port" in opts else []
    if ports and len(ports) not in (1, len(names)):
        raise ConfigError(f"{where}: Port lists {len(ports)} ports for {len(names)} nodes")
    for i, name in enumerate(names):
        node = NodeConfig(name=name)
        node.addr = (addrs[i] if len(addrs) > 1 else addrs[0]) if addrs else name
        if ports:
            node.port = _int(ports[i] if len(ports) > 1 else ports[0], "Port", where, 1)
        node.cpus = _int(opts.get("cpus", "1"), "CPUs", where, 1)
        node.real_memory = _int(opts.get("realmemory", "1"), "RealMemory", where, 1)
        node.gres = parse_gres_spec(opts.get("gres", ""), where)
        node.features = [f for f in re.split(r"[,&]", opts.get("feature", opts.get("features", ""))) if f]
        node.weight = _int(opts.get("weight", "1"), "Weight", where, 0)
        node.sockets = _int(opts.get("sockets", "1"), "Sockets", where, 1)
        node.cores_per_socket = _int(opts.get("corespersocket", "0"), "CoresPerSocket", where)
        node.threads_per_core = _int(opts.get("threadspercore", "1"), "ThreadsPerCore", where, 1)
        node.metrics_port = _int(opts.get("metricsport", "0"), "MetricsPort", where)
        if name in cfg.nodes:
            raise ConfigError(f"{where}: node {name} is declared twice")
        cfg.nodes[name] = node


def _partition_line(cfg: Config, pairs, where: str) -> None:
    _note_ignored(cfg, pairs, PARTITION_KEYS, where)
    name = pairs[0][1]
    opts = dict(pairs[1:])
    part = Partition(name=name)
    nodes_expr = opts.get("nodes", "")
    if nodes_expr.upper() == "ALL":
        part.nodes = list(cfg.nodes)
    elif nodes_expr:
        part.nodes = expand(nodes_expr, where)
        unknown = [n for n in part.nodes if n not in cfg.nodes]
        if unknown:  # as in Slurm, nodes are declared before the partitions that use them
            raise ConfigError(f"{where}: partition {name} names unknown nodes {collect(unknown)}")
    part.default = opts.get("default", "NO").upper() == "YES"
    try:
        part.max_time = parse_time_limit(opts.get("maxtime", "UNLIMITED"))
        part.default_time = parse_time_limit(opts.get("defaulttime", "UNLIMITED"))
    except Exception as e:  # InvalidRequest from the time parser, re-worded for a config file
        raise ConfigError(f"{where}: {getattr(e, 'message', e)}") from None
    max_nodes = opts.get("maxnodes", "UNLIMITED")
    part.max_nodes = UNLIMITED if max_nodes.upper() == "UNLIMITED" else _int(max_nodes, "MaxNodes", where, 1)
    part.state = opts.get("state", "UP").upper()
    if part.state not in ("UP", "DOWN", "DRAIN", "INACTIVE"):
        raise ConfigError(f"{where}: bad partition State={part.state}")
    part.priority_tier = _int(opts.get("prioritytier", "1"), "PriorityTier", where)
    part.allow_accounts = _names(opts.get("allowaccounts", "ALL"))
    part.allow_groups = _names(opts.get("allowgroups", "ALL"))
    part.preempt_mode = _preempt_mode(opts["preemptmode"], where) if "preemptmode" in opts else ""
    part.grace_time = _seconds(opts.get("gracetime", "0"), "GraceTime", where)
    part.priority_job_factor = _int(opts.get("priorityjobfactor", "1"), "PriorityJobFactor", where)
    part.tres_billing_weights = _tres_weights(opts.get("tresbillingweights", ""), "TRESBillingWeights", where)
    _note_unweighable(cfg, part.tres_billing_weights, "TRESBillingWeights", where)
    if name in cfg.partitions:
        raise ConfigError(f"{where}: partition {name} is declared twice")
    cfg.partitions[name] = part


PREEMPT_TYPES = ("preempt/none", "preempt/partition_prio", "preempt/qos")


def _qos_line(cfg: Config, pairs, where: str) -> None:
    """QOSName=high Priority=100 MaxWall=1:00:00 MaxJobsPerUser=2 MaxTRESPerUser=gres/gpu=2
    Preempt=normal PreemptMode=REQUEUE GraceTime=30 PreemptExemptTime=00:05:00 — what
    `sacctmgr add qos` would hold in Slurm's database."""
    name = pairs[0][1]
    opts = dict(pairs[1:])
    unknown = set(opts) - {"priority", "maxwall", "maxjobsperuser", "maxsubmitjobsperuser", "maxtresperuser", "preempt",
                           "preemptmode", "gracetime", "preemptexempttime"}
    if unknown:
        raise ConfigError(f"{where}: unknown QOS option(s) {', '.join(sorted(unknown))}")
    qos = Qos(name=name, priority=_int(opts.get("priority", "0"), "Priority", where))
    if "maxwall" in opts:
        try:
            qos.max_wall = parse_time_limit(opts["maxwall"])
        except Exception:
            raise ConfigError(f"{where}: bad MaxWall={opts['maxwall']}") from None
    qos.max_jobs_per_user = _limit(opts.get("maxjobsperuser", "UNLIMITED"), "MaxJobsPerUser", where)
    qos.max_submit_jobs_per_user = _limit(opts.get("maxsubmitjobsperuser", "UNLIMITED"),
                                          "MaxSubmitJobsPerUser", where)
    for tres in filter(None, opts.get("maxtresperuser", "").split(",")):
        kind, _, count = tres.rpartition("=")
        if kind not in ("gres/gpu", "gpu"):
            raise ConfigError(f"{where}: MaxTRESPerUser supports gres/gpu=N, not '{tres}'")
        qos.max_gpus_per_user = _int(count, "MaxTRESPerUser", where)
    qos.preempt = _names(opts.get("preempt", ""))
    qos.preempt_mode = _preempt_mode(opts["preemptmode"], where) if "preemptmode" in opts else ""
    qos.grace_time = _seconds(opts.get("gracetime", "0"), "GraceTime", where)
    if "preemptexempttime" in opts:
        qos.preempt_exempt_time = _seconds(opts["preemptexempttime"], "PreemptExemptTime", where)
    cfg.qos[name] = qos


PLUGIN_CHOICES = {
    "task_plugin": ("TaskPlugin", ("task/cgroup", "task/affinity", "task/none")),
    "proctrack_type": ("ProctrackType", ("proctrack/auto", "proctrack/cgroup", "proctrack/pgid")),
    "mpi_default": ("MpiDefault", ("none", "pmi2")),  # agent/pmi.py's TYPES
}


def _validate(cfg: Config) -> None:
    for attr, (key, valid) in PLUGIN_CHOICES.items():
        for value in getattr(cfg, attr).split(","):
            if value not in valid:
                raise ConfigError(f"{cfg.path}: unknown {key}={value}; valid: {', '.join(valid)}")
    for qos in cfg.qos.values():
        unknown = [q for q in qos.preempt if q not in cfg.qos]
        if unknown:
            raise ConfigError(f"{cfg.path}: QOS {qos.name} may preempt unknown QOS {', '.join(unknown)}")
    if cfg.token_ttl > 60:
        raise ConfigError(f"{cfg.path}: AuthInfo=ttl={cfg.token_ttl}: a user token lives at most 60 s")
    if cfg.max_array_size < 1:
        raise ConfigError(f"{cfg.path}: MaxArraySize={cfg.max_array_size} must be at least 1")
    _validate_rlimits(cfg)
    from .topology import max_switch_wait
    cfg.max_switch_wait = max_switch_wait(cfg.scheduler_parameters, cfg.path)
    cfg.bf_window = _bf_param("bf_window", 1440, 43200, cfg)
    cfg.bf_interval = _bf_param("bf_interval", 30, 10800, cfg)
    cfg.sched_policy = _sched_policy(cfg)
    if cfg.nodes and not cfg.partitions:
        raise ConfigError(f"{cfg.path}: no PartitionName line: jobs would have nowhere to run")


def _bf_param(key: str, default: int, most: int, cfg: Config) -> int:
    """SchedulerParameters=bf_window=MINUTES (1 to 43200, default 1440) or bf_interval=SECONDS
    (1 to 10800, default 30): Slurm's ranges and defaults."""
    text = cfg.scheduler_parameters.get(key)
    if text is None:
        return default
    if not re.fullmatch(r"[0-9]{1,5}", text.strip()) or not 1 <= int(text) <= most:
        raise ConfigError(f"{cfg.path}: bad {key}={text} (1 to {most})")
    return int(text)


def _sched_policy(cfg: Config) -> str:
    """SchedulerParameters=sched_policy=NAME: one of sched/policy.POLICIES (default easy)."""
    from .sched.policy import POLICIES
    name = cfg.scheduler_parameters.get("sched_policy", "easy")
    if name not in POLICIES:
        raise ConfigError(f"{cfg.path}: unknown SchedulerParameters=sched_policy={name}; valid: "
                          + ", ".join(POLICIES))
    return name


def _validate_rlimits(cfg: Config) -> None:
    from .rlimits import BadRlimits, parse as parse_rlimits
    for key, value in (("PropagateResourceLimits", cfg.propagate_rlimits),
                       ("PropagateResourceLimitsExcept", cfg.propagate_rlimits_except)):
        try:
            parse_rlimits(value)
        except BadRlimits as e:
            raise ConfigError(f"{cfg.path}: {key}={value}: {e}") from None


def parse_gres(text: str, path: str, cfg: Config) -> None:
    """gres.conf: AutoDetect=nvml, or Name=gpu [Type=t] File=/dev/nvidia[0-3] [NodeName=...]."""
    for where, line in _lines(text, path):
        opts = dict(_pairs(line, where))
        if set(opts) == {"autodetect"}:
            cfg.gres_autodetect = opts["autodetect"].lower()
            continue
        if "name" not in opts:
            raise ConfigError(f"{where}: a gres.conf line needs Name=")
        nodes = expand(opts["nodename"], where) if "nodename" in opts else list(cfg.nodes)
        files = expand(opts["file"], where) if "file" in opts else []
        count = _int(opts.get("count", str(len(files) or 1)), "Count", where, 1)
        links, cores = _gres_topology(opts, where)
        for node in nodes:
            devs = cfg.gres_devices.setdefault(node, [])
            for i in range(max(count, len(files))):
                devs.append(GresDevice(name=opts["name"], type=opts.get("type", ""),
                                       file=files[i] if i < len(files) else "", index=len(devs),
                                       links=list(links), cores=cores))


def _gres_topology(opts: dict, where: str) -> tuple[list[int], str]:
    """gres.conf Links= ("-1,2,0,0": NVLinks to each GPU, -1 itself) and Cores= ("0-3,8")."""
    try:
        links = [int(v) for v in opts["links"].split(",")] if opts.get("links") else []
    except ValueError:
        raise ConfigError(f"{where}: Links={opts['links']}: want NVLink counts like -1,2,0,0") from None
    cores = opts.get("cores", "")
    if cores and not re.fullmatch(r"\d+(-\d+)?(,\d+(-\d+)?)*", cores):
        raise ConfigError(f"{where}: Cores={cores}: want a core list like 0-3,8")
    return links, cores
