// Speed of the web UI's version diff (internal/memory/server/ui/static/diff.js) on large states.
// Run: node bench/ui_diff.mjs   (prints ms per diff; no thresholds)
import { diffLines } from "../internal/memory/server/ui/static/diff.js";

const state = (n, changeEvery) =>
  JSON.stringify(
    { version: n, facts: Array.from({ length: n }, (_, i) => ({ id: `f${i}`, key: "k", value: changeEvery && i % changeEvery === 0 ? "changed" : i })) },
    null,
    2,
  );

function bench(name, a, b, runs = 5) {
  diffLines(a, b); // warm up
  const t0 = performance.now();
  let edits;
  for (let i = 0; i < runs; i++) edits = diffLines(a, b);
  const ms = (performance.now() - t0) / runs;
  const lines = a.split("\n").length + b.split("\n").length;
  const changed = edits.filter((e) => e.op !== " ").length;
  console.log(`${name.padEnd(44)} ${String(lines).padStart(7)} lines  ${String(changed).padStart(6)} changed  ${ms.toFixed(1).padStart(8)} ms${edits.approximate ? "  (approximate)" : ""}`);
}

const base = state(5000, 0);
bench("5,000 facts, 1 fact changed", base, state(5000, 5000));
bench("5,000 facts, every 50th changed (100)", base, state(5000, 50));
bench("5,000 facts, every 7th changed (715)", base, state(5000, 7));
bench("v1 (empty) vs 5,000 facts", state(0, 0), base);
bench("5,000 facts, all values changed", base, state(5000, 1));
