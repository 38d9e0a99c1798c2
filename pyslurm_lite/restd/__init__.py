"""The HTTP server: slurmrestd's REST API (data parser v0.0.42) and the web dashboard, on
RestPort, served by the active controller or by `pyslurm-lite restd`.

    server.py     uvicorn: start_rest(cfg) in the controller, serve(cfg) standalone
    app.py        the Starlette app: slurmrestd's routes, /openapi/v3, the dashboard at "/"
    auth.py       X-SLURM-USER-TOKEN / X-SLURM-USER-NAME (the controller verifies the token)
    envelope.py   meta / errors / warnings, error numbers and HTTP statuses
    openapi.py    the published OpenAPI document (openapi/) and what of it we serve
    v0042/        our model <-> v0.0.42's JSON shapes
    dashboard.py, dash*.py, static/, templates/   the dashboard

Nothing here decides who may do what: every call goes to the controller with the caller's
token. Starlette and uvicorn are imported only when a server is built.
"""
