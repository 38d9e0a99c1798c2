"""sacctmgr's command line (cli/sacctmgr.py): options anywhere, where/set, format=, layouts."""

from __future__ import annotations

import pytest

from pyslurm_lite.cli.sacctmgr import Usage, columns, command, parse, render

FLAGS = {"immediate": False, "parsable": False, "parsable2": False, "noheader": False}


def test_options_anywhere_and_format():
    flags, words = parse(["show", "assoc", "format=Account,User,Fairshare", "-P"])
    assert flags["parsable2"] and words == ["show", "assoc", "format=Account,User,Fairshare"]
    cmd = command(words)
    assert (cmd["verb"], cmd["entity"], cmd["format"]) == ("show", "association", ["Account", "User", "Fairshare"])


@pytest.mark.parametrize("argv, verb, entity, names, where, settings", [
    (["add", "account", "physics", "Fairshare=3"], "add", "account", ["physics"], {}, {"Fairshare": "3"}),
    (["create", "user", "alice", "Account=physics"], "add", "user", ["alice"], {}, {"Account": "physics"}),
    (["modify", "user", "alice", "set", "QOS=normal,high", "DefaultQOS=normal"], "modify", "user",
     ["alice"], {}, {"QOS": "normal,high", "DefaultQOS": "normal"}),
    (["update", "user", "where", "name=alice", "account=bio", "set", "QOS+=high"], "modify", "user",
     [], {"name": "alice", "account": "bio"}, {"QOS+": "high"}),
    (["remove", "qos", "high"], "delete", "qos", ["high"], {}, {}),
    (["list", "users", "alice,bob"], "show", "user", ["alice", "bob"], {}, {}),
])
def test_command(argv, verb, entity, names, where, settings):
    cmd = command(argv)
    assert (cmd["verb"], cmd["entity"], cmd["names"], cmd["where"], cmd["set"]) == \
        (verb, entity, names, where, settings)


@pytest.mark.parametrize("argv", [["show"], ["frob", "account"], ["add", "cluster", "x"],
                                  ["modify", "user", "alice"]])
def test_bad_commands(argv):
    with pytest.raises(Usage):
        command(argv)


def test_unknown_option_and_field():
    with pytest.raises(Usage):
        parse(["-Z", "show", "qos"])
    with pytest.raises(Usage, match="Unknown field 'Bogus'"):
        columns("association", ["Bogus"])


def test_layouts():
    rows = [{"Account": "physics", "User": "", "Fairshare": "3"}]
    cols = columns("association", ["Account", "User", "share%5"])
    assert render(rows, cols, {**FLAGS, "parsable2": True}) == ["Account|User|Share", "physics||3"]
    assert render(rows, cols, {**FLAGS, "parsable": True, "noheader": True}) == ["physics||3|"]
    assert render(rows, cols, FLAGS) == ["   Account       User Share ", "---------- ---------- ----- ",
                                         "   physics                3 "]
    long = [{"Account": "averyverylongname", "User": "", "Fairshare": "1"}]
    assert render(long, cols, {**FLAGS, "noheader": True})[0].startswith("averyvery+ ")


def test_show_options_not_supported_warn(capsys):
    cmd = command(["show", "user", "WithAssoc"])
    assert cmd["names"] == []
    assert "sacctmgr: warning: WithAssoc is not supported here and is ignored" in capsys.readouterr().err
