"""sim/sacct.py (sacct --parsable2 -> replay records) and the multi-resource replay of such a
history on a slurm.conf's cluster (sim/conf_cluster.py, sched_engine.replay_jobs, command.run_sacct)."""

from __future__ import annotations

import csv
from datetime import datetime

import pytest

from pyslurm_lite import config
from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.sim import command, conf_cluster, sacct

HEADER = ("JobID|User|Account|Partition|QOS|Submit|Start|End|Elapsed|Timelimit|NNodes|NCPUS|"
          "ReqMem|ReqTRES|State")

# Real Slurm 22.05, verbatim (/work/shared/slurm-reference/backfill.txt): one node, 4 GPUs
SLURM_BACKFILL = """\
JobID|JobName|State|Submit|Start|End|Elapsed|ReqTRES
10943|A|COMPLETED|2026-11-30T10:06:39|2026-11-30T10:06:39|2026-11-30T10:07:00|00:00:21|billing=1,cpu=1,gres/gpu=3,mem=256M,node=1
10944|B|COMPLETED|2026-11-30T10:06:40|2026-11-30T10:07:00|2026-11-30T10:07:10|00:00:10|billing=1,cpu=1,gres/gpu=4,mem=256M,node=1
10945|C|COMPLETED|2026-11-30T10:06:40|2026-11-30T10:06:40|2026-11-30T10:06:46|00:00:06|billing=1,cpu=1,gres/gpu=1,mem=256M,node=1
10946|D|COMPLETED|2026-11-30T10:06:40|2026-11-30T10:07:10|2026-11-30T10:07:13|00:00:03|billing=1,cpu=1,gres/gpu=1,mem=256M,node=1
"""

# Real Slurm 22.05, verbatim (formats.txt): no NCPUS nor ReqTRES asked for
SLURM_ALLOC_ONLY = """\
JobID|JobName|Partition|State|ExitCode|Submit|Start|End|AllocTRES
10921|ok|main|COMPLETED|0:0|2026-11-30T10:06:29|2026-11-30T10:06:29|2026-11-30T10:06:29|billing=1,cpu=1,mem=256M,node=1
"""

# Real Slurm 22.05's never-started and still-running jobs, and a step, in the columns we ask
SLURM_STATES = """\
JobID|Partition|State|Submit|Start|End|Elapsed|NCPUS|Timelimit|ReqMem
10926|main|RUNNING|2026-11-30T10:06:32|2026-11-30T10:06:32|Unknown|00:00:04|1|UNLIMITED|256M
10926.batch||RUNNING|2026-11-30T10:06:32|2026-11-30T10:06:32|Unknown|00:00:04|1||
10928|main|PENDING|2026-11-30T10:06:32|Unknown|Unknown|00:00:00|2|Partition_Limit|512M
10933|main|CANCELLED by 0|2026-11-30T10:06:32|2026-11-30T10:06:32|2026-11-30T10:06:32|00:00:00|1|1-00:00:00|256M
10941|main|TIMEOUT|2026-11-30T10:06:39|2026-11-30T10:06:39|2026-11-30T10:08:01|00:01:22|1|00:01:00|256M
10941.batch||CANCELLED|2026-11-30T10:06:39|2026-11-30T10:06:39|2026-11-30T10:08:01|00:01:23|1||
10942|main|OUT_OF_MEMORY|2026-11-30T10:06:39|2026-11-30T10:06:39|2026-11-30T10:06:40|00:00:01|2|365-00:00:00|4000Mc
"""


def at(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").timestamp())


def test_real_slurm_reqtres_lines():
    h = sacct.parse(SLURM_BACKFILL)
    assert [r.job_id for r in h.records] == ["10943", "10944", "10945", "10946"]
    assert [r.gpus for r in h.records] == [3, 4, 1, 1]
    assert [r.run for r in h.records] == [21, 10, 6, 3]
    assert {(r.cpus, r.nodes, r.mem, r.limit) for r in h.records} == {(1, 1, 256, None)}
    assert h.records[0].submit == at("2026-11-30T10:06:39")


def test_real_slurm_states_steps_and_limits():
    h = sacct.parse(SLURM_STATES)
    assert [r.job_id for r in h.records] == ["10941", "10942"]  # steps passed over
    assert (h.never_started, h.still_running) == (2, 1)  # PENDING, CANCELLED before start; RUNNING
    timeout, oom = h.records
    assert (timeout.run, timeout.limit, timeout.mem) == (82, 1, 256)
    assert (oom.limit, oom.cpus, oom.mem) == (365 * 1440, 2, 8000)  # 4000Mc: per CPU, 2 CPUs


def test_our_format_multi_node_typed_gpus():
    text = HEADER + "\n" + ("7_3|ann|lab|gpu|high|2026-01-05T10:00:00|2026-01-05T10:02:00|"
                            "2026-01-05T11:02:00|01:00:00|02:00:00|2|5|4G|"
                            "billing=5,cpu=5,gres/gpu:a100=4,gres/gpu=4,mem=8G,node=2|COMPLETED\n")
    (r,) = sacct.parse(text).records
    assert (r.job_id, r.user, r.account, r.partition, r.qos) == ("7_3", "ann", "lab", "gpu", "high")
    assert (r.run, r.limit, r.nodes, r.cpus, r.cpus_per_node) == (3600, 120, 2, 5, (3, 2))
    assert (r.mem, r.gpus, r.gpu_type) == (4096, 2, "a100")  # per node


def test_parsable_with_closing_bar_and_het_components():
    text = ("JobID|Submit|Start|End|NCPUS|\n"
            "5+0|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:01:00|2|\n"
            "5+1|2026-01-05T10:00:00|2026-01-05T10:00:00|2026-01-05T10:01:00|1|\n")
    h = sacct.parse(text)
    assert [(r.job_id, r.cpus, r.run) for r in h.records] == [("5+0", 2, 60), ("5+1", 1, 60)]
    assert h.het_components == 2


def test_elapsed_when_there_is_no_end_column():
    text = ("JobID|Submit|Start|Elapsed|NCPUS|NNodes|ReqMem\n"
            "9|2026-01-05T10:00:00|2026-01-05T10:00:05|1-00:00:30|8|2|1000Mn\n")
    (r,) = sacct.parse(text).records
    assert (r.run, r.cpus_per_node, r.mem, r.limit) == (86430, (4, 4), 1000, None)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    (SLURM_ALLOC_ONLY, "missing NCPUS or ReqTRES"),
    ("JobID|State|Elapsed|NCPUS\n1|COMPLETED|00:00:01|1\n", "missing Submit, Start"),
    ("JobID|Submit|Start|End|NCPUS\n1|2026-01-05 10:00|2026-01-05T10:00:00|Unknown|1\n",
     "x:2: bad Submit time '2026-01-05 10:00'"),
    ("JobID|Submit|Start|End|NCPUS\n1|2026-01-05T10:00:00|2026-01-05T10:00:00\n",
     "x:2: 3 fields where the header has 5"),
    ("JobID|Submit|Start|Elapsed|ReqTRES\n1|2026-01-05T10:00:00|2026-01-05T10:00:00|1:00:00|cpu\n",
     "x:2: bad ReqTRES item 'cpu'"),
    ("JobID|Submit|Start|Elapsed|NCPUS|Timelimit\n"
     "1|2026-01-05T10:00:00|2026-01-05T10:00:00|00:01:00|1|soon\n", "x:2: bad Timelimit 'soon'"),
    ("JobID|Submit|Start|Elapsed|NCPUS\n1|2026-01-05T10:00:00|2026-01-05T10:00:00|a while|1\n",
     "x:2: bad Elapsed 'a while'"),
    ("JobID|Submit|Start|Elapsed|NCPUS\n1|2026-01-05T10:00:00|2026-01-05T10:00:00|00:01:00|four\n",
     "x:2: bad NCPUS 'four'"),
])
def test_malformed_input_names_the_line(text, message):
    with pytest.raises(InvalidRequest, match=message.replace("(", r"\(")):
        sacct.parse(text, "x")


# ---- the replay on a 3-node cluster -----------------------------------------------------------

CONF = """\
ClusterName=t
SlurmctldHost=localhost
NodeName=n[1-2] CPUs=4 RealMemory=8000
NodeName=g1 CPUs=4 RealMemory=16000 Gres=gpu:2
PartitionName=cpu Nodes=n[1-2] Default=YES
PartitionName=gpu Nodes=g1 PriorityTier=2
"""

T = "2026-01-05T10:00:00"


def line(job, part, sub, start, end, limit, nodes, cpus, mem_node, gpus=0, state="COMPLETED"):
    def t(s):
        return "Unknown" if s is None else datetime.fromtimestamp(at(T) + s).strftime("%Y-%m-%dT%H:%M:%S")
    gres = f"gres/gpu={gpus}," if gpus else ""
    tres = f"billing={cpus},cpu={cpus},{gres}mem={mem_node * nodes}M,node={nodes}"
    return (f"{job}|ann|lab|{part}|normal|{t(sub)}|{t(start)}|{t(end)}|00:00:00|{limit}|{nodes}|"
            f"{cpus}|{mem_node}M|{tres}|{state}")


# The recorded starts do not matter (the replay decides them); runs are end - start.
HISTORY = "\n".join([HEADER,
    line(101, "cpu", 0, 0, 600, "00:20:00", 2, 8, 1000),  # both cpu nodes, whole
    line("101.batch", "", 0, 0, 600, "", 1, 4, 0),  # a step: passed over
    line(102, "gpu", 0, 0, 300, "00:10:00", 1, 2, 2000, gpus=2),  # both GPUs of g1
    line(103, "gpu", 10, 10, 110, "00:05:00", 1, 1, 1000, gpus=1),
    line(104, "cpu", 20, 20, 320, "00:10:00", 1, 1, 6000),
    line(105, "cpu", 20, 20, 320, "00:10:00", 1, 1, 6000),
    line(106, "cpu", 30, 30, 130, "00:05:00", 1, 1, 6000),
    line(107, "gone", 40, 40, 50, "00:05:00", 1, 1, 100),  # no such partition here
    line(108, "gpu", 40, 40, 50, "00:05:00", 1, 1, 100, gpus=3),  # g1 has 2 GPUs
    line(109, "cpu", 40, None, None, "00:05:00", 1, 1, 100, state="PENDING"),
    line(110, "cpu", 40, 45, 45, "00:05:00", 1, 1, 100, state="CANCELLED by 1000"),
    line(111, "gpu", 650, 650, 660, "00:05:00", 1, 1, 100),  # a pass between 600 and 900
]) + "\n"

# Worked out by hand (sched/backfill, best fit; gpu's PriorityTier 2 goes first):
#   0    102 takes g1's 2 GPUs; 101 takes all 8 CPUs of n1+n2 (a 2-node job).
#   10   103 wants 1 GPU: g1 has 2 CPUs free but no GPU -> waits for the GPU node.
#   20   104, 105 (6000 MB each): no CPU free on n1/n2 -> wait; 30: 106 the same.
#   300  102 ends: 103 starts on g1 (until 400).
#   600  101 ends: 104 on one cpu node, 105 on the other (6000 + 6000 > 8000: they cannot
#        share one); 106 finds 3 CPUs free on each but only 2000 MB -> waits although CPUs idle.
#   650  111 starts on g1 at once; 106 still finds 2000 MB on each cpu node: waits.
#   900  104 and 105 end: 106 starts.
#   107 (no partition gone), 108 (3 GPUs > g1's 2), 109 (PENDING), 110 (cancelled before it
#   started) are skipped and counted.
EXPECTED = {"101": 0, "102": 0, "103": 300, "104": 600, "105": 600, "106": 900, "111": 650}


@pytest.fixture
def files(tmp_path):
    conf, hist = tmp_path / "slurm.conf", tmp_path / "hist.txt"
    conf.write_text(CONF)
    hist.write_text(HISTORY)
    return conf, hist, tmp_path


def dumped(path) -> dict:
    with open(path) as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def test_replay_start_times_worked_by_hand(files):
    conf, hist, tmp = files
    out, warnings = [], []
    (s,) = command.run_sacct(str(hist), str(conf), "conf", dump=str(tmp / "out.csv"),
                             echo=out.append, warn=warnings.append)
    rows = dumped(tmp / "out.csv")
    assert {k: int(r["start"]) - at(T) for k, r in rows.items()} == EXPECTED
    assert (s.jobs, s.skipped) == (7, 4)
    assert int(rows["106"]["end"]) - int(rows["106"]["start"]) == 100
    skipped = out[-1]
    assert "1 partition gone not in the conf (107)" in skipped
    assert "1 asks more than any node of gpu holds (108)" in skipped
    assert "2 never started" in skipped
    assert any("dependencies" in w for w in warnings)


def test_replay_fcfs_and_easy_differ_where_backfill_helps(tmp_path):
    # one node of 4 CPUs: a 4-CPU job waits behind a 2-CPU one; a short 1-CPU job backfills
    # under easy (ends before the 4-CPU job's reservation) and waits under fcfs.
    conf = tmp_path / "slurm.conf"
    conf.write_text("NodeName=n1 CPUs=4 RealMemory=8000\nPartitionName=p Nodes=n1 Default=YES\n")
    hist = tmp_path / "h.txt"
    hist.write_text("\n".join([HEADER,
        line(1, "p", 0, 0, 600, "00:10:00", 1, 2, 100),
        line(2, "p", 1, 1, 601, "00:10:00", 1, 4, 100),
        line(3, "p", 2, 2, 102, "00:05:00", 1, 1, 100)]) + "\n")
    for policy, third in (("easy", 2), ("fcfs", 1200)):
        command.run_sacct(str(hist), str(conf), policy, dump=str(tmp_path / "o.csv"),
                          echo=lambda *_: None, warn=lambda *_: None)
        rows = dumped(tmp_path / "o.csv")
        assert int(rows["2"]["start"]) - at(T) == 600
        assert int(rows["3"]["start"]) - at(T) == third, policy


def test_partition_limit_and_unmodelled_conf_named(tmp_path):
    cfg = config.parse(CONF.replace("PriorityTier=2", "PriorityTier=2 MaxTime=10 AllowGroups=lab")
                       + "PreemptType=preempt/partition_prio\nPreemptMode=REQUEUE\nLicenses=foo:2\n")
    cluster = conf_cluster.load(cfg, "easy")
    text = " | ".join(cluster.warnings)
    assert "preemption is not modelled" in text and "AllowGroups=lab" in text
    assert "licenses=foo:2: not implemented by pyslurm-lite, not modelled" in text
    assert cluster.config.preempt_type == "preempt/none"
    rec = sacct.Record("1", 0, 60, None, 1, 1, 100, partition="gpu")
    assert conf_cluster.limit_of(rec, cfg, "gpu") == 10  # Partition_Limit: the partition's
    long = sacct.Record("2", 0, 60, 20, 1, 1, 100, partition="gpu")
    assert conf_cluster.refusal(long, cluster, "gpu", 20) == "time limit over partition gpu's MaxTime"


def test_multifactor_fair_share_favours_the_user_who_ran_less(tmp_path):
    # one node, 1 CPU. ann runs first; then bob's and ann's jobs wait together (ann's submitted
    # first). Fair share (weight 10000) puts bob ahead; with priority/basic ann's goes first.
    base = "NodeName=n1 CPUs=1 RealMemory=1000\nPartitionName=p Nodes=n1 Default=YES\n"
    hist = tmp_path / "h.txt"
    rows = [line(1, "p", 0, 0, 100, "00:05:00", 1, 1, 10),
            line(2, "p", 10, 10, 110, "00:05:00", 1, 1, 10),
            line(3, "p", 20, 20, 120, "00:05:00", 1, 1, 10).replace("|ann|", "|bob|")]
    hist.write_text("\n".join([HEADER] + rows) + "\n")
    for extra, order in (("", ("2", "3")),
                         ("PriorityType=priority/multifactor\nPriorityWeightFairshare=10000\n",
                          ("3", "2"))):
        conf = tmp_path / "slurm.conf"
        conf.write_text(base + extra)
        command.run_sacct(str(hist), str(conf), "conf", dump=str(tmp_path / "o.csv"),
                          echo=lambda *_: None, warn=lambda *_: None)
        got = dumped(tmp_path / "o.csv")
        assert int(got[order[0]]["start"]) - at(T) == 100, extra
        assert int(got[order[1]]["start"]) - at(T) == 200, extra


def test_unknown_policy_is_refused(files):
    conf, hist, _ = files
    with pytest.raises(InvalidRequest, match="not sjf"):
        command.run_sacct(str(hist), str(conf), "easy,sjf")
