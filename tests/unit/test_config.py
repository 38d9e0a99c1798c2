"""config.py: slurm.conf and gres.conf parsing, hostlists, and errors that name file:line."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from pyslurm_lite import config
from pyslurm_lite.errors import ConfigError
from pyslurm_lite.model import UNLIMITED, GresRequest

PATH = "/etc/pyslurm-lite/slurm.conf"

VALID = """\
# a comment line, then a blank one

ClusterName=lab
SlurmctldHost=head(10.1.0.1)
SlurmctldPort=7817
StateSaveLocation=/var/spool/lab
DefMemPerCPU=500
KillWait=10   # trailing comment
HeartbeatInterval=0.5
SchedulerType=sched/backfill
NodeName=gpu[01-02] NodeAddr=10.1.0.[11-12] Port=[7001-7002] CPUs=32 RealMemory=256000 Gres=gpu:a100:4 Feature=ib,nvme Weight=5
NodeName=cpu1 CPUs=8 RealMemory=16000
PartitionName=gpu Nodes=gpu[01-02] Default=YES MaxTime=2-00:00:00 DefaultTime=60 State=UP
PartitionName=all Nodes=ALL MaxNodes=2 State=DOWN
"""


@pytest.fixture(scope="module")
def cfg():
    return config.parse(VALID, PATH)


def test_valid_config_scalars(cfg):
    assert (cfg.cluster_name, cfg.controller_host, cfg.controller_addr, cfg.controller_port) == \
        ("lab", "head", "10.1.0.1", 7817)
    assert cfg.controller_target == "10.1.0.1:7817"
    assert cfg.state_save_location == "/var/spool/lab"
    assert cfg.db_url == "sqlite:////var/spool/lab/state.db"
    assert (cfg.def_mem_per_cpu, cfg.kill_wait, cfg.heartbeat_interval) == (500, 10, 0.5)
    assert cfg.extra == {"schedulertype": "sched/backfill"}  # unknown Slurm keys are kept


def test_valid_config_nodes(cfg):
    assert list(cfg.nodes) == ["gpu01", "gpu02", "cpu1"]
    g1, g2, c1 = cfg.nodes["gpu01"], cfg.nodes["gpu02"], cfg.nodes["cpu1"]
    assert (g1.addr, g1.port, g2.addr, g2.port) == ("10.1.0.11", 7001, "10.1.0.12", 7002)
    assert (g1.cpus, g1.real_memory, g1.weight, g1.features) == (32, 256000, 5, ["ib", "nvme"])
    assert g1.gres == [GresRequest("gpu", "a100", 4)] and g1.gpu_count() == 4
    assert (c1.addr, c1.port, c1.cpus, c1.gres, c1.gpu_count()) == ("cpu1", 0, 8, [], 0)


def test_valid_config_partitions(cfg):
    gpu, everything = cfg.partitions["gpu"], cfg.partitions["all"]
    assert (gpu.nodes, gpu.default, gpu.max_time, gpu.default_time, gpu.state) == \
        (["gpu01", "gpu02"], True, 2880, 60, "UP")
    assert (everything.nodes, everything.default, everything.max_nodes, everything.state) == \
        (["gpu01", "gpu02", "cpu1"], False, 2, "DOWN")
    assert everything.max_time == UNLIMITED
    assert cfg.default_partition().name == "gpu"
    assert cfg.node_partitions("cpu1") == ["all"]
    assert cfg.node_partitions("gpu02") == ["gpu", "all"]


def test_without_default_the_first_partition_is_default():
    cfg = config.parse("NodeName=n1\nPartitionName=a Nodes=ALL\nPartitionName=b Nodes=ALL\n")
    assert cfg.default_partition().name == "a"


@pytest.mark.parametrize("expr, names", [
    ("node1", ["node1"]),
    ("node[1-3]", ["node1", "node2", "node3"]),
    ("gpu[01-03,07]", ["gpu01", "gpu02", "gpu03", "gpu07"]),
    ("a[1-2],b1", ["a1", "a2", "b1"]),
    ("rack[1-2]-n[1-2]", ["rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"]),
])
def test_node_hostlists(expr, names):
    cfg = config.parse(f"NodeName={expr} CPUs=2\nPartitionName=p Nodes=ALL\n", PATH)
    assert list(cfg.nodes) == names
    assert config.expand(expr) == names
    assert config.expand(config.collect(names)) == names


@pytest.mark.parametrize("line, addrs, ports", [
    ("NodeName=n[1-3]", ["n1", "n2", "n3"], [0, 0, 0]),                    # addr defaults to name
    ("NodeName=n[1-3] NodeAddr=127.0.0.1", ["127.0.0.1"] * 3, [0, 0, 0]),  # one addr for all
    ("NodeName=n[1-3] NodeAddr=10.0.0.[1-3]", ["10.0.0.1", "10.0.0.2", "10.0.0.3"], [0, 0, 0]),
    ("NodeName=n[1-3] NodeAddr=h[7-9] Port=6818", ["h7", "h8", "h9"], [6818] * 3),
    ("NodeName=n[1-3] Port=[7001-7003]", ["n1", "n2", "n3"], [7001, 7002, 7003]),
])
def test_node_addr_and_port_lists(line, addrs, ports):
    cfg = config.parse(f"{line}\nPartitionName=p Nodes=ALL\n", PATH)
    assert [n.addr for n in cfg.nodes.values()] == addrs
    assert [n.port for n in cfg.nodes.values()] == ports


# Each bad config names the file and the line of the offending statement.
@pytest.mark.parametrize("text, line, words", [
    ("NodeName=node[1-2 CPUs=2\nPartitionName=p Nodes=ALL\n", 1, "hostlist"),
    ("NodeName=node[1-2 CPUs=oops\n", 1, "hostlist"),
    ("# c\n\nNodeName=n1 CPUs=oops\nPartitionName=p Nodes=ALL\n", 3, "CPUs=oops"),
    ("NodeName=n1 CPUs=0\nPartitionName=p Nodes=ALL\n", 1, "CPUs=0"),
    ("NodeName=n1 RealMemory=lots\nPartitionName=p Nodes=ALL\n", 1, "RealMemory=lots"),
    ("NodeName=n1\nPartitionName=p Nodes=n[1-2\n", 2, "hostlist"),
    ("NodeName=n1\nPartitionName=p Nodes=ALL MaxTime=abc\n", 2, "abc"),
    ("NodeName=n1\nPartitionName=p Nodes=ALL State=WEIRD\n", 2, "State=WEIRD"),
    ("NodeName=n1\nPartitionName=p Nodes=ALL MaxNodes=x\n", 2, "MaxNodes=x"),
    ("NodeName=n1\nPartitionName=p Nodes=ALL\nPartitionName=p Nodes=ALL\n", 3, "declared twice"),
    ("NodeName=n1\nNodeName=n1\nPartitionName=p Nodes=ALL\n", 2, "declared twice"),
    ("NodeName=n[1-2] NodeAddr=a,b,c\nPartitionName=p Nodes=ALL\n", 1, "NodeAddr"),
    ("NodeName=n[1-3] Port=abc\nPartitionName=p Nodes=ALL\n", 1, "Port=abc"),
    ("NodeName=n1 Gres=gpu:a:b:c\nPartitionName=p Nodes=ALL\n", 1, "gres"),
    ("NodeName=n1 Gres=gpu:a100:x\nPartitionName=p Nodes=ALL\n", 1, "gres"),
    ('NodeName=n1 Feature="a\nPartitionName=p Nodes=ALL\n', 1, "parse"),
    ("ClusterName=x\nSlurmctldPort=http\n", 2, "http"),
    ("HeartbeatInterval=soon\n", 1, "soon"),
    ("Foo\n", 1, "Key=Value"),
    ("ClusterName=a Extra=b\n", 1, "several keys"),
    ("1Bad=x\n", 1, "bad key"),
    ("QOSName=high Priority=lots\n", 1, "Priority=lots"),
    ("QOSName=high MaxWall=soon\n", 1, "MaxWall=soon"),
    ("QOSName=high MaxTRESPerUser=cpu=4\n", 1, "gres/gpu"),
    ("QOSName=high Flavour=mint\n", 1, "flavour"),
    ("PreemptType=preempt/fifo\n", 1, "PreemptType"),
    ("PreemptMode=SUSPEND\n", 1, "PreemptMode"),
    ("NodeName=n1\nPartitionName=p Nodes=ALL GraceTime=later\n", 2, "GraceTime"),
])
def test_errors_name_file_and_line(text, line, words):
    with pytest.raises(ConfigError) as e:
        config.parse(text, PATH)
    assert e.value.message.startswith(f"{PATH}:{line}: "), e.value.message
    assert words.lower() in e.value.message.lower()
def test_unknown_node_in_partition_names_file_and_line():
    with pytest.raises(ConfigError) as e:
        config.parse("NodeName=n1\n# gap\nPartitionName=p Nodes=n[1-2]\n", PATH)
    assert "n2" in e.value.message
    assert e.value.message.startswith(f"{PATH}:3: "), e.value.message


def test_unknown_node_in_partition_is_an_error():
    with pytest.raises(ConfigError) as e:
        config.parse("NodeName=n1\nPartitionName=p Nodes=n[1-2]\n", PATH)
    assert PATH in e.value.message and "unknown" in e.value.message and "n2" in e.value.message
def test_port_list_length_mismatch_names_file_and_line():
    with pytest.raises(ConfigError) as e:
        config.parse("NodeName=n[1-3] Port=[7001-7002]\nPartitionName=p Nodes=ALL\n", PATH)
    assert e.value.message.startswith(f"{PATH}:1: ")


def test_nodes_without_partition_is_an_error():
    with pytest.raises(ConfigError) as e:
        config.parse("NodeName=n1\n", PATH)
    assert PATH in e.value.message and "PartitionName" in e.value.message


# ---- load(): the file on disk, gres.conf beside it --------------------------------------------

SLURM_CONF = "NodeName=node[1-2] CPUs=2 Gres=gpu:4\nPartitionName=main Nodes=ALL Default=YES\n"


def _write(tmp_path, slurm=SLURM_CONF, gres=None):
    (tmp_path / "slurm.conf").write_text(slurm)
    if gres is not None:
        (tmp_path / "gres.conf").write_text(gres)
    return str(tmp_path / "slurm.conf")


def test_load_reads_the_environment_variable(tmp_path, monkeypatch):
    path = _write(tmp_path)
    monkeypatch.setenv(config.ENV_CONF, path)
    cfg = config.load()
    assert cfg.path == path and list(cfg.nodes) == ["node1", "node2"]
    assert cfg.gres_devices == {}


def test_load_shared_parses_once_until_a_file_changes(tmp_path):
    path = _write(tmp_path)
    first = config.load_shared(path)
    assert config.load_shared(path) is first  # sbatch asks twice: one parse
    (tmp_path / "slurm.conf").write_text(SLURM_CONF.replace("CPUs=2", "CPUs=16"))
    changed = config.load_shared(path)
    assert changed is not first and changed.nodes["node1"].cpus == 16
    (tmp_path / "gres.conf").write_text("NodeName=node1 Name=gpu Count=1\n")  # a file beside it
    assert config.load_shared(path).gres_devices != changed.gres_devices


def test_reading_slurm_conf_does_not_load_the_scheduler(tmp_path):
    """A CLI validates sched_policy's name without the scheduler's imports (sched/__init__.py
    loads them on first use): a tenth of sbatch's start-up."""
    path = _write(tmp_path, SLURM_CONF + "SchedulerParameters=sched_policy=learned\n")
    code = ("import sys\nfrom pyslurm_lite import config\n"
            f"assert config.load({path!r}).sched_policy == 'learned'\n"
            "print(sorted(m for m in sys.modules if m.startswith('pyslurm_lite.sched.')))\n"
            "from pyslurm_lite.sched import schedule, Snapshot\n"
            "print(schedule.__module__, Snapshot.__module__)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["['pyslurm_lite.sched.policy']",
                                     "pyslurm_lite.sched.cycle pyslurm_lite.sched.snapshot"]


def test_load_missing_file(tmp_path):
    missing = str(tmp_path / "nope.conf")
    with pytest.raises(ConfigError) as e:
        config.load(missing)
    assert missing in e.value.message and "No such file" in e.value.message


@pytest.mark.parametrize("gres, expected", [
    # Count= on named nodes: indices 0..N-1 per node, no device file
    ("NodeName=node[1-2] Name=gpu Count=2\n",
     {"node1": [("gpu", "", "", 0), ("gpu", "", "", 1)],
      "node2": [("gpu", "", "", 0), ("gpu", "", "", 1)]}),
    # File= hostlist: one device per file, with its type; no NodeName = every node
    ("Name=gpu Type=a100 File=/dev/nvidia[0-1]\n",
     {"node1": [("gpu", "a100", "/dev/nvidia0", 0), ("gpu", "a100", "/dev/nvidia1", 1)],
      "node2": [("gpu", "a100", "/dev/nvidia0", 0), ("gpu", "a100", "/dev/nvidia1", 1)]}),
    # two lines for one node: indices continue
    ("NodeName=node1 Name=gpu Type=a File=/dev/nvidia0\nNodeName=node1 Name=gpu Type=b File=/dev/nvidia1\n",
     {"node1": [("gpu", "a", "/dev/nvidia0", 0), ("gpu", "b", "/dev/nvidia1", 1)]}),
    ("# only comments\n\n", {}),
])
def test_gres_conf_devices(tmp_path, gres, expected):
    cfg = config.load(_write(tmp_path, gres=gres))
    got = {n: [(d.name, d.type, d.file, d.index) for d in devs] for n, devs in cfg.gres_devices.items()}
    assert got == expected


def test_gres_conf_autodetect(tmp_path):
    cfg = config.load(_write(tmp_path, gres="AutoDetect=NVML\n"))
    assert cfg.gres_autodetect == "nvml" and cfg.gres_devices == {}


@pytest.mark.parametrize("gres, line, words", [
    ("\nType=a100 File=/dev/nvidia0\n", 2, "Name="),
    ("Name=gpu File=/dev/nvidia[0-1\n", 1, "hostlist"),
    ("Name=gpu Count=many\n", 1, "Count=many"),
    ("Name=gpu Count=0\n", 1, "Count=0"),
    ("NodeName=node[1-2 Name=gpu\n", 1, "hostlist"),
])
def test_gres_conf_errors_name_file_and_line(tmp_path, gres, line, words):
    path = _write(tmp_path, gres=gres)
    with pytest.raises(ConfigError) as e:
        config.load(path)
    gres_path = str(tmp_path / "gres.conf")
    assert re.match(rf"{re.escape(gres_path)}:{line}: ", e.value.message), e.value.message
    assert words.lower() in e.value.message.lower()


@pytest.mark.parametrize("spec, parsed", [
    ("", []),
    ("gpu", [GresRequest("gpu", "", 1)]),
    ("gpu:4", [GresRequest("gpu", "", 4)]),
    ("gpu:a100", [GresRequest("gpu", "a100", 1)]),
    ("gpu:a100:2", [GresRequest("gpu", "a100", 2)]),
    ("gpu:a100:2,gpu:v100:1", [GresRequest("gpu", "a100", 2), GresRequest("gpu", "v100", 1)]),
])
def test_node_gres_spec(spec, parsed):
    assert config.parse_gres_spec(spec) == parsed


def test_qos_partition_access_and_preemption_keys():
    cfg = config.parse(
        "NodeName=n1\n"
        "PartitionName=p Nodes=ALL PriorityTier=3 AllowAccounts=phys,chem AllowGroups=lab "
        "PreemptMode=cancel GraceTime=30\n"
        "QOSName=high Priority=100 MaxWall=1:00:00 MaxJobsPerUser=2 MaxTRESPerUser=gres/gpu=4 "
        "Preempt=normal PreemptExemptTime=00:05:00\n"
        "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nPreemptExemptTime=120\n"
        "SchedulerParameters=bf_max_job_test=50,bf_conservative\n", PATH)
    p = cfg.partitions["p"]
    assert (p.priority_tier, p.allow_accounts, p.allow_groups, p.preempt_mode, p.grace_time) == \
        (3, ["phys", "chem"], ["lab"], "CANCEL", 30)
    q = cfg.qos["high"]
    assert (q.priority, q.max_wall, q.max_jobs_per_user, q.max_gpus_per_user, q.preempt,
            q.preempt_exempt_time) == (100, 60, 2, 4, ["normal"], 300)
    assert "normal" in cfg.qos and cfg.qos["normal"].max_wall == UNLIMITED
    assert (cfg.preempt_type, cfg.preempt_mode, cfg.preempt_exempt_time) == \
        ("preempt/partition_prio", "REQUEUE", 120)
    assert cfg.scheduler_parameters == {"bf_max_job_test": "50", "bf_conservative": ""}


def test_qos_may_only_preempt_declared_qos():
    with pytest.raises(ConfigError) as e:
        config.parse("QOSName=high Preempt=ghost\n", PATH)
    assert "ghost" in e.value.message


def test_keys_read_but_not_implemented_are_listed_for_the_daemons_warnings():
    """Nothing silent: a Slurm key we keep but do not act on (RoutePlugin), and unknown keys
    on NodeName and PartitionName lines, are named (file:line) for the daemons to warn about;
    what we implement, or read from extra (SchedulerType), is not."""
    cfg = config.parse("RoutePlugin=route/topology\nSchedulerType=sched/backfill\n"
                       "NodeName=n[1-2] CPUs=2 TmpDisk=100 RealMemory=100\n"
                       "PartitionName=p Nodes=ALL OverSubscribe=YES MaxTime=10\n", "slurm.conf")
    assert cfg.ignored == ["slurm.conf:1: routeplugin=route/topology",
                           "slurm.conf:3: tmpdisk=100 (on a nodename line)",
                           "slurm.conf:4: oversubscribe=YES (on a partitionname line)"]
    seen = []

    class Log:
        def warning(self, fmt, *args):
            seen.append(fmt % args)

    config.warn_ignored(cfg, Log())
    assert seen[0] == "slurm.conf:1: routeplugin=route/topology: not implemented by pyslurm-lite, ignored"


def test_a_database_password_in_a_readable_slurm_conf_is_warned_at_start(tmp_path, caplog):
    import logging
    from pyslurm_lite import config
    conf = tmp_path / "slurm.conf"
    for url, mode, warned in (("postgresql+psycopg://slurm:secret@db:5432/p", 0o644, True),
                              ("postgresql+psycopg://slurm:secret@db:5432/p", 0o600, False),
                              ("postgresql+psycopg://slurm@db:5432/p", 0o644, False)):
        conf.write_text(f"ClusterName=c\nDatabaseURL={url}\nNodeName=n1 CPUs=1\n"
                        "PartitionName=p Nodes=n1 Default=YES\n")
        conf.chmod(mode)
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            config.warn_ignored(config.load(str(conf)), logging.getLogger("t"))
        said = [r.getMessage() for r in caplog.records if "DatabaseURL holds a password" in r.getMessage()]
        assert bool(said) == warned, (url, oct(mode), said)
        assert all("secret" not in m for m in said)
