// The SSE parser alone (no daemon needed).
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { sseFrames } from "../dist/index.js";

function stream(chunks) {
  return new ReadableStream({
    start(ctrl) {
      for (const ch of chunks) ctrl.enqueue(new TextEncoder().encode(ch));
      ctrl.close();
    },
  });
}

async function frames(chunks) {
  const out = [];
  for await (const f of sseFrames(stream(chunks))) out.push(f);
  return out;
}

describe("sseFrames", () => {
  it("parses ids, events, multi-line data, comments and CRLF split across chunks", async () => {
    const chunks = ["retry: 2000\r\n\r\n: ping\n\nid: 5\nevent: state.pat", "ched\ndata: {\"a\":\ndata: 1}\n\n", "id: 6\r", "\ndata: x\n\n"];
    const body = new ReadableStream({
      start(ctrl) {
        for (const ch of chunks) ctrl.enqueue(new TextEncoder().encode(ch));
        ctrl.close();
      },
    });
    const frames = [];
    for await (const f of sseFrames(body)) frames.push(f);
    assert.deepEqual(frames, [{ retry: 2000 }, { id: "5", event: "state.patched", data: '{"a":\n1}' }, { id: "6", data: "x" }]);
  });
});

describe("sseFrames edge cases", () => {
  it("ignores a final frame without its blank line and unknown fields", async () => {
    assert.deepEqual(await frames(["foo: bar\ndata: a\n\ndata: incomplete"]), [{ data: "a" }]);
  });

  it("splits a multi-byte UTF-8 character across chunks correctly", async () => {
    const bytes = new TextEncoder().encode("data: é✓\n\n");
    const body = new ReadableStream({
      start(ctrl) {
        for (let i = 0; i < bytes.length; i++) ctrl.enqueue(bytes.slice(i, i + 1));
        ctrl.close();
      },
    });
    const out = [];
    for await (const f of sseFrames(body)) out.push(f);
    assert.deepEqual(out, [{ data: "é✓" }]);
  });
});

describe("sseFrames under random chunking (fuzz)", () => {
  it("yields the same frames however the bytes are split", async () => {
    const text =
      "retry: 2000\n\n: ping\n\n" +
      Array.from({ length: 30 }, (_, i) => `id: ${i + 1}\r\nevent: state.patched\ndata: {"id":${i + 1},"note":"é✓ ${"x".repeat(i)}"}\n\n`).join("") +
      ": ping\r\n\r\n";
    const bytes = new TextEncoder().encode(text);
    const whole = [];
    for await (const f of sseFrames(new ReadableStream({ start: (c) => (c.enqueue(bytes), c.close()) }))) whole.push(f);
    assert.equal(whole.length, 31);
    let seed = 7;
    const rnd = () => ((seed = (Math.imul(seed, 48271) + 11) >>> 0) % 1000) / 1000;
    for (let round = 0; round < 200; round++) {
      const cuts = [];
      for (let i = 1; i < bytes.length; i++) if (rnd() < 0.05) cuts.push(i);
      const body = new ReadableStream({
        start(ctrl) {
          let prev = 0;
          for (const cut of [...cuts, bytes.length]) {
            ctrl.enqueue(bytes.slice(prev, cut));
            prev = cut;
          }
          ctrl.close();
        },
      });
      const got = [];
      for await (const f of sseFrames(body)) got.push(f);
      assert.deepEqual(got, whole, `round ${round}, cuts ${cuts.join(",")}`);
    }
  });
});
