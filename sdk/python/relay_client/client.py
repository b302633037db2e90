"""RelayClient: the relay daemon's REST API (docs/api.md) over urllib, standard library only."""

from __future__ import annotations

import http.client
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from .errors import RelayConnectionError, RelayError, ServerError, error_for

DEFAULT_PORT = 7474
USER_AGENT = "relay-client-python/0.1.0"

JSON = Dict[str, Any]


def relay_home() -> str:
    """The daemon's home directory: $RELAY_HOME, else ~/.relay."""
    home = os.environ.get("RELAY_HOME")
    if home:
        return home
    return os.path.join(os.path.expanduser("~"), ".relay")


def _read_json_file(path: str) -> JSON:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def discover(home: Optional[str] = None) -> "tuple[str, Optional[str]]":
    """Find the daemon's base URL and API token the way the relay CLI does.

    URL: $RELAY_URL, else ``url`` in $RELAY_HOME/daemon.json (written by the
    running daemon, which may have moved to another port), else
    ``http://127.0.0.1:<config.json port or 7474>``.
    Token: $RELAY_TOKEN, else ``token`` in $RELAY_HOME/config.json.
    """
    home = home or relay_home()
    cfg = _read_json_file(os.path.join(home, "config.json"))
    url = os.environ.get("RELAY_URL") or ""
    if not url:
        url = str(_read_json_file(os.path.join(home, "daemon.json")).get("url") or "")
    if not url:
        port = cfg.get("port") or DEFAULT_PORT
        url = f"http://127.0.0.1:{int(port)}"
    token = os.environ.get("RELAY_TOKEN") or cfg.get("token") or None
    return url.rstrip("/"), token


class RelayClient:
    """Client for one relay daemon.

    >>> client = RelayClient()            # url and token from $RELAY_HOME
    >>> tid = client.thread_new("my-run")["thread_id"]

    Every method returns the decoded JSON of the response (dicts and lists)
    and raises a subclass of :class:`RelayError` on failure.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 30.0,
                 home: Optional[str] = None):
        found_url, found_token = discover(home)
        self.url = (url or found_url).rstrip("/")
        self.token = token if token is not None else found_token
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"RelayClient({self.url!r})"

    # -- plumbing -----------------------------------------------------------------

    def _headers(self, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        h = {"User-Agent": USER_AGENT, "Accept": "application/json"}
        if self.token:
            h["Authorization"] = f"Bearer {self.token}"
        if extra:
            h.update(extra)
        return h

    def _url(self, path: str, query: Optional[Dict[str, Any]] = None) -> str:
        u = self.url + path
        if query:
            q = {k: v for k, v in query.items() if v is not None and v != ""}
            if q:
                u += "?" + urllib.parse.urlencode(q)
        return u

    def _open(self, method: str, path: str, *, query=None, body: Optional[bytes] = None,
              headers: Optional[Dict[str, str]] = None, timeout: Optional[float] = None):
        req = urllib.request.Request(self._url(path, query), data=body, method=method,
                                     headers=self._headers(headers))
        try:
            return urllib.request.urlopen(req, timeout=timeout or self.timeout)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                decoded = json.loads(raw.decode("utf-8")) if raw else None
            except ValueError:
                decoded = None
            raise error_for(e.code, decoded, fallback=raw[:200].decode("utf-8", "replace")) from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
            reason = getattr(e, "reason", e)
            raise RelayConnectionError(
                f"cannot reach the relay daemon at {self.url} ({reason}); start it with `relay up` "
                "or set RELAY_URL") from None

    def _request(self, method: str, path: str, *, query=None, json_body: Any = None,
                 body: Optional[bytes] = None, headers: Optional[Dict[str, str]] = None) -> Any:
        extra = dict(headers or {})
        if json_body is not None:
            body = json.dumps(json_body).encode("utf-8")
            extra["Content-Type"] = "application/json"
        with self._open(method, path, query=query, body=body, headers=extra) as resp:
            raw = resp.read()
            ctype = resp.headers.get("Content-Type", "")
        if "json" in ctype:
            return json.loads(raw.decode("utf-8")) if raw else None
        return raw.decode("utf-8", "replace")

    @staticmethod
    def _q(value: str) -> str:
        return urllib.parse.quote(str(value), safe="")

    # -- daemon -------------------------------------------------------------------

    def health(self) -> JSON:
        return self._request("GET", "/health")

    def version(self) -> JSON:
        return self._request("GET", "/version")

    # -- threads ------------------------------------------------------------------

    def thread_new(self, name: Optional[str] = None) -> JSON:
        """Create a thread; returns it with ``thread_id`` and ``state_ref``."""
        return self._request("POST", "/threads", json_body={"name": name} if name else {})

    def threads(self, limit: int = 50) -> List[JSON]:
        """Threads, most recently updated first."""
        return self._request("GET", "/threads", query={"limit": limit})["threads"]

    def thread(self, thread_id: str) -> JSON:
        """One thread with its state header and event count."""
        return self._request("GET", f"/threads/{self._q(thread_id)}")

    # -- state --------------------------------------------------------------------

    def state(self, thread_id: str, version: Optional[int] = None) -> JSON:
        """The full state document, at the latest version or at ``version``."""
        return self._request("GET", f"/threads/{self._q(thread_id)}/state", query={"version": version})

    def state_header(self, thread_id: str) -> JSON:
        """The bounded (≤ 2 KB) header: what an agent should put in a prompt."""
        return self._request("GET", f"/threads/{self._q(thread_id)}/state/header")

    def state_header_since(self, thread_id: str, since: Any) -> JSON:
        """What changed in the header since version ``since`` (``7`` or ``"v7"``).

        Returns ``{"since": 7, "v": 9, ...}`` with each changed header member: its new value,
        ``None`` when gone, or ``{"drop": k, "add": [...]}`` for a list that lost k items at the
        front and gained some at the end (:func:`apply_header_delta` applies it); or, when that
        would not be smaller or the version is unknown, the full header. Tell them apart with
        ``"since" in result``.
        """
        v = str(since)
        if not v.lstrip("vV").isdigit():
            raise ValueError(f"since={since!r} is not a version like 7 or 'v7'")
        return self._request("GET", f"/threads/{self._q(thread_id)}/state/header",
                             query={"since": "v" + v.lstrip("vV")})

    def state_patch(self, thread_id: str, ops: Sequence[JSON], expected_version: Optional[int] = None,
                    author: Optional[str] = None) -> JSON:
        """Apply an RFC 6902 JSON Patch atomically; returns the new ``version``/``state_ref``.

        Pass ``expected_version`` (the version the patch was made against): if the
        state moved on, :class:`ConflictError` is raised and nothing is applied.
        """
        body: JSON = {"patch": list(ops)}
        if expected_version is not None:
            body["expected_version"] = int(expected_version)
        if author:
            body["author"] = author
        return self._request("POST", f"/threads/{self._q(thread_id)}/state/patch", json_body=body)

    def state_versions(self, thread_id: str, after: int = 0, limit: int = 100) -> JSON:
        """Version history (oldest first) with each version's patch and ``current_version``."""
        return self._request("GET", f"/threads/{self._q(thread_id)}/state/versions",
                             query={"after": after, "limit": limit})

    # -- artifacts ----------------------------------------------------------------

    def artifact_put(self, thread_id: str, name: str, content: Union[str, bytes], type: Optional[str] = None,
                     created_by: Optional[str] = None, capability: Optional[str] = None,
                     source_refs: Optional[Sequence[str]] = None) -> JSON:
        """Store content; returns its metadata with ``ref``, the one ref relay shows everywhere
        (6 hex characters; never the content).

        ``str`` content is sent as UTF-8 text, ``bytes`` as a raw body.
        ``type`` is detected by the daemon when omitted.
        """
        path = f"/threads/{self._q(thread_id)}/artifacts"
        if isinstance(content, str):
            body: JSON = {"name": name, "content": content}
            for k, v in (("type", type), ("created_by", created_by), ("capability", capability)):
                if v:
                    body[k] = v
            if source_refs:
                body["source_refs"] = list(source_refs)
            return self._request("POST", path, json_body=body)
        if not isinstance(content, (bytes, bytearray, memoryview)):
            raise TypeError("artifact_put: content must be str or bytes")
        query = {"name": name, "type": type, "created_by": created_by, "capability": capability,
                 "source_refs": ",".join(source_refs) if source_refs else None}
        return self._request("POST", path, query=query, body=bytes(content),
                             headers={"Content-Type": "application/octet-stream"})

    def artifacts(self, thread_id: str, type: Optional[str] = None, after: Optional[str] = None,
                  limit: int = 100) -> List[JSON]:
        """Artifact metadata, oldest first."""
        return self._request("GET", f"/threads/{self._q(thread_id)}/artifacts",
                             query={"type": type, "after": after, "limit": limit})["artifacts"]

    def _artifact_path(self, thread_id: Optional[str], ref: str) -> str:
        # A ref names one artifact in the whole store: without a thread, the store-wide route.
        if not thread_id:
            return f"/artifacts/{self._q(ref)}"
        return f"/threads/{self._q(thread_id)}/artifacts/{self._q(ref)}"

    def artifact(self, thread_id: Optional[str], ref: str) -> JSON:
        """One artifact's metadata and preview (not its content).

        ``ref`` is the ref relay shows (6 hex characters) or a full one; ``thread_id`` may be
        ``None``: a ref names one artifact of the whole store (``thread_id`` in the answer).
        """
        return self._request("GET", self._artifact_path(thread_id, ref))

    def artifact_get(self, thread_id: Optional[str], ref: str) -> bytes:
        """The artifact's exact bytes (``thread_id`` may be ``None``, as for ``artifact``)."""
        with self._open("GET", self._artifact_path(thread_id, ref),
                        query={"raw": 1}, headers={"Accept": "*/*"}) as resp:
            return resp.read()

    def artifact_save(self, thread_id: Optional[str], ref: str, path: str) -> int:
        """Stream the artifact's bytes to ``path`` (written atomically); returns the byte count."""
        tmp = f"{path}.part"
        n = 0
        with self._open("GET", self._artifact_path(thread_id, ref),
                        query={"raw": 1}, headers={"Accept": "*/*"}) as resp, open(tmp, "wb") as out:
            while True:
                chunk = resp.read(1 << 16)
                if not chunk:
                    break
                out.write(chunk)
                n += len(chunk)
        os.replace(tmp, path)
        return n

    # -- events -------------------------------------------------------------------

    def events(self, thread_id: str, after: int = 0, limit: int = 100) -> List[JSON]:
        """Stored events with id greater than ``after``, oldest first.

        Each has ``id`` (store-wide, the cursor for ``after``) and ``seq``, its position in
        the thread from 1 (what to number events by; absent from older daemons)."""
        return self._request("GET", f"/threads/{self._q(thread_id)}/events",
                             query={"after": after, "limit": limit})["events"]

    def tail(self, thread_id: str, after: int = 0, reconnect: bool = True, max_retries: Optional[int] = None,
             read_timeout: float = 45.0) -> Iterator[JSON]:
        """Follow the thread's events live (Server-Sent Events); a generator of event dicts.

        Replays stored events with id > ``after`` first. When the connection drops
        (daemon restart, network error, no ping within ``read_timeout``) it
        reconnects with ``Last-Event-ID`` so no event is lost or repeated.
        ``max_retries`` consecutive failed reconnects raise the last error
        (``None`` = retry forever). Stop by breaking out of the loop.
        """
        last_id = int(after)
        retry_ms = 1000
        failures = 0
        path = f"/threads/{self._q(thread_id)}/events/stream"
        while True:
            try:
                resp = self._open("GET", path, query={"after": last_id} if last_id else None,
                                  headers={"Accept": "text/event-stream", "Last-Event-ID": str(last_id)},
                                  timeout=read_timeout)
            except (RelayConnectionError, ServerError):
                failures += 1
                if not reconnect or (max_retries is not None and failures > max_retries):
                    raise
                time.sleep(min(retry_ms / 1000.0 * failures, 10.0))
                continue
            try:
                for frame in _sse_frames(resp):
                    failures = 0
                    if frame.get("retry"):
                        retry_ms = frame["retry"]
                    if "data" not in frame:
                        continue
                    try:
                        event = json.loads(frame["data"])
                    except ValueError:
                        continue
                    eid = frame.get("id")
                    if eid is None and isinstance(event, dict):
                        eid = event.get("id")
                    if eid is not None:
                        try:
                            if int(eid) <= last_id:
                                continue  # already delivered before a reconnect
                            last_id = int(eid)
                        except (TypeError, ValueError):
                            pass
                    yield event
            except (OSError, http.client.HTTPException, ValueError, RelayError):
                pass  # the stream broke: fall through and reconnect
            finally:
                resp.close()
            if not reconnect:
                return
            failures += 1
            if max_retries is not None and failures > max_retries:
                raise RelayConnectionError(f"lost the event stream of thread {thread_id} and could not "
                                           f"reconnect to {self.url}; is `relay up` running?")
            time.sleep(min(retry_ms / 1000.0, 10.0) if failures > 1 else 0.05)

    # -- capabilities, reports, stats ---------------------------------------------------

    def cap_list(self) -> List[JSON]:
        """Available capabilities with their argument schemas."""
        return self._request("GET", "/cap/list")["capabilities"]

    def cap_invoke(self, thread_id: str, capability: str, args: Optional[JSON] = None,
                   no_cache: bool = False) -> JSON:
        """Invoke a capability; returns a small ``preview`` plus the full result's ``artifact_ref``."""
        body: JSON = {"thread_id": thread_id, "capability": capability, "args": args or {}}
        if no_cache:
            body["no_cache"] = True
        return self._request("POST", "/cap/invoke", json_body=body)

    def a2a(self, envelope: JSON) -> JSON:
        """Send a typed A2A envelope (``com.relay.a2a.envelope.v1``)."""
        return self._request("POST", "/a2a", json_body=envelope)

    def report(self, thread_id: str, format: str = "json") -> Union[JSON, str]:
        """The thread's report: a dict for ``json``, Markdown text for ``md``."""
        return self._request("POST", f"/reports/{self._q(thread_id)}", json_body={"format": format})

    def stats(self, thread_id: str) -> JSON:
        """Token-savings figures: naive vs actual tokens, tokens avoided, cache hits."""
        return self._request("GET", f"/threads/{self._q(thread_id)}/stats")


def _sse_frames(resp) -> Iterator[Dict[str, Any]]:
    """Parse a text/event-stream body into frames ({id, event, data, retry})."""
    frame: Dict[str, Any] = {}
    data: List[str] = []
    while True:
        line = resp.readline()
        if not line:
            return  # server closed the stream
        text = line.decode("utf-8", "replace").rstrip("\r\n")
        if text == "":
            if data:
                frame["data"] = "\n".join(data)
            if frame:
                yield frame
            frame, data = {}, []
            continue
        if text.startswith(":"):
            continue  # comment / keep-alive ping
        field, _, value = text.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "data":
            data.append(value)
        elif field == "id":
            frame["id"] = value
        elif field == "event":
            frame["event"] = value
        elif field == "retry" and value.isdigit():
            frame["retry"] = int(value)


def apply_header_delta(header: JSON, delta: JSON) -> JSON:
    """Apply a delta from :meth:`RelayClient.state_header_since` to the header held at
    ``delta["since"]``; returns the header at ``delta["v"]``."""
    out = dict(header)
    for k, v in delta.items():
        if k == "since":
            continue
        cur = out.get(k)
        if v is None:
            out.pop(k, None)
        elif isinstance(cur, list) and isinstance(v, dict) and v and set(v) <= {"drop", "add"}:
            out[k] = cur[int(v.get("drop", 0)):] + list(v.get("add", []))
        else:
            out[k] = v
    return out
