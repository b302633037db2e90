"""The SSE frame parser alone (no daemon): fields, comments, CRLF, multi-line data, random input."""

from __future__ import annotations

import io
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from relay_client.client import _sse_frames  # noqa: E402


def frames(text: str):
    return list(_sse_frames(io.BytesIO(text.encode("utf-8"))))


class SSEFramesTest(unittest.TestCase):
    def test_fields_comments_and_multiline_data(self):
        got = frames("retry: 2000\r\n\r\n: ping\n\nid: 5\nevent: state.patched\ndata: {\"a\":\ndata: 1}\n\nid:6\ndata:x\n\n")
        self.assertEqual(got, [
            {"retry": 2000},
            {"id": "5", "event": "state.patched", "data": '{"a":\n1}'},
            {"id": "6", "data": "x"},
        ])

    def test_incomplete_last_frame_is_dropped(self):
        self.assertEqual(frames("data: a\n\ndata: half"), [{"data": "a"}])

    def test_random_input_never_raises_and_yields_dicts(self):
        rnd = random.Random(42)
        alphabet = ["data:", "id:", "event:", "retry:", ":", " ", "\n", "\r\n", "x", "é", "12", "{", "}"]
        for _ in range(3000):
            text = "".join(rnd.choice(alphabet) for _ in range(rnd.randint(0, 40)))
            for f in frames(text):
                self.assertIsInstance(f, dict)
                self.assertTrue(set(f) <= {"id", "event", "data", "retry"}, f)
                if "retry" in f:
                    self.assertIsInstance(f["retry"], int)


if __name__ == "__main__":
    unittest.main()
