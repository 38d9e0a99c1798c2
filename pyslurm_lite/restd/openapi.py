"""slurmrestd's published OpenAPI document (openapi/slurm-v0.0.42.json, see its README) and
the part of it this server implements: GET /openapi/v3 answers with the published operations
we serve and every component schema they reference, unchanged, so a generated client sees
slurmrestd's own types. Tests validate our answers against the same component schemas.
"""

from __future__ import annotations

import copy
import functools
import json
import os

PUBLISHED = os.path.join(os.path.dirname(__file__), "openapi", "slurm-v0.0.42.json")
SCHEMA_PREFIX = "#/components/schemas/"

# (method, published path) of every operation app.py serves
SERVED = (
    ("get", "/slurm/v0.0.42/ping/"), ("get", "/slurm/v0.0.42/diag/"),
    ("get", "/slurm/v0.0.42/jobs/"), ("get", "/slurm/v0.0.42/job/{job_id}"),
    ("post", "/slurm/v0.0.42/job/{job_id}"), ("delete", "/slurm/v0.0.42/job/{job_id}"),
    ("post", "/slurm/v0.0.42/job/submit"),
    ("get", "/slurm/v0.0.42/nodes/"), ("get", "/slurm/v0.0.42/node/{node_name}"),
    ("get", "/slurm/v0.0.42/partitions/"),
    ("get", "/slurm/v0.0.42/partition/{partition_name}"),
    ("get", "/slurm/v0.0.42/reservations/"),
    ("get", "/slurm/v0.0.42/reservation/{reservation_name}"),
)


@functools.lru_cache(maxsize=1)
def published() -> dict:
    with open(PUBLISHED, encoding="utf-8") as f:
        return json.load(f)


@functools.lru_cache(maxsize=1)
def served_document() -> bytes:
    """The document GET /openapi/v3 returns (built once; the published file never changes)."""
    doc = published()
    paths: dict = {}
    for method, path in SERVED:
        paths.setdefault(path, {})[method] = doc["paths"][path][method]
    schemas = doc["components"]["schemas"]
    used = _referenced(paths, schemas)
    out = {"openapi": doc.get("openapi", "3.0.3"),
           "info": {**doc["info"], "title": "pyslurm-lite: Slurm REST API (slurmrestd v0.0.42)",
                    "x-published-version": doc["info"].get("version", "")},
           "tags": [t for t in doc.get("tags", []) if t.get("name") in ("slurm", "openapi")],
           "paths": paths, "components": {**{k: v for k, v in doc["components"].items()
                                              if k != "schemas"},
                                          "schemas": {n: schemas[n] for n in sorted(used)}}}
    out["info"].setdefault("version", "v0.0.42")
    return json.dumps(out).encode()


def _referenced(node, schemas: dict) -> set[str]:
    """Names of every component schema reachable from node through $ref."""
    seen: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            ref = item.get("$ref")
            if isinstance(ref, str) and ref.startswith(SCHEMA_PREFIX):
                name = ref[len(SCHEMA_PREFIX):]
                if name not in seen:
                    seen.add(name)
                    stack.append(schemas[name])
            stack.extend(v for k, v in item.items() if k != "$ref")
        elif isinstance(item, list):
            stack.extend(item)
    return seen


def validator(schema_name: str, strict: bool = True):
    """A jsonschema validator of one published component (e.g. "v0.0.42_openapi_job_info_resp").
    strict: an object may hold only the properties its schema names (the published document
    allows any others, which would let a misspelt field of ours pass).

    The published document's "required" lists of v0.0.42_kill_jobs_resp_job name paths
    ("error/string") that are not properties, which no real answer could satisfy: entries with
    a "/" are dropped. OpenAPI 3.0 is close enough to draft 4 for these schemas (no nullable,
    no discriminators in what we validate)."""
    import jsonschema
    schemas = copy.deepcopy(published()["components"]["schemas"])
    for schema in schemas.values():
        if isinstance(schema.get("required"), list):
            schema["required"] = [r for r in schema["required"] if "/" not in r]
    if strict:
        _close(schemas)
    root = {"$ref": SCHEMA_PREFIX + schema_name, "components": {"schemas": schemas}}
    return jsonschema.Draft4Validator(root)


def _close(node) -> None:
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)
