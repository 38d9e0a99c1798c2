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
@click.option("--index", type=click.IntRange(0), default=None,
              help="which SlurmctldHost= line this controller is, 0 the primary (default: the "
                   "line naming this host; only asked with two or more lines)")
@click.option("-v", "--verbose", is_flag=True)
def controller(conf, pid_file, index, verbose):
    """Run the controller daemon in the foreground."""
    _logging(verbose)
    from ..controller.daemon import main as run
    run(conf, pid_file, index)


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
@click.option("--listen", default=None, metavar="HOST:PORT",
              help="where to listen (default: the controller's address and RestPort)")
@click.option("-v", "--verbose", is_flag=True)
def restd(conf, listen, verbose):
    """Serve slurmrestd's REST API (v0.0.42) and the dashboard in the foreground, apart from
    the controller (which serves them itself on RestPort). Callers send a token from
    `scontrol token` as X-SLURM-USER-TOKEN; the controller checks it."""
    _logging(verbose)
    from .. import config as config_mod
    from ..restd.server import serve
    serve(config_mod.load(conf), listen)


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
@click.option("--backup-controller", "backup", is_flag=True,
              help="a second controller (SlurmctldHost= line 2) that takes over when the first "
                   "stops answering for SlurmctldTimeout")
def up(nodes, cpus, mem, gpus, directory, tls, backup):
    """Start (or restart) a local cluster in DIR and wait until its nodes are up."""
    from .cluster import up as run
    run(directory, nodes, cpus, mem, gpus, echo=click.echo, tls=tls, backup=backup)


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
@click.argument("trace", required=False)
@click.option("--from-sacct", "from_sacct", default=None, metavar="FILE",
              help="replay sacct -X --parsable2 output (instead of TRACE) on --conf's cluster")
@click.option("--conf", default=None, metavar="slurm.conf",
              help="with --from-sacct: the cluster and scheduler to replay on")
@click.option("--policy", default="easy", show_default=True,
              help="a policy of --list-policies; several as easy,conservative")
@click.option("--list-policies", "list_policies", is_flag=True,
              help="print the policies, one a line, and exit")
@click.option("--projections", is_flag=True,
              help="also measure projected starts: |projected - actual| at each job's submit")
@click.option("--engine", default="fast", show_default=True,
              help="fast, or scheduler (the daemon's sched.schedule(); every policy but conservative)")
@click.option("--procs", type=click.IntRange(1), default=None,
              help="machine size in processors (default: the header's MaxProcs, else MaxNodes)")
@click.option("--dump", default=None, metavar="FILE.csv", help="write id,submit,start,end,procs")
@click.option("--plot", default=None, metavar="FILE.png",
              help="draw utilization and queue length over time")
def simulate(trace, from_sacct, conf, policy, list_policies, projections, engine, procs, dump,
             plot):
    """Replay an SWF trace (.swf or .swf.gz) on a virtual clock and print what it measured."""
    if list_policies:
        from ..sim import DESCRIPTIONS
        for name, text in DESCRIPTIONS.items():
            click.echo(f"{name:<14}{text}")
        return
    if projections and (from_sacct is not None or engine != "fast"):
        raise click.UsageError("--projections measures the fast engine's replay of a TRACE only")
    if from_sacct is not None or conf is not None:
        _simulate_sacct(trace, from_sacct, conf, policy, engine, procs, dump, plot)
        return
    if trace is None:
        raise click.UsageError("give a TRACE, or --from-sacct FILE with --conf slurm.conf")
    from ..sim.command import run
    run(trace, policy, engine, procs, dump, plot, echo=click.echo, projections=projections)


def _simulate_sacct(trace, from_sacct, conf, policy, engine, procs, dump, plot):
    """--from-sacct: policy defaults to the conf's own SchedulerType (`conf`)."""
    if trace is not None and from_sacct is not None:
        raise click.UsageError("give either TRACE or --from-sacct FILE, not both")
    if from_sacct is None or conf is None:
        raise click.UsageError("--from-sacct FILE and --conf slurm.conf go together")
    if engine != "fast" or procs is not None:  # the sacct replay has one engine and the conf's size
        raise click.UsageError("--engine and --procs do not apply to --from-sacct")
    if click.get_current_context().get_parameter_source("policy").name == "DEFAULT":
        policy = "conf"
    from ..sim.command import run_sacct
    run_sacct(from_sacct, conf, policy, dump, plot, echo=click.echo,
              warn=lambda line: click.echo(line, err=True))


@main.group()
def db():
    """The controller's state database (copy; upgrade and version beside it)."""


@db.command("copy")
@click.option("--from", "src", required=True, metavar="URL",
              help="the stopped controller's database (sqlite:///DIR/state.db, or DatabaseURL)")
@click.option("--to", "dst", required=True, metavar="URL",
              help="an empty database, e.g. postgresql+psycopg://slurm@HOST:5432/pyslurm (the password from ~/.pgpass: never on a command line)")
def db_copy(src, dst):
    """Copy every table of a stopped controller's state into an empty database, in one
    transaction; then set DatabaseURL to the target and start the controller."""
    from ..controller.dbcopy import copy as run
    result = run(src, dst)
    for name in result.skipped:
        click.echo(f"pyslurm-lite: warning: table {name} is not part of this schema: not copied",
                   err=True)
    for name in result.fresh:
        click.echo(f"{name}: not copied: the controllers take a new lease in the new database")
    for name, n in result.rows.items():
        click.echo(f"{name:<16} {n} rows")
    click.echo(f"Copied {sum(result.rows.values())} rows in {len(result.rows)} tables "
               f"(schema version {result.schema_version})")


@db.command("version")
@click.option("--conf", default=None, help="slurm.conf path (default: $PYSLURM_LITE_CONF)")
def db_version(conf):
    """Print the state database's schema version and the migrations it lacks; change nothing."""
    from .. import config as config_mod
    from ..controller import migrations
    where, found = migrations.version_at(config_mod.load(conf).db_url)
    click.echo(f"state database {where}: schema version {found} "
               f"(this pyslurm-lite: {migrations.LATEST})")
    for version, description in migrations.pending(found):
        click.echo(f"  to apply: {version} {description}")


@db.command("upgrade")
@click.option("--conf", default=None, help="slurm.conf path (default: $PYSLURM_LITE_CONF)")
def db_upgrade(conf):
    """Apply the migrations the state database lacks (the controller does so at start too)."""
    from .. import config as config_mod
    from ..controller import migrations
    where, found, now = migrations.upgrade_at(config_mod.load(conf).db_url)
    state = "up to date" if found == now else "created" if found == 0 else f"upgraded from {found}"
    click.echo(f"state database {where}: schema version {now}, {state}")


if __name__ == "__main__":
    main()
