"""The web dashboard (restd/dashboard.py) against a real cluster: the raw HTML already holds the
data (a pending job, a node), identity is a JWT in X-SLURM-USER-TOKEN and nothing else (a
cookie alone gets a shell page with no data, and no POST passes), a user sees no operator
buttons and a user's forged POST is refused by the controller, a job name with markup renders
as text; then in headless Debian chromium (driven by playwright, never a downloaded browser):
rendering, a live update without reload, the job page, and logging in with a pasted `scontrol
token` kept in sessionStorage (no cookie), from which the overview, a job page opened by
address and an operator's action work.

The HTTP server is the controller's own on RestPort when it serves one, else `pyslurm-lite
restd`, else the dashboard alone (python -m pyslurm_lite.restd.dashboard): the same routes.
Tokens come from `scontrol token username=NAME` (root may ask for anyone's), else are made with
the cluster's JWT key, as the controller checks them either way."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import PYSLURM_LITE, Cluster, start_cluster, wait_state

pytestmark = [pytest.mark.root, pytest.mark.slow]

SHAPE = (2, 2, 2000, 4)  # nodes, CPUs, MiB, GPUs per node
USER = "nobody"  # a user who is not an operator (root is, as SlurmUser)
CHROMIUM = "/usr/bin/chromium"
XSS = "<script>alert(1)</script>"
NOTES_SHOT = Path("/work/notes/i17/dashboard.png")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@dataclass
class Dash:
    cluster: Cluster
    base: str
    op_token: str   # root's
    user_token: str  # nobody's
    server: subprocess.Popen | None
    cfg: object

    def sbatch(self, *args: str) -> int:
        """As root, run from the cluster's directory: slurm-N.out files land there."""
        return self.cluster.sbatch(*args, cwd=self.cluster.dir)

    def get(self, path: str, token: str | None = None, cookie: str | None = None,
            headers: dict | None = None):
        h = dict(headers or {})
        if token:
            h["X-SLURM-USER-TOKEN"] = token
        if cookie:
            h["Cookie"] = f"slurm_jwt={cookie}"
        return _request(urllib.request.Request(self.base + path, headers=h))

    def post(self, path: str, form: dict, token: str | None = None, origin: str | None = "",
             cookie: str | None = None):
        h = {"Content-Type": "application/x-www-form-urlencoded"}
        if origin is not None:
            h["Origin"] = origin or self.base
        if token:
            h["X-SLURM-USER-TOKEN"] = token
        if cookie:
            h["Cookie"] = f"slurm_jwt={cookie}"
        body = urllib.parse.urlencode(form).encode()
        return _request(urllib.request.Request(self.base + path, data=body, headers=h, method="POST"))


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _request(req):
    """(status, headers, text) without following redirects."""
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, r.headers, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read().decode()


def _prepare(port: int):
    """slurm.conf as `cluster up` writes it, with RestPort and auth/jwt where it has none."""
    from pyslurm_lite.cli.cluster import write_config

    def prepare(directory: Path) -> None:
        directory.mkdir(exist_ok=True)
        conf = write_config(str(directory), *SHAPE)
        text = open(conf).read()
        if not re.search(r"(?mi)^RestPort=", text):
            text += f"RestPort={port}\n"
        if not re.search(r"(?mi)^AuthAltTypes=", text):
            text += "AuthAltTypes=auth/jwt\n"
        open(conf, "w").write(text)
    return prepare


def _token(cluster: Cluster, cfg, user: str, lifespan: int = 3600) -> str:
    r = cluster.run(["scontrol", "token", f"username={user}", f"lifespan={lifespan}"])
    m = re.search(r"^SLURM_JWT=(\S+)", r.stdout, re.M)
    if r.returncode == 0 and m:
        return m.group(1)
    import jwt  # the controller checks a token made with its key just the same
    key = Path(cfg.jwt_key_file or os.path.join(cfg.state_save_location, "jwt_hs256.key")).read_bytes()
    now = int(time.time())
    return jwt.encode({"iat": now, "exp": now + lifespan, "sun": user}, key, algorithm="HS256")


def _serve(cluster: Cluster, port: int) -> subprocess.Popen | None:
    """None when the controller already serves RestPort; else our own server process."""
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        if _listening(port):
            return None
        time.sleep(0.2)
    has_restd = subprocess.run([PYSLURM_LITE, "restd", "--help"], capture_output=True,
                               env=cluster.env).returncode == 0
    cmd = [PYSLURM_LITE, "restd"] if has_restd else \
        [sys.executable, "-m", "pyslurm_lite.restd.dashboard", "--port", str(port)]
    log = open(cluster.dir / "restd.log", "w")
    proc = subprocess.Popen(cmd, env=cluster.env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and proc.poll() is None:
        if _listening(port):
            return proc
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"{' '.join(cmd)} did not listen on {port}: "
                f"{(cluster.dir / 'restd.log').read_text()[-1500:]}")


@pytest.fixture(scope="module")
def dash(tmp_path_factory):
    from pyslurm_lite import config
    port = _free_port()
    cluster = start_cluster(tmp_path_factory.mktemp("dash") / "c", SHAPE, _prepare(port))
    server = None
    try:
        cfg = config.load(str(cluster.conf))
        server = _serve(cluster, cfg.rest_port)
        yield Dash(cluster, f"http://127.0.0.1:{cfg.rest_port}", _token(cluster, cfg, "root"),
                   _token(cluster, cfg, USER), server, cfg)
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
        cluster.down()


# ---- the HTML itself ---------------------------------------------------------------------------
def test_the_raw_html_shows_a_pending_job_a_node_and_their_details(dash):
    job = dash.sbatch("--hold", "-J", "dash-held", "--wrap", "true")
    st, headers, html = dash.get("/", dash.user_token)
    assert st == 200 and "text/html" in headers["Content-Type"], (st, html[:300])
    assert re.search(rf"(?<![\w-]){job}(?![\w-])", html), html[:2000]
    assert "node1" in html and "dash-held" in html
    row = re.search(rf'<tr class="state-pending" data-job="{job}">.*?</tr>', html, re.S).group(0)
    assert "(JobHeldUser)" in row, row  # squeue's reason, in parentheses as squeue -l
    assert "gpu:4" in html  # the node's Gres; its GPUs are listed one by one
    assert html.count('class="gpu gpu-idle') >= 8, "each of the 2x4 idle GPUs"
    assert "Fair share per account" in html and "Recent failures" in html


def test_without_the_header_a_shell_page_and_a_login_page_say_how_to_get_in(dash):
    job = dash.sbatch("--hold", "-J", "dash-shell", "--wrap", "true")
    for path in ("/", f"/job/{job}"):
        st, headers, html = dash.get(path)
        assert st == 200 and 'id="shell"' in html and "dashboard.js" in html, (path, html[:300])
        assert "dash-shell" not in html and "node1" not in html, f"{path}: data without a token"
    st, _, html = dash.get("/login")
    assert st == 200 and "scontrol token" in html and 'id="login-form"' in html
    st, _, body = dash.get("/dashboard/live")
    assert st == 401


def test_a_cookie_alone_is_no_identity(dash):
    """H2 of R1: the token is never a cookie (browsers send a host's cookies to all its ports)."""
    job = dash.sbatch("--hold", "-J", "dash-cookie", "--wrap", "true")
    st, headers, html = dash.get("/", cookie=dash.op_token)
    assert st == 200 and "dash-cookie" not in html and 'id="shell"' in html
    assert "Max-Age=0" in headers.get("Set-Cookie", ""), "the old release's cookie is erased"
    assert dash.get("/dashboard/live", cookie=dash.op_token)[0] == 401
    st, _, _ = dash.post(f"/job/{job}/action", {"action": "cancel"}, cookie=dash.op_token)
    assert st == 401
    assert dash.cluster.state(job) == "PENDING"


def test_a_bad_token_is_refused_by_the_controller(dash):
    bad = dash.user_token[:-4] + ("AAAA" if not dash.user_token.endswith("AAAA") else "BBBB")
    st, _, html = dash.get("/", bad)
    assert st == 401 and "refused the token" in html, html[:500]


def test_the_live_endpoint_returns_the_sections_with_new_jobs(dash):
    job = dash.sbatch("--hold", "-J", "dash-live", "--wrap", "true")
    st, headers, body = dash.get("/dashboard/live", dash.user_token)
    assert st == 200 and headers["Content-Type"].startswith("application/json")
    doc = json.loads(body)
    assert set(doc["sections"]) == {"queue", "nodes", "shares", "failures"}
    assert f'data-job="{job}"' in doc["sections"]["queue"]
    assert doc["counts"]["pending"] >= 1


def test_a_running_jobs_gpus_show_on_its_node(dash):
    job = dash.sbatch("-J", "dash-gpu", "--gres=gpu:2", "--wrap", "sleep 60")
    try:
        wait_state(dash.cluster, job, "RUNNING", 30)
        html = dash.get("/", dash.user_token)[2]
        held = re.findall(rf'<span class="gpu gpu-alloc[^"]*"[^>]*>(\d+):{job}\b', html)
        assert len(held) == 2, f"two GPUs held by job {job}: {held}"
        node = dash.cluster.run(["squeue", "-h", "-j", str(job), "-o", "%N"]).stdout.strip()
        row = re.search(rf'<tr data-node="{node}">.*?</tr>', html, re.S).group(0)
        assert "gpu:2(IDX:" in row and f":{job}" in row, row
    finally:
        dash.cluster.run(["scancel", str(job)])


def test_recent_failures_are_gathered_in_the_background_and_then_shown(dash):
    job = dash.sbatch("-J", "dash-fails", "--wrap", "exit 3")
    assert wait_state(dash.cluster, job, "FAILED", 30) == "FAILED"
    token = _token(dash.cluster, dash.cfg, USER, lifespan=3599)  # a caller not seen before
    first = json.loads(dash.get("/dashboard/live", token)[2])["sections"]["failures"]
    deadline, section = time.monotonic() + 20, first
    while f'href="/job/{job}"' not in section and time.monotonic() < deadline:
        time.sleep(0.5)
        section = json.loads(dash.get("/dashboard/live", token)[2])["sections"]["failures"]
    assert f'href="/job/{job}"' in section and "FAILED" in section and "3:0" in section, section
    assert "being gathered" in first or f'href="/job/{job}"' in first


def test_a_job_name_with_markup_renders_as_text(dash):
    job = dash.sbatch("--hold", "-J", XSS, "--wrap", "true")
    for path in ("/", f"/job/{job}"):
        st, _, html = dash.get(path, dash.user_token)
        assert st == 200
        assert XSS not in html, f"{path} echoes the job name unescaped"
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    doc = json.loads(dash.get("/dashboard/live", dash.user_token)[2])
    assert XSS not in doc["sections"]["queue"]


def test_an_operator_sees_action_buttons_and_a_user_does_not(dash):
    dash.sbatch("--hold", "-J", "dash-btn", "--wrap", "true")
    _, _, op = dash.get("/", dash.op_token)
    _, _, user = dash.get("/", dash.user_token)
    assert 'value="cancel"' in op and 'value="drain"' in op and "operator" in op
    assert 'value="cancel"' not in user and 'value="drain"' not in user


def test_an_operator_holds_releases_and_cancels_through_the_page(dash):
    job = dash.sbatch("-J", "dash-act", "--begin=now+1hour", "--wrap", "true")
    st, headers, _ = dash.post(f"/job/{job}/action", {"action": "hold"}, dash.op_token)
    assert st == 303 and headers["Location"].endswith(f"/job/{job}")
    assert "JobHeldAdmin" in dash.cluster.run(["squeue", "-h", "-j", str(job), "-o", "%r"]).stdout
    dash.post(f"/job/{job}/action", {"action": "release"}, dash.op_token)
    assert "Held" not in dash.cluster.run(["squeue", "-h", "-j", str(job), "-o", "%r"]).stdout
    st, _, _ = dash.post(f"/job/{job}/action", {"action": "cancel"}, dash.op_token)
    assert st == 303 and wait_state(dash.cluster, job, "CANCELLED", 20).startswith("CANCELLED")


def test_an_operator_drains_and_resumes_a_node(dash):
    st, _, _ = dash.post("/node/node2/action", {"action": "drain", "reason": "dash test"},
                         dash.op_token)
    assert st == 303
    r = dash.cluster.run(["sinfo", "-h", "-n", "node2", "-o", "%T|%E"])
    assert r.stdout.strip() in ("drained|dash test", "draining|dash test"), r.stdout
    dash.post("/node/node2/action", {"action": "resume"}, dash.op_token)
    assert "drain" not in dash.cluster.run(["sinfo", "-h", "-n", "node2", "-o", "%T"]).stdout


def test_a_users_forged_post_is_refused_by_the_controller(dash):
    job = dash.sbatch("--hold", "-J", "dash-victim", "--wrap", "true")
    st, _, html = dash.post(f"/job/{job}/action", {"action": "cancel"}, dash.user_token)
    assert st == 403 and "denied" in html.lower(), (st, html[:500])
    st, _, html = dash.post("/node/node1/action", {"action": "drain"}, dash.user_token)
    assert st == 403, (st, html[:500])
    assert dash.cluster.state(job) == "PENDING"
    assert "drain" not in dash.cluster.run(["sinfo", "-h", "-n", "node1", "-o", "%T"]).stdout


def test_posts_without_the_header_or_from_another_origin_are_refused(dash):
    job = dash.sbatch("--hold", "-J", "dash-origin", "--wrap", "true")
    st, _, _ = dash.post(f"/job/{job}/action", {"action": "cancel"})
    assert st == 401
    st, _, html = dash.post(f"/job/{job}/action", {"action": "cancel"}, dash.op_token,
                            origin="http://evil.example")
    assert st == 403 and "Refused" in html
    assert dash.cluster.state(job) == "PENDING"


def test_the_job_page_shows_facts_timeline_steps_and_usage(dash):
    job = dash.sbatch("-J", "dash-steps", "--wrap", "srun -n1 true; srun -n1 sleep 1")
    wait_state(dash.cluster, job, "COMPLETED", 60)
    st, _, html = dash.get(f"/job/{job}", dash.user_token)
    assert st == 200
    assert "submitted" in html and "started" in html and "ended COMPLETED" in html
    assert f"{job}.0" in html and f"{job}.1" in html, "both steps"
    assert 'href="/"' in html
    st, _, _ = dash.get("/job/99999999", dash.user_token)
    assert st == 404


# ---- in headless chromium ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser():
    if not os.access(CHROMIUM, os.X_OK):
        pytest.skip(f"no {CHROMIUM}: apt-get install -y chromium (Debian's; .ci/run does)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("no playwright in this venv: pip install playwright (the test extra); "
                    "never `playwright install`, the tests drive Debian's chromium")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-dev-shm-usage"])
        try:
            yield b
        finally:
            b.close()


def _page(browser, token: str | None = None):
    headers = {"X-SLURM-USER-TOKEN": token} if token else {}
    return browser.new_context(viewport={"width": 1400, "height": 900},
                               extra_http_headers=headers).new_page()


def test_chromium_renders_the_overview_and_a_later_job_appears_without_reload(dash, browser, tmp_path):
    page = _page(browser, dash.user_token)
    page.goto(dash.base + "/", wait_until="domcontentloaded")
    first = dash.sbatch("--hold", "-J", "dash-before", "--wrap", "true")
    assert page.locator("table.nodes").inner_text().count("node") >= 2
    page.evaluate("window.__same_page = true")  # gone if the page reloads
    later = dash.sbatch("--hold", "-J", "dash-after", "--wrap", "true")
    page.wait_for_selector(f'tr[data-job="{later}"]', timeout=10000)
    assert page.evaluate("window.__same_page") is True
    assert str(first) in page.inner_text("#queue")
    page.screenshot(path=str(tmp_path / "dashboard.png"), full_page=True)
    if NOTES_SHOT.parent.is_dir() and not NOTES_SHOT.exists():
        shutil.copy(tmp_path / "dashboard.png", NOTES_SHOT)


def test_chromium_shows_the_xss_job_name_as_text(dash, browser):
    job = dash.sbatch("--hold", "-J", XSS, "--wrap", "true")
    page = _page(browser, dash.user_token)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(dash.base + f"/job/{job}", wait_until="load")
    assert XSS in page.inner_text("h1")
    page.goto(dash.base + "/", wait_until="load")
    page.wait_for_timeout(2500)  # one live update swapped in
    assert XSS in page.inner_text(f'tr[data-job="{job}"]')
    assert not dialogs


def test_chromium_job_page_and_operator_buttons(dash, browser):
    job = dash.sbatch("--hold", "-J", "dash-page", "--wrap", "true")
    op = _page(browser, dash.op_token)
    op.goto(dash.base + "/", wait_until="load")
    assert op.locator(f'tr[data-job="{job}"] button[value="cancel"]').count() == 1
    op.click(f'tr[data-job="{job}"] a')
    op.wait_for_url(f"**/job/{job}")
    assert "submitted" in op.inner_text("#timeline") and op.locator("#steps table").count() == 1
    user = _page(browser, dash.user_token)
    user.goto(dash.base + "/", wait_until="load")
    assert user.locator(f'tr[data-job="{job}"]').count() == 1
    assert user.locator("button[value=cancel], button[value=drain]").count() == 0


def _log_in(browser, dash, token: str, path: str = "/"):
    """A page of a context with no extra headers, logged in by pasting the token at `path`."""
    page = _page(browser)
    page.goto(dash.base + path, wait_until="load")
    page.wait_for_selector("#token", timeout=10000)  # the shell sent it to the login page
    page.fill("#token", f"SLURM_JWT={token}\n")
    page.click("#login-button")
    return page


def test_chromium_login_with_a_pasted_token_keeps_it_in_session_storage(dash, browser):
    job = dash.sbatch("--hold", "-J", "dash-login", "--wrap", "true")
    page = _log_in(browser, dash, dash.user_token)
    page.wait_for_selector(f'tr[data-job="{job}"]', timeout=10000)
    assert page.url == dash.base + "/"
    assert page.evaluate("sessionStorage.getItem('slurm_jwt')") == dash.user_token
    assert page.context.cookies() == [] and page.evaluate("document.cookie") == ""
    page.goto(dash.base + f"/job/{job}", wait_until="load")  # a navigation: no header, a shell
    page.wait_for_selector("#timeline", timeout=10000)
    assert "submitted" in page.inner_text("#timeline") and "dash-login" in page.inner_text("h1")
    page.click("#logout")
    page.wait_for_selector("#token", timeout=10000)
    assert page.evaluate("sessionStorage.getItem('slurm_jwt')") is None
    page.goto(dash.base + "/", wait_until="load")
    page.wait_for_selector("#token", timeout=10000)  # logged out: the shell asks for a token


def test_chromium_refuses_a_bad_pasted_token(dash, browser):
    page = _log_in(browser, dash, dash.user_token[:-4] + "AAAA")
    page.wait_for_selector("#login-error", timeout=10000)
    assert "refused" in page.inner_text("#login-error")
    assert page.evaluate("sessionStorage.getItem('slurm_jwt')") is None


def test_chromium_an_operator_holds_a_job_with_the_kept_token(dash, browser):
    job = dash.sbatch("-J", "dash-js-hold", "--begin=now+1hour", "--wrap", "true")
    page = _log_in(browser, dash, dash.op_token, f"/job/{job}")
    page.wait_for_selector('button[value="hold"]', timeout=10000)
    page.click('button[value="hold"]')
    deadline = time.monotonic() + 10
    while "JobHeldAdmin" not in dash.cluster.run(["squeue", "-h", "-j", str(job), "-o", "%r"]).stdout:
        assert time.monotonic() < deadline, "the hold POSTed by the script did not arrive"
        time.sleep(0.3)
    page.wait_for_function("document.querySelector('dd') !== null", timeout=10000)
    assert page.url == dash.base + f"/job/{job}"
    dash.cluster.run(["scancel", str(job)])
