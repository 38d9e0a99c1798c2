"""`pyslurm-lite`: the operator's command (daemons, local cluster)."""

from __future__ import annotations

import logging
import sys

import click

from .. import __version__
from ..errors import SlurmError
from .usage import SLURM_VERSION


def _logging(verbose: bool) -> None:
    logging.basicConfig(level=logging.DEBUG if verbose else logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s", stream=sys.stderr)


class _Group(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except SlurmError as e:
            for line in e.message.splitlines():
                click.echo(f"pyslurm-lite: error: {line}", err=True)
            sys.exit(1)


@click.group(cls=_Group)
@click.version_option(__version__, "-V", "--version", prog_name="pyslurm-lite",
                      message="%(prog)s %(version)s (Slurm " + SLURM_VERSION + " commands)")
def main():
    """pyslurm-lite operator commands: daemons and a one-command local cluster."""


@main.command()
@click.option("--conf", default=None, help="slurm.conf path (default: $PYSLURM_LITE_CONF)")
@click.option("--pid-file", default=None)
@click.option("-v", "--verbose", is_flag=True)
def controller(conf, pid_file, verbose):
    """Run the controller daemon in the foreground."""
    _logging(verbose)
    from ..controller.daemon import main as run
    run(conf, pid_file)


@main.command()
@click.option("--node", "node", required=True, help="this host's NodeName")
@click.option("--conf", default=None)
@click.option("--pid-file", default=None)
@click.option("-v", "--verbose", is_flag=True)
def agent(node, conf, pid_file, verbose):
    """Run the agent daemon for NODE in the foreground."""
    _logging(verbose)
    from ..agent.daemon import main as run
    run(node, conf, pid_file)


@main.command()
@click.option("--conf", default=None)
@click.option("--host", "host", default=None, help="this host's name in its key (default: hostname)")
@click.option("--pid-file", default=None)
@click.option("-v", "--verbose", is_flag=True)
def authd(conf, host, pid_file, verbose):
    """Serve user tokens on this host's auth socket (Slurm's sackd), for a login host without
    an agent. Needs the cluster key or this host's key (`pyslurm-lite keygen --scope host:NAME`)."""
    _logging(verbose)
    from ..rpc.authd import main as run
    run(conf, host, pid_file)


@main.command()
@click.option("--conf", default=None)
@click.option("--scope", required=True, help="node:NAME for an agent, host:NAME for authd")
def keygen(conf, scope):
    """Print the key file for one node or login host, derived from the cluster key (run where
    the cluster key is; install the output as that host's AuthKeyFile, mode 0600)."""
    from .. import config as config_mod
    from ..rpc import keys
    cfg = config_mod.load(conf)
    ring = keys.load(cfg.key_path)
    if not ring.is_cluster:
        raise SlurmError(f"{cfg.key_path} is not the cluster key ({ring.scope})")
    click.echo(keys.scoped_key_text(ring, scope), nl=False)


@main.group()
def cluster():
    """A local cluster of one controller and N agents on this machine."""


@cluster.command()
@click.option("--nodes", default=2, show_default=True, type=click.IntRange(1, 64))
@click.option("--cpus", default=2, show_default=True, type=click.IntRange(1, 4096))
@click.option("--mem", default=2000, show_default=True, type=click.IntRange(1), help="MiB per node")
@click.option("--gpus", default=0, show_default=True, type=click.IntRange(0, 64))
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
@click.option("--tls", is_flag=True, help="make a CA and certificates; every gRPC link uses TLS")
def up(nodes, cpus, mem, gpus, directory, tls):
    """Start (or restart) a local cluster in DIR and wait until its nodes are up."""
    from .cluster import up as run
    run(directory, nodes, cpus, mem, gpus, echo=click.echo, tls=tls)


@cluster.command()
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
def down(directory):
    """Stop the local cluster in DIR (and anything its jobs left running)."""
    from .cluster import down as run
    run(directory, echo=click.echo)


@cluster.command()
@click.option("--dir", "directory", required=True, type=click.Path(file_okay=False))
def status(directory):
    """Show whether DIR's daemons run."""
    from .cluster import status as run
    sys.exit(run(directory, echo=click.echo))


@main.command()
@click.argument("trace")
@click.option("--policy", default="easy", show_default=True,
              help="fcfs, easy or conservative; several as easy,conservative")
@click.option("--engine", default="fast", show_default=True,
              help="fast, or scheduler (the daemon's sched.schedule(), fcfs and easy only)")
@click.option("--procs", type=click.IntRange(1), default=None,
              help="machine size in processors (default: the header's MaxProcs, else MaxNodes)")
@click.option("--dump", default=None, metavar="FILE.csv", help="write id,submit,start,end,procs")
@click.option("--plot", default=None, metavar="FILE.png",
              help="draw utilization and queue length over time")
def simulate(trace, policy, engine, procs, dump, plot):
    """Replay an SWF trace (.swf or .swf.gz) on a virtual clock and print what it measured."""
    from ..sim.command import run
    run(trace, policy, engine, procs, dump, plot, echo=click.echo)


if __name__ == "__main__":
    main()
