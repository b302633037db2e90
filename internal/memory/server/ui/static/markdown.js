// A small, safe Markdown renderer for artifact previews.
// Safety comes from the design: the parser builds a tree of a fixed set of tags, and the DOM
// renderer only uses createElement + textContent, so no input is ever parsed as HTML. Raw HTML in
// the source shows up as text. Links keep only http(s), mailto and in-page targets.

const MAX_DEPTH = 20; // nesting bound for quotes and lists, so hostile input cannot blow the stack

// Inline parsing is linear in its input: every search a delimiter, code span or link needs is
// answered from tables built in one pass over the text (see inlineIndex), never by scanning ahead
// again from each candidate, which made 60 KB of "*a " take seconds. steps counts the work done
// (characters visited by loops and searches) so tests can check the bound without a clock.
let steps = 0;

/** markdownSteps returns the work counter (characters visited while parsing) and resets it. */
export function markdownSteps() {
  const n = steps;
  steps = 0;
  return n;
}

/** parseMarkdown returns block nodes: {t: tag, c: children | text, ...attrs}. */
export function parseMarkdown(src, depth = 0) {
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  steps += String(src).length; // each nesting level (at most MAX_DEPTH) reads its text once
  const out = [];
  let i = 0;
  const isBlank = (l) => /^\s*$/.test(l);
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line)) {
      i++;
      continue;
    }
    // Fenced code block.
    let m = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/.exec(line);
    if (m) {
      const fence = m[1];
      const body = [];
      i++;
      while (i < lines.length && !lines[i].trimStart().startsWith(fence)) body.push(lines[i++]);
      i++; // closing fence (or end of input)
      out.push({ t: "pre", lang: m[2] || "", c: body.join("\n") });
      continue;
    }
    // ATX heading.
    m = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
    if (m) {
      out.push({ t: "h" + m[1].length, c: parseInline(m[2]) });
      i++;
      continue;
    }
    // Thematic break.
    if (/^ {0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
      out.push({ t: "hr" });
      i++;
      continue;
    }
    // Block quote.
    if (/^ {0,3}>/.test(line)) {
      const body = [];
      while (i < lines.length && /^ {0,3}>/.test(lines[i])) body.push(lines[i++].replace(/^ {0,3}> ?/, ""));
      out.push({ t: "blockquote", c: depth < MAX_DEPTH ? parseMarkdown(body.join("\n"), depth + 1) : [{ t: "p", c: [text(body.join("\n"))] }] });
      continue;
    }
    // List.
    m = /^( {0,3})([-*+]|\d{1,9}[.)])\s+/.exec(line);
    if (m) {
      const ordered = /\d/.test(m[2]);
      const items = [];
      const start = ordered ? parseInt(m[2], 10) : 1;
      while (i < lines.length) {
        const im = /^( {0,3})([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(lines[i]);
        if (!im || /\d/.test(im[2]) !== ordered) break;
        const indent = im[1].length + im[2].length + 1;
        const body = [im[3]];
        i++;
        while (i < lines.length) {
          const l = lines[i];
          if (isBlank(l)) {
            // A blank line continues the item only if indented content follows.
            if (i + 1 < lines.length && /^\s{2,}\S/.test(lines[i + 1])) {
              body.push("");
              i++;
              continue;
            }
            break;
          }
          if (/^\s{2,}/.test(l)) {
            body.push(l.slice(Math.min(indent, l.length - l.trimStart().length)));
            i++;
            continue;
          }
          if (/^ {0,3}([-*+]|\d{1,9}[.)])\s+/.test(l) || /^ {0,3}(#|>|`{3}|~{3})/.test(l)) break;
          body.push(l); // lazy continuation of the item's paragraph
          i++;
        }
        let task;
        const tm = /^\[([ xX])\]\s+/.exec(body[0]);
        if (tm) {
          task = tm[1] !== " ";
          body[0] = body[0].slice(tm[0].length);
        }
        const inner = depth < MAX_DEPTH ? parseMarkdown(body.join("\n"), depth + 1) : [{ t: "p", c: [text(body.join("\n"))] }];
        // A tight item (no blank line inside) renders its leading paragraph inline, before any sublist.
        const tight = !body.includes("");
        const c = tight && inner[0]?.t === "p" ? [...inner[0].c, ...inner.slice(1)] : inner;
        items.push(task === undefined ? { t: "li", c } : { t: "li", task, c });
        while (i < lines.length && isBlank(lines[i]) && i + 1 < lines.length && /^ {0,3}([-*+]|\d{1,9}[.)])\s+/.test(lines[i + 1])) i++;
      }
      out.push(ordered ? { t: "ol", start, c: items } : { t: "ul", c: items });
      continue;
    }
    // GFM table: a header row followed by a separator row.
    if (line.includes("|") && i + 1 < lines.length && /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/.test(lines[i + 1])) {
      const head = splitRow(line);
      const align = splitRow(lines[i + 1]).map((s) => (s.startsWith(":") && s.endsWith(":") ? "center" : s.endsWith(":") ? "right" : ""));
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].includes("|") && !isBlank(lines[i])) rows.push(splitRow(lines[i++]));
      out.push({
        t: "table",
        align,
        head: head.map((cell) => parseInline(cell)),
        rows: rows.map((r) => head.map((_, k) => parseInline(r[k] ?? ""))),
      });
      continue;
    }
    // Paragraph: until a blank line or the start of another block.
    const para = [];
    while (
      i < lines.length &&
      !isBlank(lines[i]) &&
      !(para.length && /^ {0,3}(#{1,6}\s|>|`{3}|~{3}|([-*+]|\d{1,9}[.)])\s+|([-*_])(\s*\3){2,}\s*$)/.test(lines[i]))
    ) {
      para.push(lines[i++]);
    }
    out.push({ t: "p", c: parseInline(para.join("\n")) });
  }
  return out;
}

function splitRow(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function text(s) {
  return { t: "#text", c: s };
}

/** safeHref keeps http(s), mailto and in-page/relative links; everything else becomes undefined. */
export function safeHref(url) {
  const u = String(url).trim();
  if (/^(https?:|mailto:)/i.test(u)) return u;
  if (/^[#/?]/.test(u) || /^[\w.-]+(\/|$)/.test(u)) {
    // Relative links must not smuggle a scheme (e.g. "javascript:" after stripping).
    return /^[a-z][a-z0-9+.-]*:/i.test(u) ? undefined : u;
  }
  return undefined;
}

/** parseInline returns inline nodes for one paragraph's text. */
export function parseInline(s, depth = 0) {
  const ix = inlineIndex(s);
  const out = [];
  let buf = "";
  const flush = () => {
    if (buf) out.push(text(buf));
    buf = "";
  };
  let i = 0;
  while (i < s.length) {
    const ch = s[i];
    // Backslash escape, or a backslash hard break.
    if (ch === "\\" && i + 1 < s.length) {
      if (s[i + 1] === "\n") {
        flush();
        out.push({ t: "br" });
        i += 2;
        continue;
      }
      if (/[!-/:-@[-`{-~]/.test(s[i + 1])) {
        buf += s[i + 1];
        i += 2;
        continue;
      }
    }
    // Two trailing spaces before a newline: hard break.
    if (ch === " " && s.startsWith("  \n", i)) {
      flush();
      out.push({ t: "br" });
      i += 3;
      continue;
    }
    if (ch === "`") {
      let n = 0;
      while (s[i + n] === "`") n++;
      steps += n;
      const fence = "`".repeat(n);
      const end = ix.fence(n, i + n);
      if (end > 0) {
        flush();
        out.push({ t: "code", c: s.slice(i + n, end).replace(/^ (.*) $/s, "$1") });
        i = end + n;
        continue;
      }
      buf += fence;
      i += n;
      continue;
    }
    if (depth < MAX_DEPTH) {
      const emph = matchDelimited(s, i, ix);
      if (emph) {
        flush();
        out.push({ t: emph.tag, c: parseInline(emph.inner, depth + 1) });
        i = emph.end;
        continue;
      }
      if (ch === "[" || (ch === "!" && s[i + 1] === "[")) {
        const link = matchLink(s, ch === "!" ? i + 1 : i, ix);
        if (link) {
          flush();
          const href = safeHref(link.url);
          if (ch === "!") {
            // Images are not loaded (no remote requests from the UI); show their alt text.
            out.push(href ? { t: "a", href, c: [text("🖼 " + (link.label || link.url))] } : text(link.label));
          } else if (href) {
            out.push({ t: "a", href, c: parseInline(link.label, depth + 1) });
          } else {
            out.push(...parseInline(link.label, depth + 1));
          }
          i = link.end;
          continue;
        }
      }
    }
    if (ch === "<") {
      AUTOLINK.lastIndex = i;
      const m = AUTOLINK.exec(s);
      if (m) {
        flush();
        out.push({ t: "a", href: m[1], c: [text(m[1])] });
        i += m[0].length;
        continue;
      }
    }
    buf += ch === "\n" ? " " : ch;
    i++;
    steps++;
  }
  flush();
  return out;
}

// AUTOLINK matches <https://…> at lastIndex (sticky: no copy of the rest of the text).
const AUTOLINK = /<((?:https?:\/\/|mailto:)[^\s<>]+)>/iy;

const DELIMS = [
  ["**", "strong"],
  ["__", "strong"],
  ["~~", "del"],
  ["*", "em"],
  ["_", "em"],
];

/**
 * inlineIndex precomputes, lazily and once per text, what the inline parser asks about positions
 * ahead of it: the first valid closer of each delimiter at or after a position, the bracket and
 * parenthesis that close each opener, and which code-span fences do not occur again.
 */
function inlineIndex(s) {
  const closers = new Map();
  let brackets, parens;
  const noFence = new Map(); // run length → position from which that fence never occurs
  return {
    // closer returns the first position p >= from where delimiter d can close emphasis.
    closer(d, from) {
      let next = closers.get(d);
      if (!next) {
        next = closerTable(s, d);
        closers.set(d, next);
      }
      return from < next.length ? next[from] : -1;
    },
    bracket(i) {
      brackets ??= matchPairs(s, "[", "]");
      return brackets[i];
    },
    paren(i) {
      parens ??= matchPairs(s, "(", ")");
      return parens[i];
    },
    // fence finds n backticks at or after from (like indexOf); a miss is remembered, because
    // searching again from further on cannot find anything either.
    fence(n, from) {
      const none = noFence.get(n);
      if (none !== undefined && from >= none) return -1;
      const fence = "`".repeat(n);
      const end = s.indexOf(fence, from);
      steps += (end < 0 ? s.length : end + n) - from;
      if (end < 0) noFence.set(n, from);
      return end;
    },
  };
}

// closerTable: next[p] is the smallest q >= p where d closes emphasis (its text before does not
// end in whitespace, a single * or _ is not doubled, _ is not inside a word), or -1.
function closerTable(s, d) {
  const L = d.length;
  const next = new Int32Array(s.length + 2).fill(-1);
  let nx = -1;
  for (let p = s.length; p >= 1; p--) {
    if (s.startsWith(d, p) && !/\s/.test(s[p - 1]) && (L > 1 || s[p + 1] !== d) && !(d[0] === "_" && /\w/.test(s[p + L] ?? ""))) nx = p;
    next[p] = nx;
  }
  next[0] = nx;
  steps += s.length;
  return next;
}

// matchPairs maps each open character to the close character that balances it (-1 if none),
// skipping backslash-escaped characters, in one pass with a stack.
function matchPairs(s, open, close) {
  const match = new Int32Array(s.length).fill(-1);
  const stack = [];
  for (let k = 0; k < s.length; k++) {
    const c = s[k];
    if (c === "\\") {
      k++;
      continue;
    }
    if (c === open) stack.push(k);
    else if (c === close && stack.length) match[stack.pop()] = k;
  }
  steps += s.length;
  return match;
}

function matchDelimited(s, i, ix) {
  for (const [d, tag] of DELIMS) {
    if (!s.startsWith(d, i)) continue;
    if (d.length === 1 && s[i + 1] === d) continue;
    if (d[0] === "_" && i > 0 && /\w/.test(s[i - 1])) continue; // snake_case is not emphasis
    const after = s[i + d.length];
    if (after === undefined || /\s/.test(after)) continue;
    // The first closer past a non-empty inner text.
    const end = ix.closer(d, i + d.length + 1);
    if (end >= 0) return { tag, inner: s.slice(i + d.length, end), end: end + d.length };
  }
  return null;
}

function matchLink(s, i, ix) {
  // [label](url "title"): the bracket that balances this one, then "(" and its balancing ")".
  const j = ix.bracket(i);
  if (j < 0 || s[j + 1] !== "(") return null;
  // The destination may contain balanced parentheses, e.g. (https://x/a_(b)).
  const close = ix.paren(j + 1);
  if (close < 0) return null;
  const target = s.slice(j + 2, close).trim();
  const url = target.split(/\s+/)[0].replace(/^<(.*)>$/, "$1");
  return { label: s.slice(i + 1, j), url, end: close + 1 };
}

/** renderMarkdown builds a DocumentFragment for src using only createElement and text nodes. */
export function renderMarkdown(src, doc = globalThis.document) {
  const frag = doc.createDocumentFragment();
  for (const n of parseMarkdown(src)) frag.appendChild(toDOM(n, doc));
  return frag;
}

function toDOM(n, doc) {
  if (n.t === "#text") return doc.createTextNode(n.c);
  if (n.t === "br" || n.t === "hr") return doc.createElement(n.t);
  if (n.t === "pre") {
    const pre = doc.createElement("pre");
    const code = doc.createElement("code");
    if (n.lang) code.dataset.lang = n.lang;
    code.textContent = n.c;
    pre.appendChild(code);
    return pre;
  }
  if (n.t === "code") {
    const code = doc.createElement("code");
    code.textContent = n.c;
    return code;
  }
  if (n.t === "table") {
    const table = doc.createElement("table");
    const thead = table.appendChild(doc.createElement("thead")).appendChild(doc.createElement("tr"));
    n.head.forEach((cell, k) => {
      const th = thead.appendChild(doc.createElement("th"));
      if (n.align[k]) th.style.textAlign = n.align[k];
      for (const c of cell) th.appendChild(toDOM(c, doc));
    });
    const tbody = table.appendChild(doc.createElement("tbody"));
    for (const row of n.rows) {
      const tr = tbody.appendChild(doc.createElement("tr"));
      row.forEach((cell, k) => {
        const td = tr.appendChild(doc.createElement("td"));
        if (n.align[k]) td.style.textAlign = n.align[k];
        for (const c of cell) td.appendChild(toDOM(c, doc));
      });
    }
    return table;
  }
  const el = doc.createElement(n.t);
  if (n.t === "a") {
    el.setAttribute("href", n.href);
    el.setAttribute("rel", "noopener noreferrer nofollow");
    if (!n.href.startsWith("#")) el.setAttribute("target", "_blank");
  }
  if (n.t === "ol" && n.start !== 1) el.setAttribute("start", String(n.start));
  if (n.t === "li" && n.task !== undefined) {
    const box = doc.createElement("input");
    box.type = "checkbox";
    box.checked = n.task;
    box.disabled = true;
    el.appendChild(box);
    el.appendChild(doc.createTextNode(" "));
  }
  for (const c of n.c || []) el.appendChild(toDOM(c, doc));
  return el;
}
