"""sprio: the factors behind pending jobs' priorities (priority/multifactor)."""

from __future__ import annotations


from .common import SlurmArgParser, fail, run, split_list, write_lines

PROG = "sprio"
COLUMNS = ("age", "fairshare", "jobsize", "partition", "qos")
HEADER = "          JOBID PARTITION   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE  PARTITION        QOS"
# -l: Slurm's "%.15i %9r %.8u %.10Y %.10S %.10A %.10F %.10J %.10P %.10Q %.11N %.20T"
LONG_HEADER = ("          JOBID PARTITION     USER   PRIORITY       SITE        AGE  FAIRSHARE    JOBSIZE"
               "  PARTITION        QOS        NICE                 TRES")
TRES_PREFIX = "tres:"  # job.factors' keys of the PriorityWeightTRES factors (weighted)


def tres_cell(factors, weights: dict[str, float], normalized: bool) -> str:
    """Slurm's TRES column: each weighted TRES's factor, "gres/gpu=500" (-n: the factor alone)."""
    items = []
    for name, weight in weights.items():
        value = factors.get(TRES_PREFIX + name, 0.0)
        items.append(f"{name}={value / weight:.2f}" if normalized and weight else f"{name}={int(round(value))}")
    text = ",".join(items)
    return text if len(text) <= 20 else text[:19] + "+"


def row(job, normalized: bool, long: bool = False, tres_weights: dict[str, float] | None = None) -> str:
    f = job.factors
    user = f" {job.spec.user[:8]:>8}" if long else ""
    cells = [f"{job.job_id:>15} {job.partition[:9]:>9}{user} {job.priority:>10} {0:>10}"]
    for name in COLUMNS:
        value = f.get(name, 0.0)
        cells.append(f"{value:>10.7f}" if normalized else f"{int(round(value)):>10}")
    if long:
        cells.append(f"{job.spec.nice:>11}")
    if long or tres_weights:
        cells.append(f"{tres_cell(f, tres_weights or {}, normalized):>20}")
    return " ".join(cells)


def main_args(argv: list[str]) -> int:
    p = SlurmArgParser(prog=PROG, add_help=False)
    p.add_argument("-j", "--jobs", action="append")
    p.add_argument("-u", "--user", "--users", dest="user", action="append")
    p.add_argument("-h", "--noheader", action="store_true")
    p.add_argument("-n", "--norm", action="store_true")
    p.add_argument("-l", "--long", action="store_true")
    p.add_argument("--help", action="help")
    ns = p.parse_args(argv)
    from ..client import Client
    client = Client()
    if client.cfg.priority_type != "priority/multifactor":
        fail(PROG, f"You are not running a supported priority plugin ({client.cfg.priority_type}).\n"
                   "Only 'priority/multifactor' is supported.")
    ids = [int(v.split("_")[0]) for v in split_list(ns.jobs) if v.split("_")[0].isdigit()]
    jobs, _ = client.jobs(job_ids=ids, states=["PENDING"], users=split_list(ns.user))
    weights = client.cfg.priority_weight_tres  # PriorityWeightTRES: a TRES column, as Slurm adds
    header = LONG_HEADER if ns.long else HEADER + (f" {'TRES':>20}" if weights else "")
    out = [] if ns.noheader else [header]
    out += [row(j, ns.norm, ns.long, weights) for j in sorted(jobs, key=lambda j: j.job_id)]
    write_lines(out)
    return 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
