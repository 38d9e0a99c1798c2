"""The transport and the security boundary, in one place: what travels between commands and
daemons, and how each side proves who it is.

  common     gRPC status codes and the domain error each carries (no grpc import)
  h2client   the light unary gRPC client over HTTP/2 the short-lived CLIs use (no grpcio)
  hpack_lite HPACK for h2client
  pbwire     protobuf wire encoding for sbatch's submit path (no google.protobuf)
  wire       dataclass <-> generated message conversion
  grpcutil   grpcio channels and servers, domain errors <-> status codes
  keys       the cluster key file and the keys derived from it
  tokens     user tokens (SACK) and daemon tokens: made, and checked
  authsock   the Unix socket where a local process gets a user token (SO_PEERCRED)
  credential launch credentials the controller signs for agents
  authn      the servers' side: every call authenticated before a servicer runs

Importing this package imports nothing: a CLI pays only for the modules it uses.
"""
