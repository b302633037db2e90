"""relay_client: Python client for the relay memory daemon (standard library only).

    from relay_client import RelayClient
    client = RelayClient()                     # url and token from $RELAY_HOME
    tid = client.thread_new("my-run")["thread_id"]
"""

from .client import RelayClient, apply_header_delta, discover, relay_home
from .errors import (
    AuthError,
    BadRequestError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PayloadTooLargeError,
    RelayConnectionError,
    RelayError,
    ServerError,
)

__version__ = "0.1.0"

__all__ = [
    "RelayClient",
    "apply_header_delta",
    "discover",
    "relay_home",
    "RelayError",
    "RelayConnectionError",
    "BadRequestError",
    "AuthError",
    "ForbiddenError",
    "NotFoundError",
    "ConflictError",
    "PayloadTooLargeError",
    "ServerError",
]
