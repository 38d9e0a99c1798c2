"""Placement requests, from a JobSpec to the scheduler's JobView: -w/--nodelist, -x/--exclude,
-N min-max, --mem=0, --mincpus, -O/--overcommit, --exclusive=user and typed GPUs of several kinds.

The controller builds a job's view (state.job_view) and passes it through refine(), once per job;
the scheduler then only reads views. Worked example: `sbatch -N1-3 -w node2 -x node1 -c2 -O -n8`
gives required=('node2',), excluded={'node1'}, num_nodes=1 with 2 CPUs (overcommit: -c CPUs per
node, not per task), and two wider views, for 3 and 2 nodes: the scheduler starts the job on as
many nodes as are free now, at least one, always node2 among them, never node1.

Pure: no I/O, no clock. Hostlists are expanded with config.expand (a pure function).
"""

from __future__ import annotations

import dataclasses

from ..model import JobSpec
from .snapshot import JobView


def refine(view: JobView, spec: JobSpec, def_mem_per_cpu: int = 0, def_mem_per_node: int = 0) -> JobView:
    """The view with the spec's placement requests; `view` as state.job_view builds it."""
    from ..config import expand
    changes = {}
    if spec.nodelist:
        changes["required"] = tuple(dict.fromkeys(expand(spec.nodelist)))
        count = len(changes["required"])
        if count > spec.num_nodes:  # every named node, so at least that many
            most = spec.max_nodes if spec.max_nodes > count else 0
            spec = dataclasses.replace(spec_for_nodes(spec, count), max_nodes=most)
            changes.update(shares(spec, count, def_mem_per_cpu, def_mem_per_node))
    if spec.exclude:
        changes["excluded"] = frozenset(expand(spec.exclude))
    if spec.mem_whole_node:
        changes["whole_mem"] = True
    if spec.exclusive_user:
        changes["exclusive_user"] = True
    if getattr(spec, "gres_flags", "") == "enforce-binding":
        changes["enforce_binding"] = True
    kinds = gpu_kinds(spec)
    if len(kinds) > 1:
        changes["gpu_types"] = kinds
        changes["gpus_per_node"] = sum(count for _, count in kinds)
    if spec.min_cpus_per_node or spec.overcommit:
        changes.update(shares(spec, spec.num_nodes, def_mem_per_cpu, def_mem_per_node))
    view = dataclasses.replace(view, **changes) if changes else view
    wider = tuple(dataclasses.replace(view, **shares(spec, k, def_mem_per_cpu, def_mem_per_node))
                  for k in range(most_nodes(spec), spec.num_nodes, -1))
    return dataclasses.replace(view, wider=wider) if wider else view


def gpu_kinds(spec: JobSpec) -> tuple[tuple[str, int], ...]:
    """--gres=gpu:a100:1,gpu:t4:1 -> (('a100', 1), ('t4', 1)): GPUs per node by type, the
    repeated ones added up, in the order asked."""
    kinds: dict[str, int] = {}
    for g in spec.gres:
        if g.name == "gpu" and g.count:
            kinds[g.type] = kinds.get(g.type, 0) + g.count
    return tuple(kinds.items())


def most_nodes(spec: JobSpec) -> int:
    """-N min-max: the most nodes the job may get; never more nodes than tasks when -n is set
    (each node runs at least one task)."""
    if spec.max_nodes <= spec.num_nodes:
        return spec.num_nodes
    return min(spec.max_nodes, spec.num_tasks) if spec.ntasks_set else spec.max_nodes


def spec_for_nodes(spec: JobSpec, count: int) -> JobSpec:
    """The spec as it runs on `count` nodes: -N min-max resolved, tasks spread again (one per
    node when -n was not given, as Slurm sets SLURM_NTASKS from the nodes it allocated)."""
    tasks = spec.num_tasks
    if not spec.ntasks_set:
        tasks = spec.ntasks_per_node * count if spec.ntasks_per_node else max(count, 1)
    return dataclasses.replace(spec, num_nodes=count, max_nodes=0, num_tasks=tasks)


def cpus_on_node(spec: JobSpec, index: int) -> int:
    """CPUs one node must give: -O allocates -c CPUs per node rather than per task, and
    --mincpus sets a floor."""
    if spec.overcommit:
        cpus = max(spec.cpus_per_task, spec.cpus_per_gpu * spec.gpus_needed_per_node(), 1)
    else:
        cpus = spec.cpus_on_node(index)
    return max(cpus, spec.min_cpus_per_node)


def mem_on_node(spec: JobSpec, index: int, def_mem_per_cpu: int = 0, def_mem_per_node: int = 0) -> int:
    """MiB one node must give: as JobSpec.mem_on_node, per CPU counted on the CPUs actually
    allocated (-O, --mincpus)."""
    mem = spec.mem_on_node(index, def_mem_per_cpu, def_mem_per_node)
    per_cpu = spec.mem_per_cpu or def_mem_per_cpu
    if not spec.mem_per_node and not (spec.mem_per_gpu and spec.gpus_needed_per_node()) and per_cpu:
        mem = per_cpu * cpus_on_node(spec, index)
    return mem


def shares(spec: JobSpec, count: int, def_mem_per_cpu: int, def_mem_per_node: int) -> dict:
    """num_nodes, cpus_per_node and mem_per_node for the spec on `count` nodes."""
    s = spec_for_nodes(spec, count)
    return {"num_nodes": count, "cpus_per_node": tuple(cpus_on_node(s, i) for i in range(count)),
            "mem_per_node": tuple(mem_on_node(s, i, def_mem_per_cpu, def_mem_per_node)
                                  for i in range(count))}
