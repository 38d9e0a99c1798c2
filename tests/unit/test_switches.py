"""topology/tree placement (sched/switches.py) through the real scheduler pass: multi-node jobs
under the lowest switch holding enough nodes, on as few leaf switches as can be, and
--switches=N@wait. One row per case, expectations written by hand; rows marked "first fit: ..."
are what a topology-blind scheduler does.
"""

from __future__ import annotations

import dataclasses

import pytest

from factories import job, node, running, snapshot
from pyslurm_lite.model import Reason
from pyslurm_lite.sched import schedule
from pyslurm_lite.sched.select import FreeNode, select_nodes
from pyslurm_lite.sched.switches import choose, request

NOW = 1_000_000.0
# s1: n1 n2 | s2: n3 n4 n5 | s3: n6 n7 ; top over s1, s2 ; root over top, s3
PATHS = {"n1": ("s1", "top", "root"), "n2": ("s1", "top", "root"),
         "n3": ("s2", "top", "root"), "n4": ("s2", "top", "root"), "n5": ("s2", "top", "root"),
         "n6": ("s3", "root"), "n7": ("s3", "root")}


def nodes(busy=(), full=()):
    """The seven nodes (2 CPUs each); `busy` ones have 1 CPU free, `full` ones none."""
    return [dataclasses.replace(node(n, cpus=2, free_cpus=0 if n in full else 1 if n in busy else 2),
                                switches=PATHS[n]) for n in PATHS]


def placed(plan):
    return {s.job_id: sorted(a.node for a in s.allocations) for s in plan.starts}


def with_(view, **changes):
    return dataclasses.replace(view, **changes)


CASES = [
    pytest.param(  # first fit: n2 n3 (n1, n5 full), one on each leaf; s2 and s3 hold two each
        [job(1, nodes=2)], nodes(full={"n1", "n5"}), {1: ["n3", "n4"]}, id="one-leaf-over-first-fit"),
    pytest.param(  # the leaf that holds it most tightly: s1 (2 fit) over s2 (3 fit)
        [job(1, nodes=2)], nodes(), {1: ["n1", "n2"]}, id="tightest-leaf"),
    pytest.param(  # n1 full: s1 holds one, s2 three, s3 two: s3, though not under `top`
        [job(1, nodes=2)], nodes(full={"n1"}), {1: ["n6", "n7"]}, id="tightest-of-any-leaf"),
    pytest.param(  # three nodes: only s2 holds three
        [job(1, nodes=3)], nodes(), {1: ["n3", "n4", "n5"]}, id="three-on-s2"),
    pytest.param(  # four nodes: no leaf holds four; `top` (5) is lower than root: s2 then s1
        [job(1, nodes=4)], nodes(), {1: ["n1", "n3", "n4", "n5"]}, id="largest-leaf-first"),
    pytest.param(  # six nodes: only root holds six; s2's three, then the closest leaf (s1)
        [job(1, nodes=6)], nodes(), {1: ["n1", "n2", "n3", "n4", "n5", "n6"]}, id="closest-next"),
    pytest.param(  # -w n6 (under s3): the job stays under s3's leaf with it
        [with_(job(1, nodes=2), required=("n6",))], nodes(), {1: ["n6", "n7"]}, id="required-leaf"),
    pytest.param(  # busy nodes still fit a 1-CPU share: the topology, not business, decides
        [job(1, nodes=2)], nodes(busy={"n1", "n2"}), {1: ["n1", "n2"]}, id="busy-but-fits"),
]


@pytest.mark.parametrize("jobs, views, expected", CASES)
def test_multi_node_jobs_go_under_the_lowest_switch(jobs, views, expected):
    assert placed(schedule(snapshot(jobs=jobs, nodes=views), NOW)) == expected


def tree(**leaves):
    """Views for nodes under leaves given as leaf=(path above it..., node names)."""
    return [dataclasses.replace(node(n, cpus=2), switches=(leaf, *up))
            for leaf, (up, names) in leaves.items() for n in names]


def test_a_lower_switch_wins_over_a_tighter_higher_one():
    """`m` (level 1) holds exactly two (one per leaf), leaf c three: c, one leaf."""
    views = tree(a=(("m", "r"), ["x1"]), b=(("m", "r"), ["x2"]), c=(("r",), ["x3", "x4", "x5"]))
    assert placed(schedule(snapshot(jobs=[job(1, nodes=2)], nodes=views), NOW)) == {1: ["x3", "x4"]}


def test_the_next_leaf_is_the_closest_when_none_holds_the_rest():
    """After c's three, three more: neither `far` (under r only) nor `near` (under m with c)
    holds three alone: the closer leaf, though `far` sorts first by name."""
    views = tree(c=(("m", "r"), ["c1", "c2", "c3"]), near=(("m", "r"), ["n1", "n2"]),
                 far=(("r",), ["f1", "f2"]))
    assert placed(schedule(snapshot(jobs=[job(1, nodes=6)], nodes=views), NOW)) == {
        1: ["c1", "c2", "c3", "f1", "n1", "n2"]}


def test_a_leaf_that_holds_the_rest_wins_over_a_closer_one():
    views = tree(c=(("m", "r"), ["c1", "c2", "c3"]), near=(("m", "r"), ["n1"]),
                 far=(("r",), ["f1", "f2"]))
    assert placed(schedule(snapshot(jobs=[job(1, nodes=5)], nodes=views), NOW)) == {
        1: ["c1", "c2", "c3", "f1", "f2"]}


def test_without_switches_placement_is_unchanged():
    """No topology: a 2-node job takes the first two nodes that fit, as before."""
    views = [dataclasses.replace(v, switches=()) for v in nodes(full={"n1"})]
    assert placed(schedule(snapshot(jobs=[job(1, nodes=2)], nodes=views), NOW)) == {1: ["n2", "n3"]}


def test_jobs_spanning_disjoint_trees_wait():
    """Switches with no common switch above them: a job never spans them (Slurm's "Jobs can
    only span nodes connected by the same switch fabric")."""
    views = [dataclasses.replace(node(n, cpus=2), switches=(leaf,))
             for n, leaf in (("a1", "x"), ("a2", "x"), ("b1", "y"))]
    plan = schedule(snapshot(jobs=[job(1, nodes=3)], nodes=views), NOW)
    assert plan.starts == []


SPLIT = nodes(full={"n2", "n4", "n5", "n7"})  # one fitting node per leaf: n1, n3, n6


@pytest.mark.parametrize("submit, wait, expected", [
    (NOW - 10, 60, None),  # asked at most one leaf, has waited 10 s of 60: waits
    (NOW - 60, 60, ["n1", "n3"]),  # the wait is over: any placement
    (NOW, 0, ["n1", "n3"]),  # --switches=1@0: no wait at all
])
def test_switches_count_waits_then_takes_any(submit, wait, expected):
    j = with_(job(1, nodes=2, submit=submit), req_switch=1, switch_wait=wait)
    plan = schedule(snapshot(jobs=[j], nodes=SPLIT), NOW)
    assert placed(plan).get(1) == expected
    if expected is None:
        assert plan.reasons[1] is Reason.RESOURCES  # Slurm's reason while it waits for switches


def test_the_wait_counts_from_begin_time():
    j = with_(job(1, nodes=2, submit=NOW - 100, begin=NOW - 5), req_switch=1, switch_wait=60)
    assert placed(schedule(snapshot(jobs=[j], nodes=SPLIT), NOW)) == {}


def test_two_switches_allowed_starts_at_once():
    j = with_(job(1, nodes=2, submit=NOW), req_switch=2, switch_wait=300)
    assert placed(schedule(snapshot(jobs=[j], nodes=SPLIT), NOW)) == {1: ["n1", "n3"]}


def test_a_waiting_job_starts_when_a_leaf_frees():
    """Held back for its switch count, the job gets a reservation when a running job ends and
    one leaf then holds both its nodes."""
    views = nodes(full={"n2", "n4", "n5", "n7"})
    blocker = running(9, "n2", cpus=2, end=NOW + 30)
    j = with_(job(1, nodes=2, submit=NOW, limit=10), req_switch=1, switch_wait=3600)
    plan = schedule(snapshot(jobs=[j], nodes=views, running=[blocker]), NOW)
    assert plan.starts == [] and plan.reservations[1] == NOW + 30


def test_preemption_selection_uses_the_topology_too():
    cands = [FreeNode(v) for v in nodes(full={"n1", "n5"})]  # first fit: n2 n3
    got = select_nodes(job(1, nodes=2), cands)
    assert sorted(a.node for a in got) == ["n3", "n4"]


def test_choose_keeps_the_callers_order_within_a_leaf():
    views = nodes()
    fitting = [v for v in views if v.name in ("n5", "n4", "n3")][::-1]  # n5, n4, n3
    got = choose(job(1, nodes=2), fitting, NOW, view_of=lambda v: v)
    assert [v.name for v in got] == ["n5", "n4"]


@pytest.mark.parametrize("req, wait, max_wait, expected", [
    (0, -1, 300, {}),
    (1, -1, 300, {"req_switch": 1, "switch_wait": 300.0}),  # not given: max_switch_wait
    (2, 60, 300, {"req_switch": 2, "switch_wait": 60.0}),
    (2, 900, 300, {"req_switch": 2, "switch_wait": 300.0}),  # capped, as Slurm
])
def test_request(req, wait, max_wait, expected):
    spec = type("Spec", (), {"req_switch": req, "wait4switch": wait})()
    assert request(spec, max_wait) == expected


def test_a_node_on_no_switch_is_never_part_of_a_multi_node_job():
    views = tree(a=(("r",), ["a1"]), b=(("r",), ["b1"])) + [node("lone", cpus=2)]
    assert placed(schedule(snapshot(jobs=[job(1, nodes=3)], nodes=views), NOW)) == {}


# ---- --switches on the command line, in #SBATCH lines and input variables ----------------------
@pytest.mark.parametrize("argv, directive, environ, expected", [
    (["--switches=2"], "", {}, (2, -1)),
    (["--switches=1@0"], "", {}, (1, 0)),
    (["--switches=2@1:30"], "", {}, (2, 90)),  # minutes:seconds, as Slurm's time_str2secs
    (["--switches=3@1-0"], "", {}, (3, 86400)),  # days-hours
    ([], "#SBATCH --switches=4@10\n", {}, (4, 600)),
    ([], "", {"SBATCH_REQ_SWITCH": "2"}, (2, -1)),
    ([], "", {"SBATCH_REQ_SWITCH": "2", "SBATCH_WAIT4SWITCH": "5"}, (2, 300)),
    (["--switches=2@9"], "", {"SBATCH_WAIT4SWITCH": "5"}, (2, 540)),
    ([], "", {}, (0, -1)),
])
def test_sbatch_switches(tmp_path, monkeypatch, argv, directive, environ, expected):
    from pyslurm_lite.cli import sbatch
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/sh\n{directive}true\n")
    for k, v in environ.items():
        monkeypatch.setenv(k, v)
    parser = sbatch.build_parser()
    ns, text = sbatch.merged_options(parser, argv + [str(script)], environ)
    spec = sbatch.spec_from_args(ns, text, str(tmp_path))
    assert (spec.req_switch, spec.wait4switch) == expected


@pytest.mark.parametrize("value, message", [
    ("abc", 'Invalid numeric value "abc" for --switches.'),
    ("0", 'Invalid numeric value "0" for --switches.'),
    ("-1", 'Invalid numeric value "-1" for --switches.'),
    ("2@soon", "Invalid --switches time specification: soon"),
])
def test_bad_switches_are_refused(value, message):
    from pyslurm_lite.cli import sbatch
    from pyslurm_lite.errors import InvalidRequest
    ns = sbatch.build_parser().parse_args([f"--switches={value}", "--wrap", "true"])
    ns.script, ns.script_args = None, []
    with pytest.raises(InvalidRequest) as e:
        sbatch.spec_from_args(ns, "#!/bin/sh\ntrue\n", "/tmp")
    assert str(e.value.message if hasattr(e.value, "message") else e.value) == message
