"""The web dashboard with a long queue: a local cluster gets N held jobs (5,000 by default), then
each of the dashboard's reads is timed over HTTP with an operator's token, and the same page is
loaded in headless Debian chromium when playwright and /usr/bin/chromium are there.

    sudo .venv/bin/python bench/bench_dashboard.py [--jobs 5000] [--repeat 5] [--keep]

Prints one row per request: median and worst wall time, bytes. "GetJobs alone" is the
controller's share (the RPC and decoding 5,000 jobs) without any rendering; "GET /" adds nodes,
shares and 24 h of failures and renders the first 500 rows. The target: GET / under 1 s on a
2-core box. The HTTP server is the controller's own on RestPort when it serves one, else the
dashboard alone (python -m pyslurm_lite.restd.dashboard), the same routes either way.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pyslurm_lite import config  # noqa: E402
from pyslurm_lite.client import Client  # noqa: E402
from pyslurm_lite.model import JobSpec  # noqa: E402

BIN = Path(sys.executable).parent
CHROMIUM = "/usr/bin/chromium"
SHAPE = ("2", "4", "8000", "4")  # nodes, CPUs, MiB, GPUs per node
CHUNK = 500  # jobs per SubmitJobs call


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


def cluster_up(directory: Path) -> dict[str, str]:
    from pyslurm_lite.cli.cluster import write_config
    directory.mkdir(parents=True, exist_ok=True)
    conf = write_config(str(directory), *(int(x) for x in SHAPE))
    text = Path(conf).read_text()
    if not re.search(r"(?mi)^RestPort=", text):
        text += f"RestPort={free_port()}\n"
    if not re.search(r"(?mi)^AuthAltTypes=", text):
        text += "AuthAltTypes=auth/jwt\n"
    Path(conf).write_text(text)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
           "PYSLURM_LITE_CONF": conf}
    r = subprocess.run([str(BIN / "pyslurm-lite"), "cluster", "up", "--dir", str(directory),
                        "--nodes", SHAPE[0], "--cpus", SHAPE[1], "--mem", SHAPE[2],
                        "--gpus", SHAPE[3]], env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise SystemExit(f"cluster up failed: {r.stdout}{r.stderr}")
    return env


def token_for(env, cfg, user: str) -> str:
    r = subprocess.run(["scontrol", "token", f"username={user}", "lifespan=7200"], env=env,
                       capture_output=True, text=True)
    m = re.search(r"^SLURM_JWT=(\S+)", r.stdout, re.M)
    if r.returncode == 0 and m:
        return m.group(1)
    import jwt
    key = Path(cfg.jwt_key_file or os.path.join(cfg.state_save_location, "jwt_hs256.key")).read_bytes()
    now = int(time.time())
    return jwt.encode({"iat": now, "exp": now + 7200, "sun": user}, key, algorithm="HS256")


def serve(env, port: int, log: Path) -> subprocess.Popen | None:
    for _ in range(15):
        if listening(port):
            return None
        time.sleep(0.2)
    proc = subprocess.Popen([sys.executable, "-m", "pyslurm_lite.restd.dashboard", "--port", str(port)],
                            env=env, stdout=log.open("w"), stderr=subprocess.STDOUT)
    for _ in range(100):
        if listening(port):
            return proc
        time.sleep(0.2)
    raise SystemExit(f"the dashboard did not start: {log.read_text()[-1000:]}")


def submit_held(client: Client, n: int, work: str) -> None:
    specs = [JobSpec(name=f"bench-{i}", script="#!/bin/sh\ntrue\n", work_dir=work, hold=True,
                     std_out="/dev/null", std_err="/dev/null") for i in range(n)]
    for i in range(0, n, CHUNK):
        client.submit_many(specs[i:i + CHUNK])


def timed(fn, repeat: int) -> tuple[float, float, int]:
    times, size = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        size = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), max(times), size


def http(base: str, token: str, path: str):
    def fetch() -> int:
        req = urllib.request.Request(base + path, headers={"X-SLURM-USER-TOKEN": token})
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status == 200, r.status
            return len(r.read())
    return fetch


def browser_load(base: str, token: str, repeat: int):
    """Seconds from navigation to the queue's rows on screen, or a reason it was not measured."""
    if not os.access(CHROMIUM, os.X_OK):
        return f"skipped: no {CHROMIUM}"
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "skipped: no playwright"
    times = []
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-dev-shm-usage"])
        page = b.new_context(viewport={"width": 1400, "height": 900},
                             extra_http_headers={"X-SLURM-USER-TOKEN": token}).new_page()
        for _ in range(repeat):
            t0 = time.perf_counter()
            page.goto(base + "/", wait_until="load")
            page.wait_for_selector("table.queue tbody tr")
            times.append(time.perf_counter() - t0)
        b.close()
    return statistics.median(times), max(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="leave the cluster up")
    ns = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-dashboard."))
    env = cluster_up(work / "c")
    server = None
    try:
        cfg = config.load(env["PYSLURM_LITE_CONF"])
        client = Client(cfg)
        t0 = time.perf_counter()
        submit_held(client, ns.jobs, str(work))
        print(f"submitted {ns.jobs} held jobs in {time.perf_counter() - t0:.1f} s")
        server = serve(env, cfg.rest_port, work / "dashboard.log")
        token = token_for(env, cfg, "root")
        base = f"http://127.0.0.1:{cfg.rest_port}"
        rows = [("GetJobs alone (gRPC)", timed(lambda: len(Client(cfg, token=token).jobs()[0]), ns.repeat)),
                ("GET / (first 500 rows)", timed(http(base, token, "/"), ns.repeat)),
                ("GET /dashboard/live (JSON)", timed(http(base, token, "/dashboard/live"), ns.repeat)),
                ("GET /?q=bench-49 (search)", timed(http(base, token, "/?q=bench-49"), ns.repeat)),
                ("GET /?page=9 (rows 4501-5000)", timed(http(base, token, "/?page=9"), ns.repeat))]
        print(f"\n{ns.jobs} pending jobs, {SHAPE[0]} nodes x {SHAPE[3]} GPUs, {os.cpu_count()} CPUs, "
              f"{ns.repeat} runs each\n")
        print(f"{'request':<32} {'median s':>9} {'worst s':>9} {'bytes':>10}")
        for name, (med, worst, size) in rows:
            unit = "jobs" if name.startswith("GetJobs") else ""
            print(f"{name:<32} {med:9.3f} {worst:9.3f} {size:>10}{' ' + unit if unit else ''}")
        shown = browser_load(base, token, ns.repeat)
        if isinstance(shown, str):
            print(f"{'chromium: load to rows shown':<32} {shown}")
        else:
            print(f"{'chromium: load to rows shown':<32} {shown[0]:9.3f} {shown[1]:9.3f}")
    finally:
        if server is not None:
            server.terminate()
        if not ns.keep:
            subprocess.run([str(BIN / "pyslurm-lite"), "cluster", "down", "--dir", str(work / "c")],
                           env=env, capture_output=True, timeout=120)
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"cluster left up: export PYSLURM_LITE_CONF={env['PYSLURM_LITE_CONF']}")


if __name__ == "__main__":
    main()
