"""Optional TLS on every gRPC link (TLSParameters=ca_cert_file=,cert_file=,cert_key_file=).

TLS adds what tokens cannot: nobody on the network reads what travels (scripts, environments,
output) or captures a launch credential or a token before it is used. Authentication never
depends on it: tokens and credentials are checked the same with or without TLS, as in Slurm.

Daemons serve with cert_file/cert_key_file; every client (commands, srun, the controller
calling agents, agents calling the controller) checks the server against ca_cert_file and the
address it dialled. `pyslurm-lite cluster up --tls` makes a CA and one certificate for its
loopback daemons with openssl (`make_local_certs`).
"""

from __future__ import annotations

import os
import subprocess


def enabled(cfg) -> bool:
    return bool(getattr(cfg, "tls_ca", ""))


def _read(path: str, what: str) -> bytes:
    from ..errors import ConfigError
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise ConfigError(f"TLSParameters: cannot read the {what} {path}: {e.strerror}") from None


def server_credentials(cfg):
    import grpc
    from ..errors import ConfigError
    if not (cfg.tls_cert and cfg.tls_key):
        raise ConfigError("TLSParameters: a daemon needs cert_file= and cert_key_file= besides ca_cert_file=")
    return grpc.ssl_server_credentials([(_read(cfg.tls_key, "key"), _read(cfg.tls_cert, "certificate"))])


def channel_credentials(cfg):
    import grpc
    return grpc.ssl_channel_credentials(root_certificates=_read(cfg.tls_ca, "CA certificate"))


def ssl_context(cfg):
    """For the light HTTP/2 client: verify against the CA, speak h2 (ALPN)."""
    import ssl
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=cfg.tls_ca)
    ctx.set_alpn_protocols(["h2"])
    return ctx


def make_local_certs(directory: str, names: list[str], addrs: list[str]) -> tuple[str, str, str]:
    """A CA and one daemon certificate (for names and addresses) in directory/tls, with
    openssl; returns (ca, cert, key). The CA's key stays there, 0600."""
    tls = os.path.join(directory, "tls")
    os.makedirs(tls, mode=0o755, exist_ok=True)
    ca_key, ca, key, csr, cert = (os.path.join(tls, n) for n in
                                  ("ca.key", "ca.crt", "daemon.key", "daemon.csr", "daemon.crt"))
    san = ",".join([f"DNS:{n}" for n in names] + [f"IP:{a}" for a in addrs])
    old = os.umask(0o077)
    try:
        _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca,
                 "-days", "3650", "-subj", "/CN=pyslurm-lite local CA")
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr,
                 "-subj", "/CN=pyslurm-lite daemon", "-addext", f"subjectAltName={san}")
        _openssl("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                 "-out", cert, "-days", "3650", "-copy_extensions", "copy")
    finally:
        os.umask(old)
    os.chmod(ca, 0o644)
    os.chmod(cert, 0o644)
    return ca, cert, key


def _openssl(*args: str) -> None:
    from ..errors import SlurmError
    try:
        r = subprocess.run(["openssl", *args], capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        raise SlurmError("--tls needs the openssl command (apt-get install openssl)") from None
    if r.returncode != 0:
        raise SlurmError(f"openssl {args[0]} failed: {r.stderr.strip()[-400:]}")
