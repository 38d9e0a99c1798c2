"""A cluster of separate "hosts": the controller in the root network namespace, each agent in a
namespace of its own with its own address, joined by a bridge. Addresses are ones this test makes
on this machine (10.213.7.0/24); no traffic leaves it.

    root ns: controller on 10.213.7.1 (bridge pslt-br)
      ├─ veth ── ns pslt-h1: eth0 10.213.7.11  agent node1
      └─ veth ── ns pslt-h2: eth0 10.213.7.12  agent node2
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

SUBNET = "10.213.7"
BRIDGE = "pslt-br"
BIN = os.path.dirname(os.path.abspath(sys.executable))


def _ip(*args: str, ns: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    cmd = (["ip", "netns", "exec", ns, "ip"] if ns else ["ip"]) + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


def available(prefix: str = "pslt") -> str:
    """'' when namespaces can be made here, else why not."""
    if os.geteuid() != 0:
        return "needs root to create network namespaces"
    if shutil.which("ip") is None or shutil.which("nsenter") is None:
        return "needs iproute2's ip and util-linux's nsenter"
    probe = subprocess.run(["ip", "netns", "add", f"{prefix}-probe"], capture_output=True, text=True)
    if probe.returncode != 0:
        return f"cannot create network namespaces: {probe.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", f"{prefix}-probe"], capture_output=True)
    return ""


def teardown_network(hosts: int, prefix: str = "pslt") -> None:
    for i in range(1, hosts + 1):
        subprocess.run(["ip", "netns", "del", f"{prefix}-h{i}"], capture_output=True)
        subprocess.run(["ip", "link", "del", f"{prefix}-v{i}"], capture_output=True)
    subprocess.run(["ip", "link", "del", f"{prefix}-br"], capture_output=True)


def setup_network(hosts: int, prefix: str = "pslt", subnet: str = SUBNET) -> list[str]:
    """`prefix` names the namespaces, veths and bridge: modules that run at the same time (other
    engineers', CI shards) each take their own prefix and subnet."""
    bridge = f"{prefix}-br"
    teardown_network(hosts, prefix)
    _ip("link", "add", bridge, "type", "bridge")
    _ip("addr", "add", f"{subnet}.1/24", "dev", bridge)
    _ip("link", "set", bridge, "up")
    addrs = []
    for i in range(1, hosts + 1):
        ns, addr = f"{prefix}-h{i}", f"{subnet}.{10 + i}"
        subprocess.run(["ip", "netns", "add", ns], check=True, capture_output=True)
        _ip("link", "add", f"{prefix}-v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", f"{prefix}-v{i}", "master", bridge, "up")
        _ip("addr", "add", f"{addr}/24", "dev", "eth0", ns=ns)
        _ip("link", "set", "eth0", "up", ns=ns)
        _ip("link", "set", "lo", "up", ns=ns)
        _ip("route", "add", "default", "via", f"{subnet}.1", ns=ns)
        addrs.append(addr)
    return addrs


def write_config(directory: Path, addrs: list[str], cpus: int, mem: int, gpus: int, port: int,
                 subnet: str = SUBNET, cluster: str = "nets") -> Path:
    # the cluster name is part of each agent's cgroup scope: clusters up at once need their own
    conf = directory / "slurm.conf"
    lines = [f"ClusterName={cluster}", f"SlurmctldHost=ctl({subnet}.1)", f"SlurmctldPort={port}",
             f"StateSaveLocation={directory / 'state'}", "HeartbeatInterval=1", "SlurmdTimeout=10",
             "KillWait=3", f"DefMemPerCPU={mem // cpus}",
             f"AuthInfo=socket={directory / 'run' / 'sack.socket'}"]
    gres = f" Gres=gpu:{gpus}" if gpus else ""
    for i, addr in enumerate(addrs, 1):
        lines.append(f"NodeName=node{i} NodeAddr={addr} Port=6818 CPUs={cpus} RealMemory={mem}{gres}")
    lines.append("PartitionName=main Nodes=ALL Default=YES State=UP")
    conf.write_text("\n".join(lines) + "\n")
    return conf


def write_hosts(directory: Path, addrs: list[str], subnet: str = SUBNET) -> Path:
    """The /etc/hosts of hosts with names of their own: every node by its address."""
    path = directory / "hosts"
    lines = ["127.0.0.1 localhost", f"{subnet}.1 ctl"]
    lines += [f"{addr} node{i}" for i, addr in enumerate(addrs, 1)]
    path.write_text("\n".join(lines) + "\n")
    return path


class NetnsCluster:
    """own_hosts: each agent (and so its jobs) also gets a hostname of its own (its node name, in
    a UTS namespace) and an /etc/hosts naming every node by its address (bind-mounted in a mount
    namespace). Otherwise all hosts share this machine's hostname and /etc/hosts, which MPI
    cannot live with: it names its session files and shared-memory segments after the hostname
    (two "hosts" then write the same files) and tells remote daemons to call back to it."""

    def __init__(self, directory: Path, hosts: int = 2, cpus: int = 2, mem: int = 4000, gpus: int = 1,
                 prefix: str = "pslt", subnet: str = SUBNET, port: int = 16900, cluster: str = "nets",
                 own_hosts: bool = False):
        self.dir, self.hosts, self.prefix = directory, hosts, prefix
        self.own_hosts = own_hosts
        self.addrs = setup_network(hosts, prefix, subnet)
        self.conf = write_config(directory, self.addrs, cpus, mem, gpus, port=port, subnet=subnet,
                                 cluster=cluster)
        self.env = dict(os.environ, PYSLURM_LITE_CONF=str(self.conf),
                        PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
        self.procs: dict[str, subprocess.Popen] = {}
        self.hosts_file = write_hosts(directory, self.addrs, subnet) if own_hosts else None

    def start_controller(self) -> None:
        self._spawn("controller", ["controller", "--conf", str(self.conf)])

    def start_agent(self, i: int) -> None:
        self._spawn(f"agent-node{i}", ["agent", "--node", f"node{i}", "--conf", str(self.conf)],
                    ns=f"{self.prefix}-h{i}", host=f"node{i}" if self.own_hosts else None)

    def _spawn(self, name: str, args: list[str], ns: str | None = None, host: str | None = None) -> None:
        cmd = [sys.executable, "-m", "pyslurm_lite.cli.admin", *args]
        if host:
            # private propagation: the bind mount stays in this host's namespace
            cmd = ["unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c",
                   'hostname "$0" && mount --bind "$1" /etc/hosts && shift && exec "$@"',
                   host, str(self.hosts_file), *cmd]
        if ns:
            # nsenter, not `ip netns exec`: that one also remounts /sys, which would hide the
            # cgroup hierarchies from the agent
            cmd = ["nsenter", f"--net=/var/run/netns/{ns}", *cmd]
        log = open(self.dir / f"{name}.log", "ab")
        self.procs[name] = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env,
                                            start_new_session=True)

    def kill(self, name: str, signo: int = 9) -> None:
        proc = self.procs.pop(name, None)
        if proc and proc.poll() is None:
            os.kill(proc.pid, signo)
            proc.wait(timeout=20)

    def wait_nodes(self, want_up: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            r = self.run(["sinfo", "-N", "-h", "-o", "%N %T"])
            last = r.stdout + r.stderr
            up = sum(1 for line in r.stdout.splitlines()
                     if line.split()[1].rstrip("*") in ("idle", "mixed", "allocated") and "*" not in line)
            if up >= want_up:
                return
            time.sleep(0.3)
        raise TimeoutError(f"nodes not up: {last}\n{self.logs()}")

    def run(self, cmd: list[str], cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(cmd, env=self.env, cwd=cwd, capture_output=True, text=True, timeout=timeout)

    def logs(self, chars: int = 1500) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-chars:]}"
                         for p in sorted(self.dir.glob("*.log")))

    def stop(self) -> None:
        for name in list(self.procs):
            self.kill(name, 15)
        from pyslurm_lite import config
        from pyslurm_lite.agent.cgroup import make_tracker, scope
        cfg = config.load(str(self.conf))
        for node in cfg.nodes:  # whatever jobs left behind
            tracker = make_tracker("proctrack/auto", scope(cfg, node))
            for key in tracker.existing():
                tracker.kill_all(key, 0)
                tracker.remove(key)
            tracker.close()
        teardown_network(self.hosts, self.prefix)
