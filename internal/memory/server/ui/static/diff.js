// Line diff (Myers' O(ND) algorithm) and unified hunks, for comparing two state versions.
// Pure functions: no DOM, so they are unit-tested under node --test.

/**
 * diffLines returns the edit script turning a into b as [{op: " "|"-"|"+", text, a, b}],
 * where a and b are 1-based line numbers in the old and new text (0 when absent).
 */
export function diffLines(aText, bText, { maxEdits = 2000 } = {}) {
  const a = splitLines(aText);
  const b = splitLines(bText);
  // Common prefix and suffix are cheap to strip and make typical diffs (appends) tiny.
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre && a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const midA = a.slice(pre, a.length - suf);
  const midB = b.slice(pre, b.length - suf);

  const out = [];
  for (let i = 0; i < pre; i++) out.push({ op: " ", text: a[i], a: i + 1, b: i + 1 });
  let mid = myers(midA, midB, maxEdits);
  if (!mid) {
    // Too different to align within the budget: show the middle as replaced (still a correct
    // edit script, just not a minimal one) instead of spending quadratic memory.
    mid = [...midA.map((text, ai) => ({ op: "-", text, ai, bi: -1 })), ...midB.map((text, bi) => ({ op: "+", text, ai: -1, bi }))];
    out.approximate = true;
  }
  for (const e of mid) {
    out.push({
      op: e.op,
      text: e.text,
      a: e.ai >= 0 ? pre + e.ai + 1 : 0,
      b: e.bi >= 0 ? pre + e.bi + 1 : 0,
    });
  }
  for (let i = 0; i < suf; i++) {
    const ai = a.length - suf + i;
    const bi = b.length - suf + i;
    out.push({ op: " ", text: a[ai], a: ai + 1, b: bi + 1 });
  }
  return out;
}

function splitLines(s) {
  if (s === "") return [];
  const lines = s.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

// myers returns the shortest edit script between line arrays a and b, or null when it needs
// more than maxD edits (its trace costs O(D²) memory).
function myers(a, b, maxD = Infinity) {
  const n = a.length;
  const m = b.length;
  if (n === 0) return b.map((text, bi) => ({ op: "+", text, ai: -1, bi }));
  if (m === 0) return a.map((text, ai) => ({ op: "-", text, ai, bi: -1 }));
  if (Math.abs(n - m) > maxD) return null; // D ≥ |n − m|: over budget before starting
  const max = n + m;
  const off = max;
  const v = new Int32Array(2 * max + 2);
  const trace = []; // trace[d] holds v[k] for k in [-d, d], the only diagonals step d reads
  let found = false;
  for (let d = 0; d <= max && !found; d++) {
    if (d > maxD) return null;
    trace.push(v.slice(off - d, off + d + 1));
    for (let k = -d; k <= d; k += 2) {
      let x;
      if (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) x = v[off + k + 1];
      else x = v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = true;
        break;
      }
    }
  }
  // Walk the trace backwards to recover the path.
  const edits = [];
  let x = n;
  let y = m;
  for (let d = trace.length - 1; d >= 0 && (x > 0 || y > 0); d--) {
    const t = trace[d];
    const at = (k) => t[k + d]; // trace[d] is offset by d
    const k = x - y;
    let prevK;
    if (k === -d || (k !== d && at(k - 1) < at(k + 1))) prevK = k + 1;
    else prevK = k - 1;
    const prevX = d === 0 ? 0 : at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      x--;
      y--;
      edits.push({ op: " ", text: a[x], ai: x, bi: y });
    }
    if (d === 0) break;
    if (x === prevX) {
      y--;
      edits.push({ op: "+", text: b[y], ai: -1, bi: y });
    } else {
      x--;
      edits.push({ op: "-", text: a[x], ai: x, bi: -1 });
    }
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    edits.push({ op: " ", text: a[x], ai: x, bi: y });
  }
  return edits.reverse();
}

/**
 * hunks groups an edit script into unified-diff hunks with `context` unchanged lines around
 * each change: [{aStart, aLen, bStart, bLen, lines}].
 */
export function hunks(edits, context = 3) {
  const out = [];
  let i = 0;
  while (i < edits.length) {
    if (edits[i].op === " ") {
      i++;
      continue;
    }
    let start = Math.max(0, i - context);
    // Extend to the end of this run of changes, merging runs separated by ≤ 2*context lines.
    let end = i;
    for (;;) {
      while (end < edits.length && edits[end].op !== " ") end++;
      let j = end;
      while (j < edits.length && edits[j].op === " " && j - end < 2 * context) j++;
      if (j < edits.length && edits[j].op !== " " && j - end <= 2 * context) {
        end = j;
        continue;
      }
      break;
    }
    const stop = Math.min(edits.length, end + context);
    if (out.length && start < out[out.length - 1]._stop) start = out[out.length - 1]._stop;
    const lines = edits.slice(start, stop);
    const firstA = lines.find((l) => l.a > 0);
    const firstB = lines.find((l) => l.b > 0);
    out.push({
      aStart: firstA ? firstA.a : 0,
      aLen: lines.filter((l) => l.op !== "+").length,
      bStart: firstB ? firstB.b : 0,
      bLen: lines.filter((l) => l.op !== "-").length,
      lines,
      _stop: stop,
    });
    i = stop;
  }
  return out.map(({ _stop, ...h }) => h);
}

/** counts returns {added, removed} for an edit script. */
export function counts(edits) {
  let added = 0;
  let removed = 0;
  for (const e of edits) {
    if (e.op === "+") added++;
    else if (e.op === "-") removed++;
  }
  return { added, removed };
}

/** applyEdits rebuilds [oldText, newText] from an edit script (used by tests as an oracle). */
export function applyEdits(edits) {
  const a = [];
  const b = [];
  for (const e of edits) {
    if (e.op !== "+") a.push(e.text);
    if (e.op !== "-") b.push(e.text);
  }
  return [a, b];
}
