"""The REST server's pure parts: v0.0.42 converters checked against slurmrestd's published
OpenAPI schema (restd/openapi/slurm-v0.0.42.json), the job description parser, the envelope,
the token's unverified user, and the document GET /openapi/v3 serves."""

from __future__ import annotations

import base64
import json

import pytest

from factories import model_job
from pyslurm_lite.errors import NotFound, PermissionDenied, Unauthenticated
from pyslurm_lite.model import (UNLIMITED, GresRequest, Job, JobSpec, JobState, Node, NodeConfig,
                                NodeState, Partition, Reason, Reservation)
from pyslurm_lite.restd import auth, envelope, openapi
from pyslurm_lite.restd.envelope import RestError
from pyslurm_lite.restd.v0042 import job_desc, jobs, resources

pytest.importorskip("jsonschema")

SCRIPT = "#!/bin/bash\necho hi\n"


def valid(schema: str, doc: dict) -> None:
    errors = sorted(openapi.validator(schema).iter_errors(doc), key=str)
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:5])


def wrapped(payload: dict, **kw) -> dict:
    return envelope.body(payload, "local", "alice", "[127.0.0.1]:1", **kw)


# ---- converters against the published schema --------------------------------------------------
def pending_job() -> Job:
    spec = JobSpec(name="p", user="alice", uid=1000, gid=1000, work_dir="/w", std_out="o-%j.txt",
                   gres=[GresRequest("gpu", "a100", 2)], mem_per_node=500, mail_type="BEGIN,END")
    return Job(job_id=7, spec=spec, state=JobState.PENDING, reason=Reason.PRIORITY,
               time_limit=UNLIMITED, held=True, submit_time=1_700_000_000.0)


def failed_job() -> Job:
    job = model_job(9)
    job.state, job.exit_code, job.exit_signal, job.end_time = JobState.FAILED, 0, 9, 1.7e9
    job.array_job_id, job.array_task_id, job.array_tasks = 8, 1, "0-3"
    return job


@pytest.mark.parametrize("job", [model_job(), pending_job(), failed_job()])
def test_job_info_matches_the_published_schema(job):
    doc = jobs.job_info(job)
    valid("v0.0.42_job_info", doc)
    valid("v0.0.42_openapi_job_info_resp", wrapped({"jobs": [doc], "last_backfill": {},
                                                    "last_update": {}}))


def test_job_info_fields():
    doc = jobs.job_info(pending_job())
    assert doc["job_state"] == ["PENDING"] and doc["state_reason"] == "Priority"
    assert doc["time_limit"] == {"set": False, "infinite": True, "number": 0}
    assert doc["standard_output"] == "/w/o-7.txt" and doc["standard_error"] == "/w/o-7.txt"
    assert doc["tres_per_node"] == "gres/gpu:a100:2" and doc["hold"] is True
    assert doc["memory_per_node"] == {"set": True, "infinite": False, "number": 500}
    assert doc["mail_type"] == ["BEGIN", "END"] and doc["user_name"] == "alice"
    running = jobs.job_info(model_job(nodes=("node1", "node2")))
    assert running["nodes"] == "node[1-2]" and running["job_state"] == ["RUNNING"]
    assert running["time_limit"]["number"] == 60


def test_node_partition_reservation_diag_ping_match_the_schema():
    cfg = NodeConfig(name="node1", addr="127.0.0.1", cpus=4, real_memory=4000,
                     gres=[GresRequest("gpu", "", 4)], features=["a100"])
    n = Node(config=cfg, state=NodeState.IDLE, drain=True, responding=True, reason="fix")
    doc = resources.node(n, ["main"])
    assert doc["state"] == ["IDLE", "DRAIN"] and doc["gres"] == "gpu:4"
    valid("v0.0.42_openapi_nodes_resp", wrapped({"nodes": [doc], "last_update": {}}))
    p = resources.partition(Partition(name="main", nodes=["node1"], max_nodes=UNLIMITED), 4)
    valid("v0.0.42_openapi_partition_resp", wrapped({"partitions": [p], "last_update": {}}))
    r = resources.reservation(Reservation("r1", 1.0, 2.0, nodes=["node1"], users=["alice"],
                                          flags=["MAINT"]))
    valid("v0.0.42_openapi_reservation_resp", wrapped({"reservations": [r], "last_update": {}}))

    class Diag:
        now, since, jobs_submitted, jobs_started, jobs_completed, jobs_canceled = 5, 1, 3, 2, 1, 0
        jobs_failed = jobs_pending = jobs_running = cycles = last_cycle_us = max_cycle_us = 1
        total_cycle_us = last_queue_length = backfilled_jobs = 1
    valid("v0.0.42_openapi_diag_resp", wrapped({"statistics": resources.statistics(Diag())}))
    pings = [resources.ping("a", 0, 2, object(), 120), resources.ping("b", 1, 2, None, 5)]
    valid("v0.0.42_openapi_ping_array_resp", wrapped({"pings": pings}))
    assert [(p["pinged"], p["mode"]) for p in pings] == [("UP", "primary"), ("DOWN", "backup")]


def test_strict_validation_catches_a_misspelt_field():
    doc = dict(jobs.job_info(model_job()), jobstate=["RUNNING"])
    assert list(openapi.validator("v0.0.42_job_info").iter_errors(doc))


def test_error_envelope_matches_the_schema():
    e = RestError(403, envelope.ESLURM_ACCESS_DENIED, "job 5: Access/permission denied", "x")
    doc = wrapped({}, errors=[e.entry()])
    valid("v0.0.42_openapi_resp", doc)
    assert doc["errors"][0]["error"] == "Access/permission denied"


@pytest.mark.parametrize("err, status, number", [
    (Unauthenticated("expired"), 401, envelope.ESLURM_REST_AUTH_FAIL),
    (PermissionDenied("no"), 403, envelope.ESLURM_ACCESS_DENIED),
    (NotFound("gone"), 404, envelope.ESLURM_INVALID_JOB_ID),
])
def test_domain_errors_map_to_slurmrestd_statuses(err, status, number):
    e = RestError.from_domain(err, "op", not_found=envelope.ESLURM_INVALID_JOB_ID)
    assert (e.status, e.error_number) == (status, number)


# ---- the job description ----------------------------------------------------------------------
BASE = {"current_working_directory": "/tmp", "environment": ["PATH=/bin", "A=b=c"]}


def spec_of(extra: dict):
    desc, script = job_desc.submit_request({"job": {**BASE, **extra, "script": SCRIPT}})
    return job_desc.to_spec(desc, script, 1000, 1000, "alice", "h")


@pytest.mark.parametrize("extra, field, want", [
    ({"name": "n"}, "name", "n"),
    ({}, "environment", {"PATH": "/bin", "A": "b=c"}),
    ({"time_limit": {"set": True, "number": 30}}, "time_limit", 30),
    ({"time_limit": 45}, "time_limit", 45),
    ({"time_limit": {"infinite": True}}, "time_limit", UNLIMITED),
    ({"tasks": 3}, "num_tasks", 3),
    ({"cpus_per_task": 2}, "cpus_per_task", 2),
    ({"memory_per_node": {"set": True, "number": 300}}, "mem_per_node", 300),
    ({"nodes": "2-3"}, "max_nodes", 3),
    ({"array": "0-3%2"}, "array", "0-3%2"),
    ({"hold": True}, "hold", True),
    ({"tres_per_node": "gres/gpu:2"}, "gpus_per_node", 2),
    ({"tres_per_job": "gres/gpu:a100:3"}, "gpus", 3),
    ({"required_nodes": ["node1", "node2"]}, "nodelist", "node1,node2"),
    ({"standard_output": "/tmp/o"}, "std_out", "/tmp/o"),
    ({"shared": ["none"]}, "exclusive", True),
    ({"dependency": "afterok:3"}, "dependency", "afterok:3"),
])
def test_job_description_fields(extra, field, want):
    spec, warnings = spec_of(extra)
    assert getattr(spec, field) == want and warnings == []
    assert (spec.uid, spec.gid, spec.user, spec.work_dir) == (1000, 1000, "alice", "/tmp")


def test_script_beside_the_job_and_defaults():
    desc, script = job_desc.submit_request({"script": SCRIPT, "job": BASE})
    spec, _ = job_desc.to_spec(desc, script, 1000, 1000, "alice", "h")
    assert spec.script == SCRIPT and spec.name == "sbatch" and spec.submit_dir == "/tmp"


def test_unimplemented_and_unknown_fields_are_warnings():
    _, warnings = spec_of({"licenses": "x:1", "frobnicate": 1})
    text = " ".join(w["description"] for w in warnings)
    assert "'licenses' is not implemented" in text and "'frobnicate' is not in" in text


@pytest.mark.parametrize("body, words", [
    ([], "JSON object"),
    ({"script": SCRIPT}, "\"job\" object"),
    ({"job": BASE}, "#!"),
    ({"jobs": [BASE]}, "heterogeneous"),
    ({"job": {**BASE, "script": SCRIPT, "tasks": "2"}}, "'tasks'"),
    ({"job": {**BASE, "script": SCRIPT, "current_working_directory": "rel"}}, "absolute"),
    ({"job": {**BASE, "script": SCRIPT, "environment": ["NOEQUALS"]}}, "NAME=value"),
    ({"job": {"current_working_directory": "/tmp", "script": SCRIPT}}, "environment"),
    ({"job": {**BASE, "script": SCRIPT, "time_limit": 0}}, "time_limit"),
    ({"job": {**BASE, "script": SCRIPT, "array": "x-y"}}, "array"),
])
def test_bad_job_descriptions_are_400s_naming_the_problem(body, words):
    with pytest.raises(RestError) as e:
        desc, script = job_desc.submit_request(body)
        job_desc.to_spec(desc, script, 1000, 1000, "alice", "h")
    assert e.value.status == 400 and words in e.value.description
    assert e.value.error_number == envelope.ESLURM_REST_FAIL_PARSING


def test_update_changes():
    changes, action, warnings = job_desc.to_changes(
        {"time_limit": {"set": True, "number": 10}, "name": "x", "hold": True, "licenses": "a"})
    assert changes == {"TimeLimit": "10", "JobName": "x"} and action == "hold"
    assert "'licenses' cannot be updated" in warnings[0]["description"]
    with pytest.raises(RestError):
        job_desc.to_changes({"nice": "high"})


# ---- the token's user, unverified -------------------------------------------------------------
def token(claims) -> str:
    part = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"eyJhbGciOiJIUzI1NiJ9.{part}.sig"


@pytest.mark.parametrize("text, user", [
    (token({"sun": "alice", "exp": 1}), "alice"),
    (token({"exp": 1}), None),
    (token(["sun"]), None),
    ("a.b", None),
    ("x.!!!.y", None),
    ("", None),
])
def test_unverified_user(text, user):
    assert auth.unverified_user(text) == user


def test_identify_needs_a_token_and_a_matching_name():
    with pytest.raises(RestError) as e:
        auth.identify({}, "op")
    assert e.value.status == 401
    with pytest.raises(RestError) as e:
        auth.identify({"x-slurm-user-token": token({"sun": "alice"}),
                       "x-slurm-user-name": "bob"}, "op")
    assert e.value.status == 401 and "does not match" in e.value.description
    ident = auth.identify({"x-slurm-user-token": token({"sun": "alice"})}, "op")
    assert ident.user == "alice"


# ---- the served document ----------------------------------------------------------------------
def test_served_document_lists_what_we_serve_and_resolves():
    doc = json.loads(openapi.served_document())
    assert set(doc["paths"]) == {p for _, p in openapi.SERVED}
    assert "delete" not in doc["paths"]["/slurm/v0.0.42/jobs/"]
    refs = openapi._referenced(doc["paths"], doc["components"]["schemas"])
    assert refs <= set(doc["components"]["schemas"])
    assert "v0.0.42_job_info" in doc["components"]["schemas"]


def test_every_served_route_is_in_the_published_document():
    from pyslurm_lite.restd import app
    published = {(m.lower(), app.BASE + p) for m, p, *_ in app._OPERATIONS}
    served = {(m, p.rstrip("/")) for m, p in openapi.SERVED}
    assert published == served


# ---- the REST server never calls as itself ----------------------------------------------------
def test_clients_carry_the_callers_token_and_cannot_fall_back_to_root():
    pytest.importorskip("starlette")
    from pyslurm_lite.client import Client
    from pyslurm_lite.config import parse
    from pyslurm_lite.restd import app
    cfg = parse("SlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=1\n")
    pool = app._Clients(cfg)
    with pytest.raises(RestError) as e, pool.lease(""):
        pass
    assert e.value.status == 401
    with pool.lease("a.b.c") as client:
        assert client.token == "a.b.c" and client.cfg.auth_socket == app.NO_AUTH_SOCKET
    with pool.lease("a.b.c") as again, pool.lease("a.b.c", 0) as one:
        assert again is client and one.token == "a.b.c" and one is not client
        assert one.cfg.auth_socket == app.NO_AUTH_SOCKET and one.timeout == app.PING_TIMEOUT
    # were a call ever made without the token, it fails closed instead of fetching root's
    with pytest.raises(Unauthenticated, match="no auth socket"):
        Client(client.cfg).ping()


def test_start_rest_serves_then_frees_its_port_and_names_a_taken_one():
    pytest.importorskip("uvicorn")
    import socket
    import urllib.request

    from pyslurm_lite.config import parse
    from pyslurm_lite.errors import ConfigError
    from pyslurm_lite.restd import server
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = parse(f"SlurmctldHost=localhost(127.0.0.1)\nRestPort={port}\n")
    handle = server.start_rest(cfg)
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/openapi/v3", timeout=10) as r:
            assert b"/slurm/v0.0.42/job/submit" in r.read()
        with pytest.raises(ConfigError, match=f"RestPort={port}: cannot serve"):
            server.start_rest(cfg)
    finally:
        handle.close()
    server.bind("127.0.0.1", port).close()  # free again once closed
