"""sprio: the factors behind pending jobs' priorities (priority/multifactor)."""

from __future__ import annotations


from .common import SlurmArgParser, fail, run, split_list, write_lines

PROG = "sprio"
COLUMNS = ("age", "fairshare", "jobsize", "partition", "qos")
HEADER = "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS"


def row(job, normalized: bool) -> str:
    f = job.factors
    cells = [f"{job.job_id:>15} {job.partition[:9]:>9} {job.priority:>10} {0:>10}"]
    for name in COLUMNS:
        value = f.get(name, 0.0)
        cells.append(f"{value:>10.7f}" if normalized else f"{int(round(value)):>10}")
    return " ".join(cells)


def main_args(argv: list[str]) -> int:
    p = SlurmArgParser(prog=PROG, add_help=False)
    p.add_argument("-j", "--jobs", action="append")
    p.add_argument("-u", "--user", "--users", dest="user", action="append")
    p.add_argument("-h", "--noheader", action="store_true")
    p.add_argument("-n", "--norm", action="store_true")
    p.add_argument("--help", action="help")
    ns = p.parse_args(argv)
    from ..client import Client
    client = Client()
    if client.cfg.priority_type != "priority/multifactor":
        fail(PROG, f"You are not running a supported priority plugin ({client.cfg.priority_type}).\n"
                   "Only 'priority/multifactor' is supported.")
    ids = [int(v.split("_")[0]) for v in split_list(ns.jobs) if v.split("_")[0].isdigit()]
    jobs, _ = client.jobs(job_ids=ids, states=["PENDING"], users=split_list(ns.user))
    out = [] if ns.noheader else [HEADER]
    out += [row(j, ns.norm) for j in sorted(jobs, key=lambda j: j.job_id)]
    write_lines(out)
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
