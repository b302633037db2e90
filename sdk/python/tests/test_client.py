"""relay_client against a real relay daemon (built from this repository by the test).

Run: python3 -m unittest discover -s sdk/python/tests -v
"""

from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from relay_client import (  # noqa: E402
    AuthError,
    BadRequestError,
    ConflictError,
    NotFoundError,
    PayloadTooLargeError,
    RelayClient,
    RelayConnectionError,
    apply_header_delta,
    discover,
)
from daemon import Daemon, cleanup_binary, free_port  # noqa: E402

D: Daemon = None  # type: ignore[assignment]


def setUpModule():
    global D
    D = Daemon().start()


def tearDownModule():
    if D:
        D.close()
    cleanup_binary()


def client() -> RelayClient:
    return RelayClient(D.url, token=D.token, timeout=10)


class DiscoveryTest(unittest.TestCase):
    def test_finds_url_and_token_from_relay_home(self):
        old = {k: os.environ.get(k) for k in ("RELAY_HOME", "RELAY_URL", "RELAY_TOKEN")}
        try:
            os.environ["RELAY_HOME"] = D.home
            os.environ.pop("RELAY_URL", None)
            os.environ.pop("RELAY_TOKEN", None)
            url, token = discover()
            self.assertEqual(url, D.url)
            self.assertEqual(token, D.token)
            c = RelayClient()
            self.assertEqual(c.url, D.url)
            tid = c.thread_new("discovered")["thread_id"]
            self.assertEqual(c.thread(tid)["name"], "discovered")
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_env_overrides_home(self):
        old = {k: os.environ.get(k) for k in ("RELAY_HOME", "RELAY_URL", "RELAY_TOKEN")}
        try:
            os.environ["RELAY_HOME"] = D.home
            os.environ["RELAY_URL"] = "http://127.0.0.1:1/"
            os.environ["RELAY_TOKEN"] = "from-env"
            self.assertEqual(discover(), ("http://127.0.0.1:1", "from-env"))
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def test_unreachable_daemon_is_a_connection_error(self):
        c = RelayClient(f"http://127.0.0.1:{free_port()}", token="x", timeout=2)
        with self.assertRaises(RelayConnectionError) as cm:
            c.threads()
        self.assertIn("relay up", str(cm.exception))


class ApiTest(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_health_needs_no_token(self):
        self.assertEqual(RelayClient(D.url, token="").health()["status"], "ok")

    def test_missing_or_wrong_token_is_auth_error(self):
        for tok in ("", "wrong-token"):
            with self.assertRaises(AuthError) as cm:
                RelayClient(D.url, token=tok).threads()
            self.assertEqual(cm.exception.status, 401)

    def test_thread_lifecycle(self):
        t = self.c.thread_new("lifecycle-run")
        tid = t["thread_id"]
        self.assertEqual(t["name"], "lifecycle-run")
        self.assertEqual(t["version"], 1)
        self.assertEqual(t["state_ref"], "v1")
        self.assertIn(tid, [x["thread_id"] for x in self.c.threads(limit=1000)])
        detail = self.c.thread(tid)
        self.assertEqual(detail["thread_id"], tid)
        self.assertEqual(detail["header"]["v"], 1)

    def test_unknown_thread_is_not_found(self):
        with self.assertRaises(NotFoundError) as cm:
            self.c.state_header("00000000-0000-4000-8000-000000000000")
        self.assertEqual(cm.exception.code, "not_found")

    def test_state_header_since(self):
        tid = self.c.thread_new("since")["thread_id"]
        h1 = self.c.state_header(tid)
        r = self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "f1", "key": "k", "value": 1}}])
        d = self.c.state_header_since(tid, "v1")
        self.assertEqual((d["since"], d["v"]), (1, r["version"]))
        self.assertEqual(d["facts"], [{"id": "f1", "key": "k", "value": 1}])  # a new member comes whole
        # m (live counters) is not part of a delta: compare the rest
        strip = lambda h: {k: v for k, v in h.items() if k != "m"}  # noqa: E731
        self.assertEqual(strip(apply_header_delta(h1, d)), strip(self.c.state_header(tid)))
        self.assertEqual(self.c.state_header_since(tid, r["version"]), {"since": r["version"], "v": r["version"]})
        full = self.c.state_header_since(tid, 99)
        self.assertNotIn("since", full)
        self.assertEqual(full, self.c.state_header(tid))
        with self.assertRaises(ValueError):
            self.c.state_header_since(tid, "seven")

    def test_state_patch_header_and_versions(self):
        tid = self.c.thread_new("state")["thread_id"]
        r = self.c.state_patch(tid, [
            {"op": "add", "path": "/facts/-", "value": {"id": "f1", "key": "phase", "value": "plan"}},
            {"op": "add", "path": "/plan/-", "value": {"id": "p1", "step": "write tests", "status": "pending"}},
        ], expected_version=1, author="py-test")
        self.assertEqual((r["version"], r["state_ref"]), (2, "v2"))
        r = self.c.state_patch(tid, [{"op": "replace", "path": "/facts/0/value", "value": "done"}])
        self.assertEqual(r["version"], 3)

        header = self.c.state_header(tid)
        self.assertEqual(header["v"], 3)
        self.assertEqual(header["facts"][0]["value"], "done")
        self.assertEqual(header["next"][0]["step"], "write tests")
        self.assertLessEqual(len(json.dumps(header).encode()), 2048 + 64)

        self.assertEqual(self.c.state(tid, version=2)["facts"][0]["value"], "plan")
        self.assertEqual(self.c.state(tid)["facts"][0]["value"], "done")
        hist = self.c.state_versions(tid)
        self.assertEqual(hist["current_version"], 3)
        self.assertEqual([v["version"] for v in hist["versions"]], [1, 2, 3])
        self.assertEqual(hist["versions"][1]["author"], "py-test")

    def test_stale_version_is_conflict_and_applies_nothing(self):
        tid = self.c.thread_new("conflict")["thread_id"]
        self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "a", "key": "k", "value": 1}}],
                           expected_version=1)
        with self.assertRaises(ConflictError) as cm:
            self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "b", "key": "k", "value": 2}}],
                               expected_version=1)
        err = cm.exception
        self.assertEqual(err.status, 409)
        self.assertEqual(err.code, "version_conflict")
        self.assertEqual(err.current_version, 2)
        self.assertEqual(err.state_ref, "v2")
        self.assertEqual([f["id"] for f in self.c.state(tid)["facts"]], ["a"])

    def test_failed_test_op_is_conflict(self):
        tid = self.c.thread_new()["thread_id"]
        with self.assertRaises(ConflictError) as cm:
            self.c.state_patch(tid, [{"op": "test", "path": "/facts", "value": ["nope"]}])
        self.assertEqual(cm.exception.code, "test_failed")

    def test_invalid_patch_is_bad_request_naming_the_op(self):
        tid = self.c.thread_new()["thread_id"]
        with self.assertRaises(BadRequestError) as cm:
            self.c.state_patch(tid, [
                {"op": "add", "path": "/facts/-", "value": {"id": "x", "key": "k", "value": 1}},
                {"op": "remove", "path": "/facts/7"},
            ])
        self.assertEqual(cm.exception.code, "invalid_patch")
        self.assertEqual(cm.exception.details.get("op"), 1)
        self.assertEqual(self.c.state(tid)["version"], 1)

    def test_oversized_body_is_payload_too_large(self):
        tid = self.c.thread_new()["thread_id"]
        big = "x" * (1024 * 1024 + 10)
        with self.assertRaises(PayloadTooLargeError) as cm:
            self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "big", "key": "k", "value": big}}])
        self.assertEqual(cm.exception.status, 413)

    def test_artifact_put_get_text_and_bytes(self):
        tid = self.c.thread_new("artifacts")["thread_id"]
        text = "# Analysis\n\nhello, relay\n" + "line\n" * 1000
        art = self.c.artifact_put(tid, "analysis.md", text, "markdown", created_by="py-test")
        ref = art["ref"]
        self.assertRegex(ref, r"^[0-9a-f]{6}$")  # the one ref relay shows, everywhere
        self.assertEqual(art["type"], "markdown")
        self.assertEqual(art["size"], len(text.encode()))
        self.assertTrue(art["preview"]["truncated"])
        self.assertLessEqual(len(art["preview"]["text"].encode()), 2048 + 4)
        self.assertEqual(self.c.artifact_get(tid, ref), text.encode())
        self.assertEqual(self.c.artifact(tid, ref)["provenance"]["created_by"], "py-test")

        blob = bytes(range(256)) * 10
        b = self.c.artifact_put(tid, "blob.bin", blob, "binary")
        self.assertEqual(b["type"], "binary")
        self.assertEqual(self.c.artifact_get(tid, b["ref"]), blob)

        again = self.c.artifact_put(tid, "copy.md", text, "markdown")
        self.assertTrue(again["deduplicated"])
        self.assertEqual(again["ref"], ref)
        self.assertEqual([a["ref"] for a in self.c.artifacts(tid)], [ref, b["ref"]])
        self.assertEqual([a["ref"] for a in self.c.artifacts(tid, type="binary")], [b["ref"]])

        with self.assertRaises(NotFoundError):
            self.c.artifact_get(tid, "0" * 26)

        # The ref names the artifact in the whole store: no thread needed, and the same ref
        # is what the header lists and what the events carry.
        found = self.c.artifact(None, ref)
        self.assertEqual((found["ref"], found["thread_id"]), (ref, tid))
        self.assertEqual(self.c.artifact_get(None, b["ref"]), blob)
        self.assertIn(ref + " analysis.md", self.c.state_header(tid)["refs"])
        stored = [e["data"]["ref"] for e in self.c.events(tid) if e["type"] == "artifact.stored"]
        self.assertEqual(stored, [ref, b["ref"]])
        with self.assertRaises(NotFoundError):
            self.c.artifact(None, "000000")

        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "blob.bin")
            self.assertEqual(self.c.artifact_save(tid, b["ref"], path), len(blob))
            with open(path, "rb") as f:
                self.assertEqual(f.read(), blob)
            with self.assertRaises(NotFoundError):
                self.c.artifact_save(tid, "0" * 26, os.path.join(tmp, "missing.bin"))
            self.assertEqual(sorted(os.listdir(tmp)), ["blob.bin"])

    def test_events_list(self):
        tid = self.c.thread_new("events")["thread_id"]
        self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "f", "key": "k", "value": 1}}])
        types = [e["type"] for e in self.c.events(tid)]
        self.assertEqual(types[0], "thread.created")
        self.assertIn("state.patched", types)


class CapabilityTest(unittest.TestCase):
    """Capabilities, reports and stats come from another layer; skipped until the daemon serves them."""

    def setUp(self):
        self.c = client()
        try:
            self.caps = {c["name"] for c in self.c.cap_list()}
        except NotFoundError:
            self.skipTest("daemon has no /cap/list yet")

    def test_search_invoke_report_and_stats(self):
        if "retrieval.search" not in self.caps:
            self.skipTest("retrieval.search not registered")
        tid = self.c.thread_new("caps")["thread_id"]
        self.c.artifact_put(tid, "notes.md", "# Notes\nthe quick brown fox\n", "markdown")
        r = self.c.cap_invoke(tid, "retrieval.search", {"query": "fox"})
        self.assertTrue(r["artifact_ref"])
        self.assertIn("preview", r)
        again = self.c.cap_invoke(tid, "retrieval.search", {"query": "fox"})
        self.assertTrue(again["cached"])
        report = self.c.report(tid)
        self.assertIn("avoided_tokens", report["token_savings"])
        stats = self.c.stats(tid)
        self.assertEqual(stats["artifacts"], len(self.c.artifacts(tid)))
        self.assertGreaterEqual(stats["cache_hits"], 1)

    def test_a2a_envelope_and_idempotency(self):
        if "retrieval.search" not in self.caps:
            self.skipTest("retrieval.search not registered")
        tid = self.c.thread_new("a2a")["thread_id"]
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        env = {"msg_id": "m1", "thread_id": tid, "from": "agent-a", "to_capability": "retrieval.search",
               "type": "request", "schema": "com.relay.a2a.envelope.v1", "payload": {"query": "fox"},
               "idempotency_key": "k1", "timestamp": now, "ttl": 60}
        first = self.c.a2a(env)
        self.assertFalse(first["replayed"])
        self.assertEqual(first["response"]["in_reply_to"], "m1")
        self.assertTrue(first["response"]["payload"]["artifact_ref"])
        again = self.c.a2a(dict(env, msg_id="m2"))
        self.assertTrue(again["replayed"])
        self.assertEqual(again["response"], first["response"])
        with self.assertRaises(BadRequestError) as cm:
            self.c.a2a(dict(env, idempotency_key="k2", timestamp="2020-01-01T00:00:00Z"))
        self.assertIn("ttl_expired", str(cm.exception))


def _collect(c: RelayClient, tid: str, out: "queue.Queue", stop: threading.Event, **kw):
    try:
        for ev in c.tail(tid, **kw):
            out.put(ev)
            if stop.is_set():
                return
    except Exception as e:  # surfaced to the test through the queue
        out.put(e)


def _take(q: "queue.Queue", n: int, timeout: float = 15.0) -> list:
    got, deadline = [], time.time() + timeout
    while len(got) < n:
        left = deadline - time.time()
        if left <= 0:
            break
        try:
            item = q.get(timeout=left)
        except queue.Empty:
            break
        if isinstance(item, Exception):
            raise item
        got.append(item)
    return got


class TailTest(unittest.TestCase):
    def setUp(self):
        self.c = client()

    def test_tail_replays_then_follows_live(self):
        tid = self.c.thread_new("tail")["thread_id"]
        q, stop = queue.Queue(), threading.Event()
        t = threading.Thread(target=_collect, args=(self.c, tid, q, stop), daemon=True)
        t.start()
        first = _take(q, 1)
        self.assertEqual(first[0]["type"], "thread.created")
        self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "live", "key": "k", "value": 1}}])
        live = _take(q, 1)
        self.assertEqual(live[0]["type"], "state.patched")
        self.assertEqual(live[0]["data"]["version"], 2)
        self.assertGreater(live[0]["id"], first[0]["id"])
        stop.set()
        self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "wake", "key": "k", "value": 0}}])
        t.join(10)

    def test_tail_after_skips_older_events(self):
        tid = self.c.thread_new("tail-after")["thread_id"]
        self.c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "1", "key": "k", "value": 1}}])
        evs = self.c.events(tid)
        gen = self.c.tail(tid, after=evs[0]["id"])
        try:
            ev = next(gen)
        finally:
            gen.close()
        self.assertEqual(ev["id"], evs[1]["id"])


class TailResumeTest(unittest.TestCase):
    """Its own daemon, because the test stops and restarts it under a live tail."""

    def test_tail_resumes_after_daemon_restart_without_gaps_or_duplicates(self):
        d = Daemon(token="resume-token").start()
        try:
            c = RelayClient(d.url, token=d.token, timeout=10)
            tid = c.thread_new("resume")["thread_id"]
            q, stop = queue.Queue(), threading.Event()
            t = threading.Thread(target=_collect, args=(c, tid, q, stop), kwargs={"read_timeout": 5},
                                 daemon=True)
            t.start()
            for i in range(3):
                c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": f"before{i}", "key": "k", "value": i}}])
            before = _take(q, 4)
            self.assertEqual(len(before), 4)

            d.stop()  # the stream breaks here; tail keeps retrying
            time.sleep(0.5)
            d.start()
            for i in range(3):
                c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": f"after{i}", "key": "k", "value": i}}])
            after = _take(q, 3, timeout=30)
            stop.set()

            got = before + after
            ids = [e["id"] for e in got]
            self.assertEqual(ids, sorted(set(ids)), "events repeated or out of order")
            self.assertEqual(ids, [e["id"] for e in c.events(tid)])
            self.assertEqual([e["data"]["version"] for e in after], [5, 6, 7])
            c.state_patch(tid, [{"op": "add", "path": "/facts/-", "value": {"id": "wake", "key": "k", "value": 0}}])
            t.join(10)
        finally:
            d.close()


class ReadmeTest(unittest.TestCase):
    def test_readme_opens_with_a_runnable_example(self):
        sdk = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
        with open(os.path.join(sdk, "README.md"), encoding="utf-8") as f:
            readme = f.read()
        m = re.search(r"```python\n(.*?)```", readme, re.S)
        self.assertIsNotNone(m, "README has no python example")
        self.assertLess(m.start(), readme.index("\n## "), "the example is not at the top")
        env = D.env()
        env["PYTHONPATH"] = sdk
        r = subprocess.run([sys.executable, "-c", m.group(1)], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^2 \[\{'id': 'f1', 'key': 'phase', 'value': 'done'")
        self.assertRegex(r.stdout, r"\n\d+ state\.patched\n$")


if __name__ == "__main__":
    unittest.main()
