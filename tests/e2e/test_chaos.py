"""The chaos run, short enough for CI: kill -9 of random daemons under a steady load, then the
invariants (tests/chaos/chaos.py says which). Longer runs: python tests/chaos/chaos.py."""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "chaos"))
import chaos  # noqa: E402


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="checks job cgroups, which need root")
def test_chaos_keeps_every_invariant(tmp_path, capsys):
    rc = chaos.main(["--seconds", "30", "--jobs", "120", "--seed", "7", "--dir", str(tmp_path / "c")])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert out.count("PASS") == 5
