"""The generated protobuf package is exactly what scripts/gen_proto.py makes from proto/ today:
protoc's modules and fields.py, pbwire's field table."""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHECKED_IN = ROOT / "pyslurm_lite" / "_proto"


def _files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file() and p.suffix in (".py", ".pyi"))


def test_generated_code_is_fresh(tmp_path):
    pytest.importorskip("grpc_tools", reason="grpcio-tools is not installed (pip install -e '.[test]')")
    out = tmp_path / "_proto"
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_proto.py"), str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "types_pb2.py" in _files(out) and "controller_pb2_grpc.py" in _files(out)
    assert "fields.py" in _files(out)
    assert _files(out) == _files(CHECKED_IN)
    stale = [name for name in _files(out)
             if not filecmp.cmp(out / name, CHECKED_IN / name, shallow=False)]
    assert stale == [], f"stale generated files (run scripts/gen_proto.py): {stale}"
