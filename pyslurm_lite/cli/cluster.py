"""A local cluster in one command: a controller and N agents on loopback, as background daemons.

DIR holds slurm.conf (written once, then the operator's to edit, with free ports for the
daemons and their Prometheus /metrics, whose URLs `up` prints), gres.conf, the state database,
agents' spools, logs and pid files. `up` on an existing DIR restarts whichever daemon is not
running, on the same state; `down` stops them and anything their jobs left running.

Node names resolve for jobs as on a real cluster: as root, `up` writes the nodes' addresses into
a block of /etc/hosts of this DIR's own, and `down` removes it (hostsfile.py); not root, `up`
says so and prints the line to add. On a host with GPUs, gres.conf deals them out: node1 gets the
first --gpus of them, node2 the next ..., never one GPU to two nodes; with fewer GPUs than asked,
the nodes get simulated ones and `up` says so.
"""

from __future__ import annotations

import glob
import os
import signal
import socket
import subprocess
import sys
import time

import psutil

from .. import config as config_mod
from ..agent import gpu as gpu_mod
from . import hostsfile
from ..errors import ConfigError, SlurmError

UP_TIMEOUT = 60.0  # seconds to wait for every node to register


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# The backup of a local pair listens on another loopback address, on the same SlurmctldPort (as
# two hosts of a real pair would): Slurm's own SlurmctldHost=name(addr) syntax.
BACKUP_HOST = "localhost-backup(127.0.0.2)"


def write_config(directory: str, nodes: int, cpus: int, mem: int, gpus: int, tls: bool = False,
                 backup: bool = False) -> str:
    conf = os.path.join(directory, "slurm.conf")
    names = [f"node{i}" for i in range(1, nodes + 1)]
    lines = [
        "# Written by `pyslurm-lite cluster up`; edit freely, `cluster up` keeps it as it is.",
        "ClusterName=local",
        "SlurmctldHost=localhost(127.0.0.1)",
        *([f"SlurmctldHost={BACKUP_HOST}"] if backup else []),
        f"SlurmctldPort={_free_port()}",
        f"StateSaveLocation={os.path.join(directory, 'state')}",
        # where commands get their user token (each daemon serves its own socket beside it)
        f"AuthInfo=socket={os.path.join(directory, 'run', 'sack.socket')}",
        f"DefMemPerCPU={max(mem // max(cpus, 1), 1)}",
        "HeartbeatInterval=1",
        "SlurmdTimeout=30",
        "KillWait=5",
        f"MetricsPort={_free_port()}",  # the controller's Prometheus /metrics
        f"RestPort={_free_port()}",  # slurmrestd's API and the dashboard, served by the controller
        "AuthAltTypes=auth/jwt",  # scontrol token: tokens for the REST API
    ]
    if tls:  # a CA and one certificate for the daemons, all on loopback
        from ..rpc.tls import make_local_certs
        ca, cert, key = make_local_certs(directory, ["localhost", *names],
                                         ["127.0.0.1", *(["127.0.0.2"] if backup else [])])
        lines.append(f"TLSParameters=ca_cert_file={ca},cert_file={cert},cert_key_file={key}")
    gres = f" Gres=gpu:{gpus}" if gpus else ""
    for name in names:
        lines.append(f"NodeName={name} NodeAddr=127.0.0.1 Port={_free_port()} "
                     f"MetricsPort={_free_port()} CPUs={cpus} RealMemory={mem}{gres}")
    lines.append("PartitionName=main Nodes=ALL Default=YES MaxTime=UNLIMITED State=UP")
    with open(conf, "w") as f:
        f.write("\n".join(lines) + "\n")
    if gpus:
        text, said = gres_conf(names, gpus, gpu_mod.host_gpus())
        with open(os.path.join(directory, "gres.conf"), "w") as f:
            f.write(text)
        if said:
            note(said)
    return conf


def gres_conf(names: list[str], per_node: int, found) -> tuple[str, str]:
    """gres.conf for the nodes, and what `up` should say about it. Without real GPUs: per_node
    simulated ones each. With enough: each node's own GPUs by File= (NVML fills in the rest).
    With too few: simulated ones, AutoDetect=off, so no real GPU goes to two nodes."""
    if not found:
        return f"NodeName={config_mod.collect(names)} Name=gpu Count={per_node}\n", ""
    try:
        dealt = gpu_mod.split(found, names, per_node)
    except gpu_mod.NotEnoughGpus as e:
        usable = len(found) // len(names)
        fits = f"--gpus {usable} or fewer" if usable else f"--nodes {len(found)} --gpus 1"
        return (f"AutoDetect=off\nNodeName={config_mod.collect(names)} Name=gpu Count={per_node}\n",
                f"{e}: the nodes get simulated GPUs (gres.conf AutoDetect=off); ask for "
                f"{fits} to use this host's real ones")
    lines = ["AutoDetect=nvml"]
    for name, devices in dealt.items():
        lines += [f"NodeName={name} Name=gpu Type={d.type} File={d.file}" for d in devices]
    shares = "; ".join(f"{n}: {','.join(d.file for d in ds)}" for n, ds in dealt.items())
    return "\n".join(lines) + "\n", f"GPUs of this host dealt out in gres.conf: {shares}"


def note(message: str) -> None:
    """What `up` and `down` say besides the export line, on stderr (`eval $(cluster up)` works)."""
    print(f"pyslurm-lite cluster: {message}", file=sys.stderr)


def _pid_alive(pid_file: str, conf: str) -> int:
    """The pid in pid_file if that process is alive and is one of ours for this conf."""
    try:
        pid = int(open(pid_file).read().split()[0])
        proc = psutil.Process(pid)
        if proc.status() != psutil.STATUS_ZOMBIE and conf in " ".join(proc.cmdline()):
            return pid
    except (OSError, ValueError, IndexError, psutil.Error):
        pass
    return 0


def _spawn(args: list[str], log_path: str, pid_file: str) -> int:
    log = open(log_path, "ab")
    proc = subprocess.Popen([sys.executable, "-m", "pyslurm_lite.cli.admin", *args, "--pid-file", pid_file],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, close_fds=True)
    with open(pid_file, "w") as f:
        f.write(f"{proc.pid}\n")
    return proc.pid


def daemons(directory: str, cfg) -> list[tuple[str, list[str]]]:
    conf = os.path.join(directory, "slurm.conf")
    out = [("controller", ["controller", "--conf", conf])]
    if len(cfg.controller_hosts) > 1:  # a pair: each is told which SlurmctldHost= line it is
        out = [("controller" if i == 0 else "controller-backup" + (str(i) if i > 1 else ""),
                ["controller", "--conf", conf, "--index", str(i)])
               for i in range(len(cfg.controller_hosts))]
    out += [(f"agent-{n}", ["agent", "--node", n, "--conf", conf]) for n in cfg.nodes]
    return out


def up(directory: str, nodes: int, cpus: int, mem: int, gpus: int, echo=print, tls: bool = False,
       backup: bool = False) -> str:
    directory = os.path.abspath(directory)
    os.makedirs(directory, exist_ok=True)
    conf = os.path.join(directory, "slurm.conf")
    if not os.path.exists(conf):
        write_config(directory, nodes, cpus, mem, gpus, tls, backup)
    elif tls and not config_mod.load(conf).tls_ca:
        raise ConfigError(f"{conf} exists without TLSParameters: --tls applies to a new cluster "
                          f"directory (or add TLSParameters= yourself)")
    elif backup and len(config_mod.load(conf).controller_hosts) < 2:
        raise ConfigError(f"{conf} has one SlurmctldHost= line: --backup-controller applies to a "
                          f"new cluster directory (or add SlurmctldHost={BACKUP_HOST} yourself)")
    cfg = config_mod.load(conf)
    publish_names(directory, cfg)
    for name, args in daemons(directory, cfg):
        pid_file = os.path.join(directory, f"{name}.pid")
        if not _pid_alive(pid_file, conf):
            _spawn(args, os.path.join(directory, f"{name}.log"), pid_file)
    _wait_ready(directory, cfg)
    for said in metrics_urls(cfg):
        note(said)
    echo(f"export PYSLURM_LITE_CONF={conf}")
    return conf


def metrics_urls(cfg) -> list[str]:
    """Where Prometheus scrapes this cluster, as slurm.conf says now (the operator may have
    changed or zeroed the ports)."""
    out = []
    if cfg.metrics_port:  # served by the controller in control, on its own address
        for i, target in enumerate(cfg.controller_targets):
            name = "controller" if i == 0 else "controller-backup" + (str(i) if i > 1 else "")
            out.append(f"{name} metrics: http://{target.rsplit(':', 1)[0]}:{cfg.metrics_port}/metrics")
    out += [f"{name} metrics: http://{n.addr}:{n.metrics_port}/metrics"
            for name, n in cfg.nodes.items() if n.metrics_port]
    return out


def publish_names(directory: str, cfg, path: str = hostsfile.HOSTS) -> bool:
    """Make the node names resolve for jobs (this DIR's block of /etc/hosts); say what was done,
    or why not and what to add by hand. True when the block is in place."""
    addrs = hostsfile.entries(cfg)
    if not addrs:
        return False
    names = config_mod.collect([n for ns in addrs.values() for n in ns])
    try:
        clashes = hostsfile.edit(directory, addrs, path)
    except OSError as e:
        why = "not root" if os.geteuid() != 0 else e.strerror
        note(f"node names {names} do not resolve for jobs ({path} not writable: {why}); "
             f"add this to {path} yourself: {hostsfile.manual_line(addrs)}")
        return False
    for clash in clashes:
        note(f"warning: {clash}: jobs resolving that name get that address, not this cluster's")
    note(f"node names {names} resolve for jobs: {path} has them (removed by `cluster down`)")
    return True


def _wait_ready(directory: str, cfg) -> None:
    from ..client import Client
    client = Client(cfg, timeout=2.0)
    deadline = time.monotonic() + UP_TIMEOUT
    last = "controller not answering"
    while time.monotonic() < deadline:
        for name, _ in daemons(directory, cfg):
            if not _pid_alive(os.path.join(directory, f"{name}.pid"), cfg.path):
                log = os.path.join(directory, f"{name}.log")
                tail = open(log).read()[-600:] if os.path.exists(log) else ""
                raise SlurmError(f"{name} exited during start-up; end of {log}:\n{tail}")
        try:
            nodes, _ = client.nodes()
            waiting = [n.config.name for n in nodes if n.state in ("UNKNOWN", "DOWN") or not n.responding]
            if not waiting:
                for i in range(1, len(cfg.controller_hosts)):  # the backups answer too
                    client.at(i).ping()
                return
            last = f"nodes not up yet: {','.join(waiting)}"
        except SlurmError as e:
            last = e.message
        time.sleep(0.1)
    raise SlurmError(f"cluster did not come up within {UP_TIMEOUT:.0f}s: {last}")


def down(directory: str, echo=print) -> None:
    directory = os.path.abspath(directory)
    conf = os.path.join(directory, "slurm.conf")
    if not os.path.exists(conf):
        raise ConfigError(f"no local cluster in {directory} (no slurm.conf)")
    pids = []
    for pid_file in glob.glob(os.path.join(directory, "*.pid")):
        pid = _pid_alive(pid_file, conf)
        if pid:
            os.kill(pid, signal.SIGTERM)
            pids.append(pid)
        os.unlink(pid_file)
    _, alive = psutil.wait_procs([psutil.Process(p) for p in pids if psutil.pid_exists(p)], timeout=5)
    for proc in alive:
        proc.kill()
    _kill_leftover_jobs(directory, config_mod.load(conf))
    unpublish_names(directory)
    echo(f"stopped {len(pids)} daemon(s)")


def unpublish_names(directory: str, path: str = hostsfile.HOSTS) -> None:
    if not hostsfile.has_block(directory, path):
        return
    try:
        hostsfile.edit(directory, None, path)
    except OSError as e:
        note(f"could not remove this cluster's node names from {path}: {e.strerror}")


def _kill_leftover_jobs(directory: str, cfg) -> None:
    """Jobs outlive their agent by design (an agent restart must not kill them); `down` must:
    everything in the nodes' job cgroups, and the process groups recorded without cgroups."""
    from ..agent.cgroup import tracker_for
    for node in cfg.nodes:
        try:  # the hierarchy cgroup.conf names (CgroupPlugin=cgroup/v2 on a hybrid host)
            tracker = tracker_for(cfg, node, kind="proctrack/auto")
        except ConfigError:
            continue
        for key in tracker.existing():
            tracker.kill_all(key, 0)
            tracker.remove(key)
        tracker.close()
    from ..agent.spool import read_trusted_pid
    for pid_file in glob.glob(os.path.join(directory, "state", "agent-*", "job*", "pid")):
        pid = read_trusted_pid(pid_file)  # None for anything a job's user could have written
        if pid:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass


def status(directory: str, echo=print) -> int:
    directory = os.path.abspath(directory)
    conf = os.path.join(directory, "slurm.conf")
    cfg = config_mod.load(conf)
    down_count = 0
    for name, _ in daemons(directory, cfg):
        pid = _pid_alive(os.path.join(directory, f"{name}.pid"), conf)
        echo(f"{name:<16} {'running pid ' + str(pid) if pid else 'stopped'}")
        down_count += 0 if pid else 1
    return 0 if down_count == 0 else 1
