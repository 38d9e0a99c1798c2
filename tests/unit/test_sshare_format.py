"""sshare's layout: Slurm's field names and order, indentation by depth, blank cells (root's
RawShares, accounts' FairShare under Fair Tree), inf, whole-number RawUsage, -o prefixes."""

from __future__ import annotations

import pytest

from pyslurm_lite.cli import sshare
from pyslurm_lite.controller import fairshare
from pyslurm_lite.model import Association, AssocTree


def rows():
    t = AssocTree({("root", ""): Association("root", "", parent=""),
                   ("physics", ""): Association("physics", "", fairshare=3),
                   ("bio", ""): Association("bio", "", fairshare=1),
                   ("physics", "p"): Association("physics", "p", parent="physics"),
                   ("bio", "b"): Association("bio", "b", parent="bio")})
    return fairshare.share_rows(fairshare.compute(t, {("physics", "p"): 600.7}), tres_names=("cpu",))


def test_parsable_long_fair_tree():
    out = sshare.render(rows(), sshare.field_names(sshare.LONG_FAIR_TREE), "P", True, "local")
    assert out[0] == ("Account|User|RawShares|NormShares|RawUsage|NormUsage|EffectvUsage|FairShare|"
                      "LevelFS|GrpTRESMins|TRESRunMins")
    assert out[1] == "root|||0.000000|600|1.000000|1.000000||||cpu=0"
    assert out[2] == " bio||1|0.250000|0|0.000000|0.000000||inf||cpu=0"
    assert out[3] == "  bio|b|1|1.000000|0|0.000000|0.000000|1.000000|inf||cpu=0"
    assert out[5] == "  physics|p|1|1.000000|600|1.000000|1.000000|0.500000|1.000000||cpu=0"


def test_fixed_width_header_and_trailing_bar():
    out = sshare.render(rows(), sshare.field_names(sshare.SHORT), "", True, "local")
    assert out[0] == ("             Account       User  RawShares  NormShares    RawUsage  EffectvUsage  FairShare ")
    assert out[1].split() == ["-" * 20, "-" * 10, "-" * 10, "-" * 11, "-" * 11, "-" * 13, "-" * 10]
    assert out[2].startswith("root                 ")
    assert sshare.render(rows(), ["account", "user"], "p", False, "x")[0] == "root||"


@pytest.mark.parametrize("spec, want", [
    ("A,User,Eff,Fairshare", ["account", "user", "effectvusage", "fairshare"]),
    ("RawU,norms%20,GrpTRES", ["rawusage", "normshares", "grptresmins"]),
])
def test_format_names_by_prefix(spec, want):
    assert sshare.field_names(spec) == want


def test_unknown_format_field_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        sshare.field_names("Account,Bogus")
    assert e.value.code == 1 and 'Invalid field requested: "bogus"' in capsys.readouterr().err
