"""scontrol show config: the configuration in Slurm's layout.

    Configuration data as of 2026-11-30T10:06:35
    AuthType                = auth/slurm
    ClusterName             = lab
    ...
    Slurmctld(primary) at head is UP

Keys are spelled and valued as Slurm prints them (times "30 sec", booleans Yes/No, unset
"(null)"), one per setting this implementation has, from slurm.conf as parsed plus defaults,
in Slurm's (alphabetical) order. Keys read but not implemented are listed after them under
their own heading, so none is dropped unsaid. Read from the slurm.conf this command uses,
which the controller also reads; BOOT_TIME and the last line come from the controller.
"""

from __future__ import annotations

from ..units import format_limit_hms, format_timestamp

KEY_WIDTH = 23  # Slurm's "%-23s = %s"


def _sec(n) -> str:
    return f"{n:g} sec"


def _yes(flag: bool) -> str:
    return "Yes" if flag else "No"


def _user(name: str) -> str:
    """'root(0)', as Slurm prints SlurmUser."""
    import pwd
    try:
        return f"{name}({pwd.getpwnam(name).pw_uid})"
    except KeyError:
        return name


def _null(text) -> str:
    return str(text) if text not in (None, "", []) else "(null)"


def _controller_hosts(cfg) -> dict[str, str]:
    """SlurmctldHost[i] for every controller, as name(addr[:port]) the way slurm.conf says it."""
    hosts = cfg.controller_hosts or [(cfg.controller_host, cfg.controller_addr, 0)]
    out = {}
    for i, (name, addr, port) in enumerate(hosts):
        where = addr + (f":{port}" if port else "") if addr else (f"{name}:{port}" if port else "")
        out[f"SlurmctldHost[{i}]"] = name + (f"({where})" if where else "")
    return out


def settings(cfg, boot_time: float) -> dict[str, str]:
    """Slurm key -> value text."""
    auth = f"socket={cfg.auth_socket},cred_expire={cfg.cred_expire},ttl={cfg.token_ttl}"
    out = {
        "AdminUsers": _null(",".join(cfg.admin_users)),
        "AuthInfo": auth, "AuthType": "auth/slurm",
        "BOOT_TIME": format_timestamp(boot_time), "ClusterName": cfg.cluster_name,
        "CredType": "cred/slurm",
        "DefMemPerCPU": str(cfg.def_mem_per_cpu) if cfg.def_mem_per_cpu else None,
        "DefMemPerNode": str(cfg.def_mem_per_node) if cfg.def_mem_per_node else
        (None if cfg.def_mem_per_cpu else "UNLIMITED"),
        "DisableRootJobs": _yes(cfg.disable_root_jobs), "FirstJobId": str(cfg.first_job_id),
        "GresTypes": _null(",".join(cfg.gres_types)),
        "HealthCheckInterval": _sec(cfg.health_check_interval),
        "HealthCheckProgram": _null(cfg.health_check_program),
        "HeartbeatInterval": _sec(cfg.heartbeat_interval),
        "JobRequeue": str(int(cfg.job_requeue)), "KillWait": _sec(cfg.kill_wait),
        "MaxArraySize": str(cfg.max_array_size), "MaxBatchRequeue": str(cfg.max_batch_requeue),
        "MaxJobCount": str(cfg.max_job_count), "MinJobAge": _sec(cfg.min_job_age),
        "PreemptExemptTime": format_limit_hms(cfg.preempt_exempt_time // 60),
        "PreemptMode": cfg.preempt_mode, "PreemptType": cfg.preempt_type,
        "PriorityType": cfg.priority_type,
        "PrivateData": ",".join(cfg.private_data) or "none",
        "ProctrackType": cfg.proctrack_type, "ReturnToService": str(cfg.return_to_service),
        "SchedulerParameters": _null(",".join(f"{k}={v}" if v else k
                                              for k, v in cfg.scheduler_parameters.items())),
        "SchedulerType": cfg.extra.get("schedulertype", "sched/backfill"),
        "SelectType": "select/cons_tres", "SlurmUser": _user(cfg.slurm_user),
        **_controller_hosts(cfg), "SlurmctldPort": str(cfg.controller_port),
        "SlurmctldTimeout": _sec(cfg.slurmctld_timeout),
        "SlurmdPort": str(cfg.slurmd_port), "SlurmdSpoolDir": _null(cfg.slurmd_spool_dir),
        "SlurmdTimeout": _sec(cfg.slurmd_timeout),
        "StateSaveLocation": cfg.state_save_location, "TaskPlugin": cfg.task_plugin,
        "MpiDefault": cfg.mpi_default, "TopologyPlugin": cfg.topology_plugin,
        # ours (README): what a GPU fault or a GPU busy outside jobs does, and the MPS daemon
        "ForeignGpuAction": cfg.foreign_gpu_action, "GpuHealthAction": cfg.gpu_health_action,
        "MpsControlProgram": _null(cfg.mps_control_program),
    }
    if cfg.priority_type == "priority/multifactor":
        out["PriorityDecayHalfLife"] = format_limit_hms(cfg.priority_decay_half_life)
        out["PriorityMaxAge"] = format_limit_hms(cfg.priority_max_age)
        for name in ("age", "fairshare", "jobsize", "partition", "qos"):
            key = "PriorityWeight" + {"jobsize": "JobSize", "fairshare": "FairShare",
                                      "qos": "QOS"}.get(name, name.capitalize())
            out[key] = str(cfg.priority_weights.get(name, 0))
    return {k: v for k, v in out.items() if v is not None}


def lines(cfg, now: float, boot_time: float) -> list[str]:
    out = [f"Configuration data as of {format_timestamp(now)}"]
    items = settings(cfg, boot_time)
    out += [f"{k:<{KEY_WIDTH}} = {items[k]}" for k in sorted(items, key=str.lower)]
    # Slurm prints cgroup.conf's section right after slurm.conf's keys
    out += ["", "Cgroup Support Configuration:"]
    out += [f"{k:<{KEY_WIDTH}} = {v}" for k, v in cgroup_settings(cfg).items()]
    if cfg.extra:
        out += ["", "Read from slurm.conf but not implemented here:"]
        out += [f"{k:<{KEY_WIDTH}} = {v}" for k, v in sorted(cfg.extra.items())
                if k != "schedulertype"]
    return out


def cgroup_settings(cfg) -> dict[str, str]:
    """cgroup.conf's keys this implementation has, as Slurm's section prints them (lower-case
    yes/no, alphabetical): CgroupPlugin and the Constrain* keys."""
    def yes(flag: bool) -> str:
        return "yes" if flag else "no"
    return {"CgroupPlugin": cfg.cgroup_plugin, "ConstrainCores": yes(cfg.constrain_cores),
            "ConstrainDevices": yes(cfg.constrain_devices),
            "ConstrainRAMSpace": yes(cfg.constrain_ram_space)}


def show_config(client, ns, arg) -> int:
    """The configuration, then the controller's state as Slurm ends it."""
    import sys
    from ..errors import SlurmError
    try:
        reply = client.diag()
        now, boot, up = reply.now, reply.since, True
    except SlurmError:
        import time
        now, boot, up = time.time(), 0.0, False
    text = lines(client.cfg, now, boot)
    text.append("")
    names = [h[0] for h in client.cfg.controller_hosts] or [client.cfg.controller_host]
    for i, name in enumerate(names):  # each controller asked alone, as scontrol ping does
        if len(names) > 1:  # diag went to whichever answered
            try:
                client.at(i).ping()
                up = True
            except SlurmError:
                up = False
        mode = "primary" if i == 0 else "backup" if len(names) == 2 else f"backup{i}"
        text.append(f"Slurmctld({mode}) at {name} is {'UP' if up else 'DOWN'}")
    sys.stdout.write("\n".join(text) + "\n")
    return 0
