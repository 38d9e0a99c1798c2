"""sstat: what the running steps of a job use now, from the agents' latest samples (Slurm's
sstat asks the slurmstepds; here the agents send samples every JobAcctGatherFrequency seconds,
so figures are at most that old, and with JobAcctGatherFrequency=0 there are none until the
step ends).

Selection as Slurm 22.05's sstat.c: `-j ID.STEP` that step; `-j ID` the lowest numbered srun
step running (never the batch script: a batch-only job prints nothing); `-a -j ID` every running
step, batch included; a job with nothing running: "No steps running for job ID" (exit 0, as
Slurm's main returns 0 whatever it could not stat). Values as sstat prints them: sizes through
convert_num_unit without CONVERT_NUM_UNIT_EXACT (209977344 -> "200.25M"), CPU times through
_elapsed_time. Fields Slurm has that nothing here measures (disk, pages, energy, virtual memory,
CPU frequency) print as a cgroup v2 Slurm prints them, 0; asked for by name, they are warned of.
"""

from __future__ import annotations

import argparse
import sys

from .acctusage import (elapsed_time, max_rss, min_cpu, node_uses, run_samples, secs2time_str,
                        tasks_of)
from .common import SlurmArgParser, fail, run, split_list, write_lines

PROG = "sstat"
BATCH = "batch"
# Slurm's field table: name -> width (negative: left-justified), in sstat.c's order.
WIDTHS = {
    "AveCPU": 10, "AveCPUFreq": 10, "AveDiskRead": 12, "AveDiskWrite": 12, "AvePages": 10,
    "AveRSS": 10, "AveVMSize": 10, "ConsumedEnergy": 14, "ConsumedEnergyRaw": 17, "JobID": -12,
    "MaxDiskRead": 12, "MaxDiskReadNode": 15, "MaxDiskReadTask": 15, "MaxDiskWrite": 12,
    "MaxDiskWriteNode": 16, "MaxDiskWriteTask": 16, "MaxPages": 8, "MaxPagesNode": 12,
    "MaxPagesTask": 14, "MaxRSS": 10, "MaxRSSNode": 10, "MaxRSSTask": 10, "MaxVMSize": 10,
    "MaxVMSizeNode": 14, "MaxVMSizeTask": 14, "MinCPU": 10, "MinCPUNode": 10, "MinCPUTask": 10,
    "Nodelist": 20, "NTasks": 8, "Pids": 20, "ReqCPUFreq": 10, "ReqCPUFreqMin": 13,
    "ReqCPUFreqMax": 13, "ReqCPUFreqGov": 13, "TRESUsageInAve": 14, "TRESUsageInMax": 14,
    "TRESUsageInMaxNode": 18, "TRESUsageInMaxTask": 18, "TRESUsageInMin": 14,
    "TRESUsageInMinNode": 18, "TRESUsageInMinTask": 18, "TRESUsageInTot": 14,
    "TRESUsageOutAve": 15, "TRESUsageOutMax": 15, "TRESUsageOutMaxNode": 19,
    "TRESUsageOutMaxTask": 19, "TRESUsageOutMin": 15, "TRESUsageOutMinNode": 19,
    "TRESUsageOutMinTask": 19, "TRESUsageOutTot": 15,
}
DEFAULT_FIELDS = (  # sstat.h's STAT_FIELDS
    "jobid,maxvmsize,maxvmsizenode,maxvmsizetask,avevmsize,maxrss,maxrssnode,maxrsstask,averss,"
    "maxpages,maxpagesnode,maxpagestask,avepages,mincpu,mincpunode,mincputask,avecpu,ntasks,"
    "avecpufreq,reqcpufreqmin,reqcpufreqmax,reqcpufreqgov,consumedenergy,maxdiskread,"
    "maxdiskreadnode,maxdiskreadtask,avediskread,maxdiskwrite,maxdiskwritenode,maxdiskwritetask,"
    "avediskwrite,tresusageinave,tresusageinmax,tresusageinmaxn,tresusageinmaxt,tresusageinmin,"
    "tresusageinminn,tresusageinmint,tresusageintot,tresusageoutave,tresusageoutmax,"
    "tresusageoutmaxn,tresusageoutmaxt,tresusageoutmin,tresusageoutminn,tresusageoutmint,"
    "tresusageouttot")
PID_FIELDS = "jobid,nodelist,pids"  # -i

USAGE = "Usage: sstat [options] -j <job(.stepid)>\n\tUse --help for help\n"
HELP = """\
sstat [<OPTION>] -j <job(.stepid)>                                          
    Valid <OPTION> values are:                                              
      -a, --allsteps:                                                       
                   Print all steps for the given job(s) when no step is     
                   specified.                                               
      -e, --helpformat:                                                     
\t           Print a list of fields that can be specified with the    
\t           '--format' option                                        
     -h, --help:   Print this description of use.                           
     -i, --pidformat:                                                       
                   Predefined format to list the pids running for each      
                   job step.  (JobId,Nodes,Pids)                            
     -j, --jobs:                                                            
\t           Format is <job(.step)>. Stat this job step               
                   or comma-separated list of job steps. This option is     
                   required.  The step portion will default to the lowest   
                   numbered (not batch, extern, etc) step running if not    
                   specified, unless the --allsteps flag is set where not   
                   specifying a step will result in all running steps       
                   to be displayed. A step id of 'batch' will display the   
                   information about the batch step. A step id of 'extern'  
                   will display the information about the extern step       
                   when using PrologFlags=contain.                          
     -n, --noheader:                                                        
\t           No header will be added to the beginning of output.      
                   The default is to print a header.                        
     --noconvert:  Don't convert units from their original type             
\t\t   (e.g. 2048M won't be converted to 2G).                   
     -o, --format:                                                          
\t           Comma separated list of fields. (use "--helpformat"    
                   for a list of available fields).                         
     -p, --parsable: output will be '|' delimited with a '|' at the end     
     -P, --parsable2: output will be '|' delimited without a '|' at the end 
     --usage:      Display brief usage message.                             
     -v, --verbose:                                                         
\t           Primarily for debugging purposes, report the state of    
                   various variables during processing.                     
     -V, --version: Print version.                                          

"""
_UNITS = ("", "K", "M", "G", "T", "P", "?")


class _Print(argparse.Action):
    def __init__(self, option_strings, dest, text="", **kwargs):
        self.text = text
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        sys.stdout.write(self.text() if callable(self.text) else self.text)
        sys.exit(0)


def help_format() -> str:
    """-e: the names four to a line, each in 19 columns, as _help_fields_msg prints them."""
    names = list(WIDTHS)
    return "\n".join(" ".join(f"{n:<19}" for n in names[i:i + 4])
                     for i in range(0, len(names), 4)) + "\n"


def build_parser() -> SlurmArgParser:
    p = SlurmArgParser(prog=PROG, add_help=False)
    p.add_argument("-a", "--allsteps", action="store_true")
    p.add_argument("-e", "--helpformat", action=_Print, text=help_format)
    p.add_argument("-h", "--help", action=_Print, text=HELP)
    p.add_argument("--usage", action=_Print, text=USAGE)
    p.add_argument("-i", "--pidformat", action="store_true")
    p.add_argument("-j", "--jobs", action="append", default=[])
    p.add_argument("-n", "--noheader", action="store_true")
    p.add_argument("--noconvert", action="store_true")
    p.add_argument("-o", "--format", "--fields", dest="format", action="append", default=[])
    p.add_argument("-p", "--parsable", action="store_true")
    p.add_argument("-P", "--parsable2", action="store_true")
    p.add_argument("-v", "--verbose", action="count", default=0)
    p.add_argument("job", nargs="?")
    return p


# ---- what is asked ----------------------------------------------------------------------------
def parse_fields(ns) -> list[tuple[str, int]]:
    """-o (and -i) as Slurm's: names matched case-insensitively by prefix (the first in the
    table's order wins, as sstat's xstrncasecmp loop), %N setting the width."""
    text = ",".join(([PID_FIELDS] if ns.pidformat else []) + ns.format) or DEFAULT_FIELDS
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        name, _, width = item.partition("%")
        found = next((f for f in WIDTHS if f.lower().startswith(name.lower())), None)
        if found is None:
            fail(PROG, f'Invalid field requested: "{name}"')
        out.append((found, int(width) if width.lstrip("-").isdigit() else WIDTHS[found]))
    return out


def parse_selections(ns) -> list[tuple[int, str | None]]:
    """-j 12,13.0,14.batch (and one positional) -> [(12, None), (13, "0"), (14, "batch")]."""
    out = []
    for item in split_list(ns.jobs + ([ns.job] if ns.job else [])):
        job, _, step = item.partition(".")
        if not job.isdigit() or (step and not (step.isdigit() or step == BATCH)):
            fail(PROG, f"Invalid job id: {item}")
        out.append((int(job), step or None))
    return out


def running_steps(job) -> list[str]:
    """The job's running steps as sstat names them: its batch script, then srun steps by id."""
    if job.state != "RUNNING":
        return []
    steps = [BATCH] if job.spec.batch else []
    return steps + [str(s.step_id) for s in sorted(job.steps, key=lambda s: s.step_id)
                    if s.state == "RUNNING"]


def chosen(job, step: str | None, all_steps: bool) -> tuple[list[str], str]:
    """(the steps to print, the error when there are none) for one -j item."""
    running = running_steps(job)
    if not running:
        return [], (f"No steps running for job {job.job_id}" if step is None
                    else f"StepId={job.job_id}.{step} not found running.")
    if step is not None:
        return ([step], "") if step in running else \
            ([], f"StepId={job.job_id}.{step} not found running.")
    if all_steps:
        return running, ""
    return [s for s in running if s != BATCH][:1], ""


# ---- values -----------------------------------------------------------------------------------
def convert(num: float, noconvert: bool = False) -> str:
    """convert_num_unit without EXACT (sstat's default): divide by 1024 while >= 1024."""
    if int(num) == 0:
        return "0"
    unit = 0
    while num >= 1024 and not noconvert:
        num /= 1024
        unit += 1
    letter = _UNITS[min(unit, len(_UNITS) - 1)]
    return f"{int(num)}{letter}" if num == int(num) else f"{num:.2f}{letter}"


def usage_in(uses, kind: str) -> dict[str, float]:
    """TRESUsageIn{Ave,Max,Min,Tot} counts: cpu seconds (per task but Tot), bytes, percent."""
    n = tasks_of(uses)
    gpu = [u.sample for u in uses if u.sample.gpus]
    if kind == "tot":
        out = {"cpu": sum(u.cpu for u in uses), "mem": sum(u.sample.rss for u in uses)}
        gpu_util, gpu_mem = sum(s.gpu_util for s in gpu), sum(s.gpu_mem for s in gpu)
    elif kind == "ave":
        out = {"cpu": sum(u.cpu for u in uses) / n, "mem": sum(u.sample.ave_rss for u in uses) / n}
        gpu_util = sum(s.ave_gpu_util for s in gpu) / max(len(gpu), 1)
        gpu_mem = sum(s.gpu_mem for s in gpu) / max(len(gpu), 1)
    else:
        pick = max if kind == "max" else min
        out = {"cpu": pick(u.cpu_per_task for u in uses),
               "mem": pick(u.sample.max_rss if kind == "max" else u.sample.rss for u in uses)}
        gpu_util = pick((s.max_gpu_util if kind == "max" else s.gpu_util) for s in gpu) if gpu else 0
        gpu_mem = pick((s.max_gpu_mem if kind == "max" else s.gpu_mem) for s in gpu) if gpu else 0
    if gpu:
        out.update({"gres/gpumem": gpu_mem, "gres/gpuutil": gpu_util})
    return out


def tres_text(counts: dict[str, float], noconvert: bool) -> str:
    shown = {k: secs2time_str(v) if k == "cpu" else convert(int(v), noconvert)
             for k, v in counts.items()}
    return ",".join(f"{k}={shown[k]}" for k in sorted(shown))


def values(job, step: str, fields, noconvert: bool = False) -> list[str]:
    nodes = job.node_names if step == BATCH else next(
        (list(s.nodes) for s in job.steps if str(s.step_id) == step), job.node_names)
    uses = node_uses(run_samples(job, step), nodes)
    return [value(name, job, step, uses, nodes, noconvert) for name, _ in fields]


def value(name: str, job, step: str, uses, nodes, noconvert: bool) -> str:
    from ..config import collect
    if name == "JobID":
        return f"{job.job_id}.{step}"
    if name == "Nodelist":
        return collect(nodes[:1] if step == BATCH else nodes)  # the script runs on the first
    if name == "NTasks":
        return str(sum(u.tasks for u in uses)) if uses else "0"
    if not uses:
        return "" if name.endswith("Node") or name == "Pids" else "0"
    if name == "MaxRSS":
        return convert(max_rss(uses).sample.max_rss, noconvert)
    if name == "MaxRSSNode":
        return max_rss(uses).node
    if name == "MaxRSSTask":
        return str(max_rss(uses).first_task)
    if name == "AveRSS":
        return convert(int(usage_in(uses, "ave")["mem"]), noconvert)
    if name == "AveCPU":
        return elapsed_time(int(usage_in(uses, "ave")["cpu"]))
    if name == "MinCPU":
        return elapsed_time(int(min_cpu(uses).cpu_per_task))
    if name == "MinCPUNode":
        return min_cpu(uses).node
    if name == "MinCPUTask":
        return str(min_cpu(uses).first_task)
    kind = {"TRESUsageInAve": "ave", "TRESUsageInMax": "max", "TRESUsageInMin": "min",
            "TRESUsageInTot": "tot"}.get(name)
    if kind:
        return tres_text(usage_in(uses, kind), noconvert)
    return unmeasured(name)


def unmeasured(name: str) -> str:
    """What sstat prints for a figure no gatherer here takes (jobacct_gather/cgroup on v2)."""
    if name.endswith("Node") or name.startswith("TRESUsageOut") or name == "Pids":
        return ""
    if name.startswith("ReqCPUFreq"):
        return "Unknown"
    return "0"


MEASURED = {"JobID", "Nodelist", "NTasks", "MaxRSS", "MaxRSSNode", "MaxRSSTask", "AveRSS",
            "AveCPU", "MinCPU", "MinCPUNode", "MinCPUTask", "TRESUsageInAve", "TRESUsageInMax",
            "TRESUsageInMin", "TRESUsageInTot"}


# ---- output -----------------------------------------------------------------------------------
def cell(value: str, width: int) -> str:
    size = abs(width)
    if len(value) > size:
        value = value[:size - 1] + "+"
    return (value.ljust(size) if width < 0 else value.rjust(size)) + " "


def render(cells: list[str], fields, ns) -> str:
    if ns.parsable2:
        return "|".join(cells)
    if ns.parsable:
        return "".join(c + "|" for c in cells)
    return "".join(cell(c, w) for c, (_, w) in zip(cells, fields))


def main_args(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    fields = parse_fields(ns)
    selections = parse_selections(ns)
    if not selections:
        fail(PROG, "You didn't give me any jobs to stat.")
    if ns.verbose:
        sys.stderr.write(f"{PROG}: warning: -v is not supported here and is ignored\n")
    if ns.pidformat:
        sys.stderr.write(f"{PROG}: warning: -i: agents do not report the steps' pids here "
                         "(Pids prints empty)\n")
    if ns.format:
        for name, _ in fields:
            if name not in MEASURED:
                sys.stderr.write(f"{PROG}: warning: {name} is not measured here and prints as "
                                 f"'{unmeasured(name)}'\n")
    from ..client import Client
    from ..errors import NotFound
    client = Client()
    lines = [] if ns.noheader else [render([n for n, _ in fields], fields, ns)]
    if not ns.noheader and not (ns.parsable or ns.parsable2):
        lines.append("".join("-" * abs(w) + " " for _, w in fields))
    for job_id, step in selections:
        try:
            jobs, _ = client.jobs(job_ids=[job_id], include_finished=True, raw=False)
        except NotFound:
            jobs = []
        if not jobs:
            sys.stderr.write(f"{PROG}: error: couldn't get steps for job {job_id}\n")
            continue
        steps, error = chosen(jobs[0], step, ns.allsteps)
        if error:
            sys.stderr.write(f"{PROG}: error: {error}\n")
        lines += [render(values(jobs[0], s, fields, ns.noconvert), fields, ns) for s in steps]
    write_lines(lines)
    return 0  # as Slurm's sstat: what it could not stat was said, the exit status stays 0


def main() -> None:
    run(PROG, main_args)


if __name__ == "__main__":
    main()
