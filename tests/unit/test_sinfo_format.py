"""sinfo's -O/--Format, -S/--sort and SINFO_* variables (sinfo_opts) and the per-node GresUsed
text (nodefields), on model Nodes; the listing end to end is in tests/e2e/test_gres_consistency.py."""

from __future__ import annotations

import types

import pytest

from pyslurm_lite.cli import nodefields as nf, sinfo, sinfo_opts
from pyslurm_lite.config import parse_gres_spec
from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.model import GpuDevice, Node, NodeConfig, NodeState, Partition


def node(name, gres="gpu:4", types_=None, alloc=(), state=NodeState.IDLE, alloc_mem=0, drain=False):
    g = parse_gres_spec(gres)
    count = sum(x.count for x in g if x.name == "gpu")
    kinds = types_ or [next((x.type for x in g if x.name == "gpu"), "")] * count
    return Node(config=NodeConfig(name=name, cpus=4, real_memory=4000, gres=g), state=state,
                responding=True, gpus=[GpuDevice(index=i, type=t) for i, t in enumerate(kinds)],
                alloc_gpus=list(alloc), alloc_mem=alloc_mem, alloc_cpus=1 if alloc else 0, drain=drain)


@pytest.mark.parametrize("n, text", [
    (node("n1"), "gpu:0(IDX:N/A)"),
    (node("n1", alloc=[0, 1, 3]), "gpu:3(IDX:0-1,3)"),
    (node("n1", "gpu:a100:2,gpu:t4:2", ["a100", "a100", "t4", "t4"], alloc=[2]),
     "gpu:a100:0(IDX:N/A),gpu:t4:1(IDX:2)"),
    (node("n1", "gpu:2,shard:8", alloc=[1]), "gpu:1(IDX:1),shard:0"),
    (node("n1", ""), "(null)"),
])
def test_gres_used(n, text):
    assert nf.gres_used_text(n) == text


@pytest.mark.parametrize("spec, tokens", [
    ("NodeList,GresUsed", [("N", 20, False), ("gresused", 20, False)]),
    ("nodelist:10,cpusstate:.14", [("N", 10, False), ("C", 14, True)]),
    ("StateLong:8|,AllocMem", [("T", 8, False), "|", ("allocmem", 20, False)]),
    ("All,Reason", [("E", 20, False)]),
])
def test_parse_long(spec, tokens):
    assert sinfo_opts.parse_long(spec) == tokens


def test_unknown_long_field_is_refused_by_name():
    with pytest.raises(InvalidRequest, match="Invalid node format specification: Bogus"):
        sinfo_opts.parse_long("NodeList,Bogus")


@pytest.mark.parametrize("spec, keys", [
    ("#P,-t", [("P", False, True), ("t", True, False)]),
    ("-N", [("N", True, False)]), ("+m,w", [("m", False, False), ("w", False, False)]),
])
def test_parse_sort(spec, keys):
    assert sinfo_opts.parse_sort(spec) == keys


@pytest.mark.parametrize("bad", ["x", "--N", "PP", "-"])
def test_bad_sort_is_refused(bad):
    with pytest.raises(InvalidRequest, match="Invalid sort specification"):
        sinfo_opts.parse_sort(bad)


def test_sort_after_dash_s_is_its_value_even_with_a_leading_dash():
    assert sinfo_opts.attach_sort(["-N", "-S", "-t", "-h"]) == ["-N", "--sort=-t", "-h"]
    assert sinfo_opts.attach_sort(["--sort", "-N"]) == ["--sort=-N"]


def _ns(**kw):
    base = dict(partition=None, sort=None, format=None, Format=None, summarize=False,
                node_view=False, reasons=False)
    return types.SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("kw, env, want", [
    ({}, {"SINFO_FORMAT": "%N %t"}, {"format": "%N %t"}),
    ({"format": "%P"}, {"SINFO_FORMAT": "%N %t"}, {"format": "%P"}),
    ({"node_view": True}, {"SINFO_FORMAT": "%N %t"}, {"format": None}),  # as sinfo's opts.c
    ({}, {"SINFO_PARTITION": "gpu", "SINFO_SORT": "-N"}, {"partition": ["gpu"], "sort": "-N"}),
    ({"sort": "P"}, {"SINFO_SORT": "-N"}, {"sort": "P"}),
])
def test_env_defaults(kw, env, want):
    ns = _ns(**kw)
    sinfo_opts.env_defaults(ns, env)
    assert {k: getattr(ns, k) for k in want} == want


def test_sort_rows_orders_node_rows_by_the_keys():
    part = Partition(name="main", nodes=["n1", "n2", "n10"])
    rows = [(part, [node("n1", alloc_mem=500, alloc=[0], state=NodeState.MIXED)]),
            (part, [node("n2")]), (part, [node("n10", alloc_mem=1500, alloc=[0], state=NodeState.MIXED)])]
    names = lambda rs: [r[1][0].config.name for r in rs]  # noqa: E731
    assert names(sinfo.sort_rows(rows, sinfo_opts.parse_sort("-N"), [part], "c")) == ["n10", "n2", "n1"]
    assert names(sinfo.sort_rows(rows, sinfo_opts.parse_sort("-t,N"), [part], "c")) == ["n1", "n10", "n2"]
