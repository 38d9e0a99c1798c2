"""Fair share over the account tree: Fair Tree's ranks and classic's factors on small trees
(the worked example of controller/fairshare.py among them), sshare's rows."""

from __future__ import annotations

import math

import pytest

from pyslurm_lite.controller import fairshare
from pyslurm_lite.model import Association, AssocTree


def tree(*assocs: Association, defaults=None) -> AssocTree:
    t = AssocTree({(a.account, a.user): a for a in assocs}, defaults or {})
    t.assocs.setdefault(("root", ""), Association("root", "", parent=""))
    return t


def acct(name, shares, parent="root"):
    return Association(name, "", parent=parent, fairshare=shares)


def user(name, account, shares=1):
    return Association(account, name, parent=account, fairshare=shares)


PHYS_BIO = tree(acct("physics", 3), acct("bio", 1), user("p", "physics"), user("b", "bio"))


@pytest.mark.parametrize("t, usage, want", [
    # the module's worked example: physics under its share ranks its user first
    (PHYS_BIO, {("physics", "p"): 600.0, ("bio", "b"): 400.0}, {("physics", "p"): 1.0, ("bio", "b"): 0.5}),
    # physics over its share (90 % for 75 %): bio's user first
    (PHYS_BIO, {("physics", "p"): 900.0, ("bio", "b"): 100.0}, {("physics", "p"): 0.5, ("bio", "b"): 1.0}),
    # nobody used anything: all tie at the top
    (PHYS_BIO, {}, {("physics", "p"): 1.0, ("bio", "b"): 1.0}),
    # within an account: the user who used less ranks first; the other account sits between
    (tree(acct("a", 1), acct("b", 1), user("a1", "a"), user("a2", "a"), user("b1", "b")),
     {("a", "a1"): 100.0, ("a", "a2"): 10.0, ("b", "b1"): 500.0},
     {("a", "a2"): 1.0, ("a", "a1"): 2 / 3, ("b", "b1"): 1 / 3}),
    # tied accounts (neither used anything) have their users ranked together
    (tree(acct("a", 1), acct("b", 1), acct("c", 1), user("a1", "a"), user("b1", "b"), user("c1", "c")),
     {("c", "c1"): 50.0}, {("a", "a1"): 1.0, ("b", "b1"): 1.0, ("c", "c1"): 1 / 3}),
    # a sub-account's users stay below their parent account's standing
    (tree(acct("dept", 1), acct("lab", 1, parent="dept"), acct("other", 1), user("l1", "lab"),
          user("d1", "dept"), user("o1", "other")),
     {("lab", "l1"): 10.0, ("dept", "d1"): 5.0, ("other", "o1"): 1.0},
     {("other", "o1"): 1.0, ("dept", "d1"): 2 / 3, ("lab", "l1"): 1 / 3}),
])
def test_fair_tree_ranks(t, usage, want):
    got = fairshare.factors(fairshare.compute(t, usage))
    assert got == pytest.approx(want)


def test_fair_tree_levels_of_the_worked_example():
    root = fairshare.compute(PHYS_BIO, {("physics", "p"): 600.0, ("bio", "b"): 400.0})
    rows = {(r.account, r.user): r for r in fairshare.share_rows(root)}
    phys, bio = rows[("physics", "")], rows[("bio", "")]
    assert (phys.norm_shares, bio.norm_shares) == pytest.approx((0.75, 0.25))
    assert (phys.effective_usage, bio.effective_usage) == pytest.approx((0.6, 0.4))
    assert (phys.level_fs, bio.level_fs) == pytest.approx((1.25, 0.625))
    assert rows[("root", "")].raw_usage == 1000.0 and rows[("root", "")].raw_shares == fairshare.NO_SHARES
    assert math.isnan(phys.fairshare)  # accounts have no factor in Fair Tree
    assert rows[("physics", "p")].level_fs == pytest.approx(1.0)  # alone in its account


def test_classic_factors_of_the_worked_example():
    root = fairshare.compute(PHYS_BIO, {("physics", "p"): 600.0, ("bio", "b"): 400.0}, classic=True)
    got = fairshare.factors(root)
    assert got[("physics", "p")] == pytest.approx(2 ** (-0.9 / 0.75))
    assert got[("bio", "b")] == pytest.approx(2 ** (-0.55 / 0.25))


def test_without_accounts_users_are_equal_under_root():
    t = fairshare.effective_tree(None, {("", "alice"), ("", "bob")})
    root = fairshare.compute(t, {("root", "alice"): 300.0, ("root", "bob"): 100.0})
    assert fairshare.factors(root) == pytest.approx({("root", "bob"): 1.0, ("root", "alice"): 0.5})
    classic = fairshare.factors(fairshare.compute(t, {("root", "alice"): 1.0}, classic=True))
    assert classic[("root", "alice")] == pytest.approx(2 ** (-(1 + 0 * 0.5) / 0.5))


def test_users_without_an_association_join_their_account():
    with_defaults = AssocTree(dict(PHYS_BIO.assocs), {"b": "bio"})
    t = fairshare.effective_tree(with_defaults, {("physics", "late"), ("", "b")})
    assert ("physics", "late") in t.assocs and ("bio", "b") in t.assocs and ("root", "b") not in t.assocs
    assert t.assocs[("physics", "")].fairshare == 3  # the tree's own shares stay
    assert fairshare.assoc_key(with_defaults, "", "b") == ("bio", "b")
    assert fairshare.assoc_key(None, "", "b") == ("root", "b")


def test_a_pair_that_is_no_association_charges_the_default_one():
    """Without associations enforced any -A is accepted: a fresh one must not start the user
    again from no usage, so it charges the user's default association, else root's."""
    with_defaults = AssocTree(dict(PHYS_BIO.assocs), {"b": "bio"})
    assert fairshare.assoc_key(with_defaults, "physics", "p") == ("physics", "p")  # its own
    assert fairshare.assoc_key(with_defaults, "fresh", "b") == ("bio", "b")
    assert fairshare.assoc_key(with_defaults, "physics", "b") == ("bio", "b")  # b is not in physics
    assert fairshare.assoc_key(with_defaults, "fresh", "nobody") == ("root", "nobody")
    assert fairshare.assoc_key(None, "physics", "p") == ("root", "p")  # no database: users equal


def test_share_rows_order_and_user_filter():
    root = fairshare.compute(PHYS_BIO, {("physics", "p"): 1.0})
    rows = fairshare.share_rows(root)
    assert [(r.account, r.user) for r in rows] == [("root", ""), ("bio", ""), ("bio", "b"),
                                                   ("physics", ""), ("physics", "p")]
    only = fairshare.share_rows(root, ["p"])
    assert [(r.account, r.user) for r in only if r.user] == [("physics", "p")]
    assert sum(1 for r in only if not r.user) == 3  # accounts always show


def test_run_minutes_and_grp_tres_mins_strings():
    t = tree(acct("physics", 3), user("p", "physics"))
    t.assocs[("physics", "")].limits.grp_tres_mins = {"gres/gpu": 600}
    root = fairshare.compute(t, {})
    rows = {(r.account, r.user): r for r in fairshare.share_rows(
        root, run_mins={("physics", "p"): {"cpu": 30.0, "gres/gpu": 30.0}}, tres_names=("cpu", "mem", "gres/gpu"))}
    assert rows[("physics", "")].grp_tres_mins == "gres/gpu=600"
    assert rows[("physics", "")].tres_run_mins == "cpu=30,mem=0,gres/gpu=30"
    assert rows[("root", "")].tres_run_mins == "cpu=30,mem=0,gres/gpu=30"
