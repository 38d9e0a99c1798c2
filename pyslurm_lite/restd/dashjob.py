"""One job's page: its state timeline (submit, eligible, start, end, and every earlier run a
requeue ended, from sacct's history with duplicates), its steps, and usage bars. Pure.

What the usage bars plot: the agents send the controller each step's latest measurement per
node (UsageSample: CPU seconds, resident and peak memory, GPU utilization now/mean/peak), not a
time series, so the page draws one bar per (step, node) for CPU seconds, peak memory and mean
GPU utilization, each scaled to the largest value on its chart. A finished job keeps the samples
its last run reported. The SVG is built from numbers and escaped labels only.
"""

from __future__ import annotations

from html import escape

from .dashview import duration, job_id_text, when

BAR_HEIGHT, BAR_GAP, LABEL_WIDTH, BAR_WIDTH = 18, 6, 150, 360  # pixels


def timeline(job, runs) -> list[dict]:
    """Events in time order; a run a requeue ended shows as REQUEUED at its end."""
    events = [("submit", job.submit_time, "submitted")]
    for r in runs:
        if r.state == "REQUEUED" and r.job.start_time:
            events.append(("start", r.job.start_time, f"started (run {r.job.restart_count})"))
            events.append(("requeue", r.job.end_time, "requeued"))
    if job.eligible_time:
        events.append(("eligible", job.eligible_time, "eligible"))
    if job.start_time:
        events.append(("start", job.start_time,
                       "started" + (f" (run {job.restart_count})" if job.restart_count else "")))
    elif job.state == "PENDING" and job.expected_start:
        events.append(("expected", job.expected_start, "expected to start (backfill)"))
    if job.end_time:
        events.append(("end", job.end_time, f"ended {job.state}"))
    events.sort(key=lambda e: (e[1] or 0))
    return [{"kind": k, "time": when(t), "what": w} for k, t, w in events if t]


def step_rows(job, now: float) -> list[dict]:
    rows = []
    for s in sorted(job.steps, key=lambda s: s.step_id):
        end = s.end_time or (now if s.state == "RUNNING" else s.start_time)
        rows.append({"id": f"{job_id_text(job)}.{s.step_id}", "name": s.name, "state": s.state,
                     "nodes": ",".join(s.nodes), "tasks": s.num_tasks,
                     "start": when(s.start_time), "end": when(s.end_time),
                     "elapsed": duration(end - s.start_time) if s.start_time else "0:00",
                     "exit": f"{s.exit_code}:{s.exit_signal}"})
    return rows


def job_facts(job) -> list[tuple[str, str]]:
    """scontrol show job's fields the page lists, as (name, value) text."""
    sp = job.spec
    return [("JobId", job_id_text(job)), ("JobName", sp.name), ("UserId", sp.user),
            ("Account", sp.account or "(null)"), ("Partition", job.partition),
            ("JobState", job.state), ("Reason", job.reason or "None"),
            ("Priority", str(job.priority)), ("NumNodes", str(sp.num_nodes or 1)),
            ("NumTasks", str(sp.num_tasks or 1)),
            ("TimeLimit", duration(job.time_limit * 60) if job.time_limit > 0 else "UNLIMITED"),
            ("NodeList", ",".join(sorted({a.node for a in job.allocations})) or "(null)"),
            ("Restarts", str(job.restart_count)), ("ExitCode", f"{job.exit_code}:{job.exit_signal}"),
            ("AdminComment", job.admin_comment or "(null)"), ("Comment", sp.comment or "(null)")]


def _series(job) -> dict[str, list[tuple[str, float, str]]]:
    """chart title -> [(label, value, value as text)] from the job's samples."""
    charts = {"CPU time (user+system)": [], "Peak memory (MaxRSS)": [], "Mean GPU utilization": []}
    for s in sorted(job.usage, key=lambda s: (s.step, s.node)):
        label = f"{s.step}@{s.node}"
        cpu = s.user_cpu + s.system_cpu
        charts["CPU time (user+system)"].append((label, cpu, f"{cpu:.1f} s"))
        charts["Peak memory (MaxRSS)"].append((label, s.max_rss, f"{s.max_rss / 2**20:.1f} MiB"))
        if s.gpus:
            charts["Mean GPU utilization"].append((label, s.ave_gpu_util, f"{s.ave_gpu_util:.0f} %"))
    return {t: v for t, v in charts.items() if v}


def bar_chart(title: str, points: list[tuple[str, float, str]], full: float | None = None) -> str:
    """An inline SVG of horizontal bars; `full` fixes the scale (100 for percentages)."""
    top = max(full or 0, max(v for _, v, _ in points), 1e-9)
    height = len(points) * (BAR_HEIGHT + BAR_GAP) + BAR_GAP
    width = LABEL_WIDTH + BAR_WIDTH + 90
    parts = [f'<svg class="bars" role="img" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}"><title>{escape(title)}</title>']
    for i, (label, value, text) in enumerate(points):
        y = BAR_GAP + i * (BAR_HEIGHT + BAR_GAP)
        w = max(int(BAR_WIDTH * value / top), 1)
        parts.append(f'<text x="0" y="{y + 13}">{escape(label)}</text>'
                     f'<rect x="{LABEL_WIDTH}" y="{y}" width="{w}" height="{BAR_HEIGHT}"></rect>'
                     f'<text x="{LABEL_WIDTH + w + 6}" y="{y + 13}">{escape(text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def usage_charts(job) -> list[tuple[str, str]]:
    """(title, SVG markup) per chart; none when no agent sampled the job."""
    return [(t, bar_chart(t, pts, 100.0 if t.endswith("utilization") else None))
            for t, pts in _series(job).items()]
