"""Typed errors raised by RelayClient; one class per HTTP status the API documents."""

from __future__ import annotations

from typing import Any, Dict, Optional


class RelayError(Exception):
    """Any failure talking to the relay daemon.

    ``status`` is the HTTP status (0 when the daemon could not be reached),
    ``code`` the API's machine code (e.g. ``version_conflict``), ``details``
    the whole ``error`` object of the response body.
    """

    def __init__(self, message: str, status: int = 0, code: str = "", details: Optional[Dict[str, Any]] = None):
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.details = details or {}

    def __str__(self) -> str:
        if self.status:
            return f"{self.message} (HTTP {self.status} {self.code})".rstrip()
        return self.message


class RelayConnectionError(RelayError):
    """The daemon is not running or not reachable at the URL."""


class BadRequestError(RelayError):
    """400: malformed JSON, an invalid patch or state, bad arguments."""


class AuthError(RelayError):
    """401: the API token is missing or wrong."""


class ForbiddenError(RelayError):
    """403: a cross-site request was refused."""


class NotFoundError(RelayError):
    """404: unknown thread, version, artifact ref or route."""


class ConflictError(RelayError):
    """409: the state moved on (``version_conflict``) or a ``test`` op failed (``test_failed``).

    For a version conflict ``current_version`` holds the version the state is at now,
    so the caller can re-read and retry.
    """

    @property
    def current_version(self) -> Optional[int]:
        v = self.details.get("current_version")
        return int(v) if isinstance(v, (int, float)) else None

    @property
    def state_ref(self) -> Optional[str]:
        return self.details.get("state_ref")


class PayloadTooLargeError(RelayError):
    """413: the request body (or the resulting state) is over the route's cap."""

    @property
    def limit(self) -> Optional[int]:
        v = self.details.get("limit")
        return int(v) if isinstance(v, (int, float)) else None


class ServerError(RelayError):
    """5xx: a daemon bug, a storage failure, or the daemon shutting down."""


_BY_STATUS = {
    400: BadRequestError,
    401: AuthError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
}


def error_for(status: int, body: Any, fallback: str = "") -> RelayError:
    """Build the typed error for an HTTP status and its decoded JSON body."""
    details: Dict[str, Any] = {}
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        details = body["error"]
    code = str(details.get("code") or "")
    message = str(details.get("message") or fallback or f"HTTP {status}")
    if status == 401 and not details.get("message"):
        message = "the relay daemon needs an API token: pass token= or set RELAY_TOKEN"
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else RelayError
    return cls(message, status=status, code=code, details=details)
