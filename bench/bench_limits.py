#!/usr/bin/env python3
"""bench_sched.py's passes again, with association and QOS limits on: every job in one of 10
accounts under root (GrpTRES on each account and on root, MaxJobs and MaxTRES per user, a QOS
GrpTRES and MaxTRESPerUser; associations enforced), set high enough that they hold nothing back, so the figure is the
cost of checking them and the starts are the same as without. "plain" is the same queue with
only the QOS normal, as every controller has.

    python bench/bench_limits.py [--sizes 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_sched import NOW, snapshot_of, timed  # noqa: E402
from pyslurm_lite.model import Qos, TresLimits  # noqa: E402
from pyslurm_lite.sched import SchedConfig, schedule  # noqa: E402
from pyslurm_lite.sched.limits import AssocLimits  # noqa: E402

ACCOUNTS, USERS = 10, 50
BIG = 10**9


def with_limits(snap, limits: bool = True):
    """The same jobs in accounts; with limits, or with only the QOS normal every controller has."""
    account = {f"u{u}": f"acct{u % ACCOUNTS}" for u in range(USERS)}
    jobs = tuple(dataclasses.replace(j, account=account[j.user]) for j in snap.jobs)
    running = tuple(dataclasses.replace(r, user=f"u{i % USERS}", account=account[f"u{i % USERS}"])
                    for i, r in enumerate(snap.running))
    grp, maxes = {}, {}
    for user, acct in account.items():
        grp[(acct, user)] = (((acct, ""), {"cpu": BIG, "gres/gpu": BIG}, {}),
                             (("root", ""), {"gres/gpu": BIG}, {}))
        maxes[(acct, user)] = TresLimits(max_jobs=BIG, max_tres_per_job={"gres/gpu": BIG})
    if not limits:
        return dataclasses.replace(snap, jobs=jobs, running=running, qos={"normal": Qos("normal")})
    qos = {"normal": Qos("normal", grp_tres={"gres/gpu": BIG}, max_tres_per_user={"cpu": BIG})}
    # AccountingStorageEnforce=associations too: every job's (account, user) is looked up
    return dataclasses.replace(snap, jobs=jobs, running=running, qos=qos,
                               limits=AssocLimits(grp=grp, max=maxes, assocs=frozenset(grp)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    configs = [("easy, bf_max_job_test=500", SchedConfig(max_job_test=500)),
               ("easy, every job tested", SchedConfig()),
               ("builtin (no backfill)", SchedConfig(backfill=False))]
    print(f"{'pending':>8} | {'policy':<30} | {'plain ms':>8} | {'limits ms':>9} | {'starts':>13}")
    for n in (int(s) for s in args.sizes.split(",")):
        base = snapshot_of(n)
        plain, limited = with_limits(base, limits=False), with_limits(base)
        for label, config in configs:
            t0 = t1 = float("inf")
            for _ in range(args.repeat):  # interleaved: a busy machine slows both alike
                d0, p0 = timed(lambda: schedule(plain, NOW, config), 1)
                d1, p1 = timed(lambda: schedule(limited, NOW, config), 1)
                t0, t1 = min(t0, d0), min(t1, d1)
            print(f"{n:>8} | {label:<30} | {t0 * 1000:>8.1f} | {t1 * 1000:>9.1f} | "
                  f"{len(p0.starts):>6}/{len(p1.starts):<6}")


if __name__ == "__main__":
    main()
