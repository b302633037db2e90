// Unit tests of the UI's pure modules (diff, markdown) under node --test; no browser needed.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { applyEdits, counts, diffLines, hunks } from "../../internal/memory/server/ui/static/diff.js";

function lcsLen(a, b) {
  const dp = Array.from({ length: a.length + 1 }, () => new Array(b.length + 1).fill(0));
  for (let i = 1; i <= a.length; i++)
    for (let j = 1; j <= b.length; j++) dp[i][j] = a[i - 1] === b[j - 1] ? dp[i - 1][j - 1] + 1 : Math.max(dp[i - 1][j], dp[i][j - 1]);
  return dp[a.length][b.length];
}

// Deterministic PRNG so a failure is reproducible from the printed seed.
function rng(seed) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

describe("diffLines", () => {
  it("handles empty and identical inputs", () => {
    assert.deepEqual(diffLines("", ""), []);
    assert.deepEqual(counts(diffLines("a\nb\n", "a\nb\n")), { added: 0, removed: 0 });
    assert.deepEqual(diffLines("", "x\n").map((e) => e.op + e.text), ["+x"]);
    assert.deepEqual(diffLines("x\n", "").map((e) => e.op + e.text), ["-x"]);
  });

  it("numbers lines on both sides", () => {
    const e = diffLines("a\nb\nc\n", "a\nB\nc\nd\n");
    assert.deepEqual(
      e.map((x) => [x.op, x.text, x.a, x.b]),
      [
        [" ", "a", 1, 1],
        ["-", "b", 2, 0],
        ["+", "B", 0, 2],
        [" ", "c", 3, 3],
        ["+", "d", 0, 4],
      ],
    );
  });

  it("is a correct and minimal edit script on random inputs", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const r = rng(seed);
      const gen = () => Array.from({ length: Math.floor(r() * 12) }, () => "abcd"[Math.floor(r() * 4)]);
      const a = gen();
      const b = gen();
      const edits = diffLines(a.map((l) => l + "\n").join(""), b.map((l) => l + "\n").join(""));
      assert.deepEqual(applyEdits(edits), [a, b], `seed ${seed}`);
      const { added, removed } = counts(edits);
      const l = lcsLen(a, b);
      assert.equal(removed, a.length - l, `seed ${seed}: not minimal`);
      assert.equal(added, b.length - l, `seed ${seed}: not minimal`);
    }
  });
});

describe("diffLines budget", () => {
  it("falls back to a correct replace-the-middle script beyond maxEdits", () => {
    const a = Array.from({ length: 50 }, (_, i) => `a${i}`);
    const b = Array.from({ length: 50 }, (_, i) => `b${i}`);
    const text = (xs) => ["{", ...xs, "}"].join("\n") + "\n";
    const edits = diffLines(text(a), text(b), { maxEdits: 10 });
    assert.equal(edits.approximate, true);
    assert.deepEqual(applyEdits(edits), [["{", ...a, "}"], ["{", ...b, "}"]]);
    assert.deepEqual(counts(edits), { added: 50, removed: 50 });
    const exact = diffLines(text(a), text(b));
    assert.equal(exact.approximate, undefined);
  });

  it("diffs a large state quickly in bounded memory", () => {
    const facts = (n, extra) => JSON.stringify({ version: n, facts: Array.from({ length: n }, (_, i) => ({ id: `f${i}`, key: "k", value: i % 7 === 0 && extra ? "changed" : i })) }, null, 2);
    const before = facts(5000, false);
    const after = facts(5000, true);
    const edits = diffLines(before, after);
    const [a, b] = applyEdits(edits);
    assert.equal(a.join("\n"), before);
    assert.equal(b.join("\n"), after);
    // v1 against a big state: everything after the prefix is new.
    const small = JSON.stringify({ version: 1, facts: [] }, null, 2);
    const big = diffLines(small, after);
    assert.equal(applyEdits(big)[1].join("\n"), after);
  });
});

describe("hunks", () => {
  it("groups changes with context and merges close ones", () => {
    const a = Array.from({ length: 30 }, (_, i) => `l${i}`);
    const b = [...a];
    b[5] = "X";
    b[8] = "Y";
    b[25] = "Z";
    const hs = hunks(diffLines(a.join("\n") + "\n", b.join("\n") + "\n"), 3);
    assert.equal(hs.length, 2);
    assert.deepEqual([hs[0].aStart, hs[0].aLen, hs[0].bStart, hs[0].bLen], [3, 10, 3, 10]);
    assert.deepEqual([hs[1].aStart, hs[1].aLen], [23, 7]);
    assert.deepEqual(hs[1].lines.map((l) => l.op + l.text), [" l22", " l23", " l24", "-l25", "+Z", " l26", " l27", " l28"]);
  });
});
