"""Reading SWF traces: the header's machine size, the field rules, skipped jobs, service order,
and errors that name the line."""

from __future__ import annotations

import gzip

import pytest

from pyslurm_lite.errors import InvalidRequest
from pyslurm_lite.sim import swf

REST = "-1 1 1 1 -1 1 -1 -1 -1"  # fields 10..18, unused


def line(job, submit, run, alloc, req_procs, req_time) -> str:
    return f"{job} {submit} -1 {run} {alloc} -1 -1 {req_procs} {req_time} {REST}"


@pytest.mark.parametrize("header, procs, machine", [
    ("; MaxNodes: 100\n; MaxProcs: 128\n", None, 128),  # MaxProcs wins
    ("; MaxNodes: 338 (batch partition; 512 total)\n", None, 338),  # CTC: text after the number
    ("; MaxNodes: 256\n; MaxRuntime: 162754\n", None, 256),  # lublin: no MaxProcs
    ("; MaxProcs: -1\n; MaxNodes: 64\n", None, 64),  # a missing MaxProcs
    ("; MaxProcs: 128\n", 16, 16),  # --procs overrides
    ("", 8, 8),
], ids=["maxprocs", "maxnodes-with-text", "maxnodes-only", "maxprocs-missing", "override",
        "no-header"])
def test_machine_size(header, procs, machine):
    t = swf.parse(header + line(1, 0, 10, 4, 4, 60) + "\n", procs=procs)
    assert t.machine == machine


def test_no_machine_size_is_an_error():
    with pytest.raises(InvalidRequest, match="no MaxProcs or MaxNodes.*--procs"):
        swf.parse("; Version: 2\n" + line(1, 0, 10, 4, 4, 60) + "\n", "t.swf")


@pytest.mark.parametrize("fields, kept", [
    ((10, 4, 8, 60), (10, 4, 60)),  # allocated processors (5) before requested (8)
    ((10, -1, 8, 60), (10, 8, 60)),  # no allocated: requested
    ((10, 4, 4, -1), (10, 4, 10)),  # no requested time: the run time is the estimate
    ((500, 4, 4, 100), (100, 4, 100)),  # killed at its estimate
    ((0, 4, 4, 60), None),  # run 0
    ((-1, 4, 4, 60), None),  # run missing
    ((10, -1, -1, 60), None),  # no processors
    ((10, 0, 0, 60), None),
    ((10, 17, 17, 60), None),  # more than the machine (16)
], ids=["alloc", "requested-procs", "estimate-from-run", "killed", "run-0", "run-missing",
        "no-procs", "zero-procs", "too-big"])
def test_field_rules(fields, kept):
    run, alloc, req, est = fields
    t = swf.parse("; MaxProcs: 16\n" + line(7, 5, run, alloc, req, est) + "\n")
    if kept is None:
        assert (len(t), t.skipped) == (0, 1)
    else:
        assert (t.ids, t.submit, t.run, t.procs, t.estimate, t.skipped) == (
            [7], [5], [kept[0]], [kept[1]], [kept[2]], 0)


def test_service_order_is_submit_then_file_order():
    t = swf.parse("; MaxProcs: 4\n" + "\n".join([line(1, 50, 5, 1, 1, 9), line(2, 10, 5, 1, 1, 9),
                                                line(3, 50, 5, 1, 1, 9), line(4, 10, 5, 1, 1, 9)]))
    assert (t.ids, t.submit) == ([2, 4, 1, 3], [10, 10, 50, 50])


def test_careful_reader_gives_the_same_columns():
    """Comments among the data, blank lines and fractions send the reader down its slow path,
    which must agree with the fast one."""
    lines = [line(k, 10 * k, 100 + k, 1 + k % 4, 4, 200) for k in range(1, 30)]
    fast = swf.parse("; MaxProcs: 8\n" + "\n".join(lines) + "\n")
    odd = ["; MaxProcs: 8"] + lines[:10] + ["", "; a comment in the middle"] + lines[10:]
    slow = swf.parse("\r\n".join(odd))
    assert (slow.ids, slow.submit, slow.run, slow.procs, slow.estimate) == (
        fast.ids, fast.submit, fast.run, fast.procs, fast.estimate)
    frac = swf.parse("; MaxProcs: 8\n" + line(1, 0.5, 10.25, 2, 2, 60))
    assert (frac.submit, frac.run) == ([0.5], [10.25])


@pytest.mark.parametrize("text, message", [
    (line(1, 0, 10, 4, 4, 60).rsplit(" ", 1)[0], r"t\.swf:2: expected 18 fields, found 17"),
    (line(1, 0, "ten", 4, 4, 60), r"t\.swf:2: field 4 is not a number: 'ten'"),
])
def test_malformed_line_is_named(text, message):
    with pytest.raises(InvalidRequest, match=message):
        swf.parse("; MaxProcs: 8\n" + text + "\n", "t", where="t.swf")


def test_reads_gzip_whatever_the_name(tmp_path):
    body = "; MaxNodes: 4\n" + line(3, 0, 10, 2, 2, 60) + "\n"
    for name in ("a.swf.gz", "lublin_like_new2.gz"):
        path = tmp_path / name
        path.write_bytes(gzip.compress(body.encode()))
        t = swf.read(str(path))
        assert (t.ids, t.machine) == ([3], 4)
    (tmp_path / "plain.swf").write_text(body)
    t = swf.read(str(tmp_path / "plain.swf"))
    assert (t.name, t.ids) == ("plain", [3])
    assert swf.trace_name("/x/KTH-SP2-1996-2.1-cln.swf.gz") == "KTH-SP2-1996-2.1-cln"


def test_missing_file_is_a_one_line_error(tmp_path):
    with pytest.raises(InvalidRequest, match="cannot read trace .*nope.swf"):
        swf.read(str(tmp_path / "nope.swf"))
