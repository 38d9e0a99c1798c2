"""The web dashboard on the REST server's port: pages rendered on the server (the HTML holds the
data), then kept current by a small script polling a JSON endpoint every 2 s.

    GET  /                   the overview: queue, nodes and GPUs, fair share, recent failures
    GET  /job/{id}           one job: facts, timeline, steps, usage bars
    GET  /dashboard/live     the overview's sections as JSON ({"sections": {name: html}, ...})
    GET  /login              the page where a pasted `scontrol token` is kept (by the script)
    POST /job/{id}/action    cancel | hold | release     (operators; the controller decides)
    POST /node/{name}/action drain | resume
    GET  /dashboard/static/  the script and the style sheet

Who is calling: the X-SLURM-USER-TOKEN header, as for slurmrestd, and nothing else. A browser
keeps the pasted token in sessionStorage (bound to this origin, port included, and to the tab)
and its script sends the header; never a cookie, which the browser would also hand to any other
port of this host (RFC 6265 8.5), e.g. a user's own web server there. A navigation carries no
header, so GET / and GET /job/N without one answer a shell page whose script fetches the same
URL with the header and swaps in what the server rendered; with the header (scripts, the
script's own fetches) they answer the full page.

Every figure comes from the controller through Client(cfg, token=JWT), so the controller
authenticates the token and applies its own authorization (PrivateData, operator-only actions)
exactly as for the CLIs. This module only decides what to show: the operator buttons appear for
the user the token names when that user is an operator (root, SlurmUser, AdminUsers), a
courtesy, never the check. It must not: trust the token's claims for anything but the buttons,
render a value without the templates' escaping, or accept identity from anything a browser
attaches on its own (cookies, HTTP auth).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import jinja2
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..errors import NotFound, PermissionDenied, SlurmError, Unauthenticated
from . import dashcache, dashjob, dashview
from .app import BODY_PATIENCE, without_own_identity

HERE = Path(__file__).resolve().parent
TOKEN_HEADER = "x-slurm-user-token"
# The cookie the first release kept the token in: erased wherever a browser may still hold one
# (cookies ignore ports, so erasing it here erases it for the whole host); never read.
OLD_COOKIE = "slurm_jwt"
CLIENTS_KEPT = 32  # controller connections kept, one per token seen lately
MAX_FORM = 16384  # bytes of a POSTed form
JOB_ACTIONS = {"cancel", "hold", "release"}
NODE_ACTIONS = {"drain": "DRAIN", "resume": "RESUME"}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; "
                               "img-src 'self' data:; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Vary": "X-SLURM-USER-TOKEN",  # one URL: the shell without the header, the page with it
}


def routes(cfg) -> list:
    """The dashboard's routes, for the REST server's app (mounted at "/")."""
    d = Dashboard(cfg)
    return [
        Route("/", d.overview, methods=["GET"]),
        Route("/job/{job_id:int}", d.job_page, methods=["GET"]),
        Route("/dashboard/live", d.live, methods=["GET"]),
        Route("/login", d.login_page, methods=["GET"]),
        Route("/job/{job_id:int}/action", d.job_action, methods=["POST"]),
        Route("/node/{name}/action", d.node_action, methods=["POST"]),
        Mount("/dashboard/static", StaticFiles(directory=HERE / "static"), name="dashboard-static"),
    ]


def app(cfg):
    """The dashboard alone (bench, or where the REST server is not running)."""
    from starlette.applications import Starlette
    return Starlette(routes=routes(cfg))


def clean_token(text: str) -> str:
    """What `scontrol token` prints (SLURM_JWT=...) or the bare token."""
    text = (text or "").strip()
    return text.split("=", 1)[1].strip() if text.startswith("SLURM_JWT=") else text


def claimed_user(token: str) -> str:
    """The user name ("sun") the token claims, NOT verified: for the page's buttons only."""
    import jwt
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return ""
    return str(claims.get("sun") or claims.get("username") or "")


class Dashboard:
    def __init__(self, cfg):
        self.cfg = cfg
        self.client_cfg = without_own_identity(cfg)  # a Client never calls as this (root) process
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(HERE / "templates"), autoescape=True,
            undefined=jinja2.StrictUndefined)
        self._clients: OrderedDict[str, object] = OrderedDict()
        self.failures = dashcache.Background()
        self._lock = threading.Lock()

    # ---- identity ---------------------------------------------------------------------------
    def client(self, token: str):
        from ..client import Client
        with self._lock:
            c = self._clients.pop(token, None) or \
                Client(self.client_cfg, token=token, transport="grpcio")
            self._clients[token] = c
            while len(self._clients) > CLIENTS_KEPT:
                self._clients.popitem(last=False)  # not closed: a request may still use it (the
        return c                                   # garbage collector closes its channel)

    def is_operator(self, name: str) -> bool:
        return bool(name) and (name == "root" or name == self.cfg.slurm_user
                               or name in self.cfg.admin_users)

    def who(self, token: str) -> dict:
        user = claimed_user(token)
        return {"user": user, "operator": self.is_operator(user)}

    # ---- responses --------------------------------------------------------------------------
    def page(self, name: str, status: int = 200, **values) -> HTMLResponse:
        html = self.templates.get_template(name).render(cluster=self.cfg.cluster_name, **values)
        return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)

    def login_response(self, message: str = "", status: int = 401) -> HTMLResponse:
        r = self.page("login.html", status, message=message, who=None)
        r.delete_cookie(OLD_COOKIE, path="/")
        return r

    def shell(self) -> HTMLResponse:
        """A navigation's answer: no data, only the script that asks again with the header."""
        r = self.page("shell.html", who=None)
        r.delete_cookie(OLD_COOKIE, path="/")
        return r

    def failure(self, e: SlurmError, token: str) -> Response:
        """A controller's refusal as a page: a bad token sends the caller to log in again."""
        if isinstance(e, Unauthenticated):
            return self.login_response(f"The controller refused the token: {e}")
        status = 403 if isinstance(e, PermissionDenied) else 404 if isinstance(e, NotFound) else 502
        return self.page("error.html", status, message=str(e), who=self.who(token))

    async def checked_post(self, request: Request) -> tuple[str, dict] | Response:
        """(token, form) of a POST, or a refusal. No CSRF token is needed, and none is left to
        forge: the caller's identity comes only from the X-SLURM-USER-TOKEN header, which a
        cross-site form cannot set and a cross-origin script cannot send (a custom header needs
        a CORS preflight this server never grants); a cookie alone is no identity here."""
        token = self.token_of(request)
        if not token:
            return self.login_response("Refused: no X-SLURM-USER-TOKEN header.")
        if not same_origin(request):
            return self.page("error.html", 403, message="Refused: not a form of this dashboard.",
                             who=self.who(token))
        form = await read_form(request)
        if isinstance(form, Response):
            return form
        return token, form

    @staticmethod
    def token_of(request: Request) -> str:
        return clean_token(request.headers.get(TOKEN_HEADER, ""))

    # ---- pages ------------------------------------------------------------------------------
    def collect(self, token: str, query: str, page: int) -> dict:
        """Everything the overview shows; a section the controller refuses to this caller says
        so instead of failing the page. Failures are the latest background answer (dashcache)."""
        c = self.client(token)
        jobs, now = c.jobs()
        data = {"now": dashview.when(now), "queue": dashview.queue(jobs, now, query, page=page),
                "nodes": [], "shares": [], "refused": {}}
        for section, fetch in (("nodes", lambda: dashview.node_views(c.nodes()[0], jobs)),
                               ("shares", lambda: dashview.share_rows(c.shares()))):
            try:
                data[section] = fetch()
            except PermissionDenied as e:
                data["refused"][section] = str(e)
        failures = self.failures.get(token, lambda: dashview.failure_rows(c.job_history(
            states=list(dashview.FAILED_STATES), start=time.time() - dashview.FAILURE_WINDOW)[0]))
        if isinstance(failures, SlurmError):
            data["refused"]["failures"] = str(failures)
        elif isinstance(failures, Exception):
            data["refused"]["failures"] = "the controller did not answer"
        data["failures"] = failures if isinstance(failures, list) else None
        return data

    async def overview(self, request: Request) -> Response:
        token = self.token_of(request)
        if not token:
            return self.shell()
        query, page = search_of(request)
        try:
            data = await run_in_threadpool(self.collect, token, query, page)
        except SlurmError as e:
            return self.failure(e, token)
        return self.page("overview.html", who=self.who(token), **data)

    async def live(self, request: Request) -> Response:
        token = self.token_of(request)
        if not token:
            return JSONResponse({"error": "no token: log in"}, status_code=401)
        query, page = search_of(request)
        try:
            data = await run_in_threadpool(self.collect, token, query, page)
        except Unauthenticated as e:
            return JSONResponse({"error": str(e)}, status_code=401)
        except SlurmError as e:
            return JSONResponse({"error": str(e)}, status_code=502)
        sections = self.templates.get_template("sections.html").make_module(
            {"who": self.who(token), **data})
        return JSONResponse({"now": data["now"], "counts": data["queue"]["counts"],
                             "sections": {name: str(getattr(sections, f"{name}_section")())
                                          for name in ("queue", "nodes", "shares", "failures")}},
                            headers={"Cache-Control": "no-store"})

    def job_data(self, token: str, job_id: int) -> dict:
        c = self.client(token)
        jobs, now = c.jobs(job_ids=[job_id], include_finished=True)
        if not jobs:
            raise NotFound(f"Invalid job id specified: {job_id}")
        job = jobs[0]
        runs, _ = c.job_history(job_ids=[job_id], duplicates=True, any_eligibility=True)
        return {"job": job, "facts": dashjob.job_facts(job), "timeline": dashjob.timeline(job, runs),
                "steps": dashjob.step_rows(job, now), "charts": dashjob.usage_charts(job),
                "active": job.state in dashview.ACTIVE_ORDER, "now": dashview.when(now)}

    async def job_page(self, request: Request) -> Response:
        token = self.token_of(request)
        if not token:
            return self.shell()
        try:
            data = await run_in_threadpool(self.job_data, token, request.path_params["job_id"])
        except SlurmError as e:
            return self.failure(e, token)
        return self.page("job.html", who=self.who(token), **data)

    # ---- logging in -------------------------------------------------------------------------
    async def login_page(self, request: Request) -> Response:
        """The form only: the script checks a pasted token by fetching the page it was headed
        for with it, and keeps it in sessionStorage; no token is ever POSTed here."""
        return self.login_response(status=200)

    # ---- operator actions -------------------------------------------------------------------
    async def job_action(self, request: Request) -> Response:
        checked = await self.checked_post(request)
        if isinstance(checked, Response):
            return checked
        token, form = checked
        job_id, action = request.path_params["job_id"], form.get("action", "")
        if action not in JOB_ACTIONS:
            return self.page("error.html", 400, message=f"Unknown action '{action}'; valid: "
                             f"{', '.join(sorted(JOB_ACTIONS))}", who=self.who(token))
        c = self.client(token)
        call = (lambda: c.cancel(job_ids=[job_id])) if action == "cancel" \
            else (lambda: c.update_jobs([job_id], action))
        return await self.act(call, token, f"/job/{job_id}")

    async def node_action(self, request: Request) -> Response:
        checked = await self.checked_post(request)
        if isinstance(checked, Response):
            return checked
        token, form = checked
        name, action = request.path_params["name"], form.get("action", "")
        if action not in NODE_ACTIONS:
            return self.page("error.html", 400, message=f"Unknown action '{action}'; valid: "
                             f"{', '.join(sorted(NODE_ACTIONS))}", who=self.who(token))
        reason = form.get("reason", "").strip() or \
            f"drained from the dashboard by {claimed_user(token) or 'an operator'}"
        c = self.client(token)
        return await self.act(lambda: c.update_nodes([name], NODE_ACTIONS[action], reason),
                              token, "/#nodes")

    async def act(self, call, token: str, back: str) -> Response:
        """Run an action; the controller's errors (a user's forged POST: access denied) as a page."""
        try:
            result = await run_in_threadpool(call)
        except SlurmError as e:
            return self.failure(e, token)
        errors = result[1] if isinstance(result, tuple) else []
        if errors:
            return self.page("error.html", 403 if any("denied" in m.lower() for _, m in errors)
                             else 400, message="; ".join(f"{i}: {m}" for i, m in errors),
                             who=self.who(token))
        return RedirectResponse(back, status_code=303)


def search_of(request: Request) -> tuple[str, int]:
    """The queue's search text (capped) and page number (0-based)."""
    query = request.query_params.get("q", "")[:200]
    page = request.query_params.get("page", "0")
    return query, int(page) if page.isdigit() and len(page) < 6 else 0


async def read_form(request: Request) -> dict[str, str] | Response:
    """An application/x-www-form-urlencoded body as {name: first value}, or a refusal. The size
    is checked before anything is kept: the declared length first, then a running total of what
    arrives (a chunked body declares none), so a huge body costs this process no memory."""
    if not request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
        return _refusal(415, "Refused: not a form (application/x-www-form-urlencoded).")
    declared = request.headers.get("content-length", "")
    if declared and (not declared.isdigit() or int(declared) > MAX_FORM):
        return _refusal(413, f"Refused: a form over {MAX_FORM} bytes.")
    body = bytearray()
    with anyio.move_on_after(BODY_PATIENCE) as patience:  # a trickled body holds no slot for ever
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_FORM:
                return _refusal(413, f"Refused: a form over {MAX_FORM} bytes.")
    if patience.cancelled_caught:
        return _refusal(408, f"Refused: the form took over {BODY_PATIENCE:g} seconds to arrive.")
    return {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}


def _refusal(status: int, message: str) -> Response:
    return Response(message + "\n", status_code=status, media_type="text/plain",
                    headers=SECURITY_HEADERS)


def same_origin(request: Request) -> bool:
    """False when the browser names another origin (Origin, else Referer) than this host. The
    header token is the real guard (see checked_post); this refuses what no page of ours sends."""
    origin = request.headers.get("origin") or request.headers.get("referer")
    if not origin:  # scripts (curl, tools) send neither; they hold the token anyway
        return True
    return origin != "null" and urlsplit(origin).netloc == request.headers.get("host", "")


def main(argv: list[str] | None = None) -> None:
    """python -m pyslurm_lite.restd.dashboard [--host H] [--port P]: the dashboard alone on
    RestPort (the bench; tests where neither the controller nor `pyslurm-lite restd` serves it)."""
    import argparse

    import uvicorn

    from .. import config
    p = argparse.ArgumentParser(prog="python -m pyslurm_lite.restd.dashboard")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="default: RestPort")
    ns = p.parse_args(argv)
    cfg = config.load(None)
    port = ns.port or cfg.rest_port
    if not port:
        raise SystemExit("no port: give --port or set RestPort= in slurm.conf")
    uvicorn.run(app(cfg), host=ns.host, port=port, log_level="warning")


if __name__ == "__main__":
    main()
