// The UI's Markdown renderer: structure, and that no input can produce HTML or unsafe links.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { markdownSteps, parseInline, parseMarkdown, safeHref } from "../../internal/memory/server/ui/static/markdown.js";

const ALLOWED = new Set(["#text", "p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "code", "blockquote", "hr", "ul", "ol", "li", "a", "strong", "em", "del", "br", "table"]);

function walk(nodes, fn) {
  for (const n of nodes) {
    fn(n);
    if (Array.isArray(n.c)) walk(n.c, fn);
    if (n.t === "table") {
      for (const cell of n.head) walk(cell, fn);
      for (const row of n.rows) for (const cell of row) walk(cell, fn);
    }
  }
}

function textOf(nodes) {
  let s = "";
  walk(nodes, (n) => {
    if (n.t === "#text" || n.t === "code") s += n.c;
  });
  return s;
}

describe("parseMarkdown", () => {
  it("parses headings, paragraphs, lists, code, quotes and tables", () => {
    const md = "# Title\n\nSome **bold** and *em* and `code`.\n\n- one\n- two\n  - nested\n\n1. first\n2. second\n\n```go\nfmt.Println(\"<b>\")\n```\n\n> quoted\n\n| a | b |\n|---|--:|\n| 1 | 2 |\n\n---\n";
    const nodes = parseMarkdown(md);
    assert.deepEqual(nodes.map((n) => n.t), ["h1", "p", "ul", "ol", "pre", "blockquote", "table", "hr"]);
    assert.deepEqual(nodes[1].c.map((n) => n.t), ["#text", "strong", "#text", "em", "#text", "code", "#text"]);
    assert.equal(nodes[2].c.length, 2);
    assert.equal(nodes[2].c[1].c.find((n) => n.t === "ul").c[0].c[0].c, "nested");
    assert.equal(nodes[4].c, 'fmt.Println("<b>")');
    assert.equal(nodes[4].lang, "go");
    assert.deepEqual(nodes[6].align, ["", "right"]);
    assert.equal(textOf(nodes[6].rows[0][1]), "2");
  });

  it("keeps raw HTML as text", () => {
    const nodes = parseMarkdown('<script>alert(1)</script>\n\n<img src=x onerror="alert(1)">');
    assert.deepEqual(nodes.map((n) => n.t), ["p", "p"]);
    assert.equal(textOf(nodes), '<script>alert(1)</script><img src=x onerror="alert(1)">');
  });

  it("drops unsafe link schemes but keeps the label", () => {
    for (const url of ["javascript:alert(1)", "JAVASCRIPT:alert(1)", " javascript:x", "data:text/html,<b>", "vbscript:x", "file:///etc/passwd"]) {
      const nodes = parseInline(`[click](${url})`);
      assert.deepEqual(nodes, [{ t: "#text", c: "click" }], url);
    }
    assert.deepEqual(parseInline("[ok](https://example.com/a?b=1)")[0], { t: "a", href: "https://example.com/a?b=1", c: [{ t: "#text", c: "ok" }] });
    assert.equal(safeHref("#section"), "#section");
    assert.equal(safeHref("docs/api.md"), "docs/api.md");
    assert.equal(safeHref("java\tscript:x"), undefined);
  });

  it("leaves snake_case and lone stars alone", () => {
    assert.equal(textOf(parseInline("a_b_c and 2 * 3 * 4")), "a_b_c and 2 * 3 * 4");
  });

  it("keeps a tight item's text inline before its sublist", () => {
    const [ul] = parseMarkdown("- [ ] write it\n  - with tests\n- next");
    assert.equal(ul.c[0].task, false);
    assert.deepEqual(ul.c[0].c.map((n) => n.t), ["#text", "ul"]);
    assert.equal(ul.c[0].c[0].c, "write it");
  });

  it("renders task lists", () => {
    const [ul] = parseMarkdown("- [x] done\n- [ ] todo");
    assert.deepEqual(ul.c.map((li) => li.task), [true, false]);
  });

  it("never throws and only emits allowed tags on random input (fuzz)", () => {
    const alphabet = ["*", "_", "`", "[", "]", "(", ")", "#", ">", "-", "|", "\n", "\n\n", " ", "  ", "a", "1.", "<", "~", "\\", "!", "javascript:", "http://x", ":"];
    let s = 12345;
    const r = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const deadline = Date.now() + 2000;
    let n = 0;
    while (Date.now() < deadline) {
      let src = "";
      const len = Math.floor(r() * 60);
      for (let k = 0; k < len; k++) src += alphabet[Math.floor(r() * alphabet.length)];
      const nodes = parseMarkdown(src);
      walk(nodes, (node) => {
        assert.ok(ALLOWED.has(node.t), `tag ${node.t} from ${JSON.stringify(src)}`);
        if (node.t === "a") assert.notEqual(safeHref(node.href), undefined, `unsafe href from ${JSON.stringify(src)}`);
      });
      n++;
    }
    assert.ok(n > 1000, `only ${n} inputs in 2 s`);
  });

  it("bounds nesting depth", () => {
    const deep = ">".repeat(5000) + " x";
    assert.doesNotThrow(() => parseMarkdown(deep));
    assert.doesNotThrow(() => parseInline("*".repeat(5000) + "x" + "*".repeat(5000)));
  });
});

// Pathological inputs a hostile artifact can hold. Work is measured with the parser's own step
// counter (characters visited), not a clock: linear means 8x the input costs about 8x the steps.
describe("parseMarkdown stays linear on hostile input", () => {
  const inputs = {
    "*a ": (n) => "*a ".repeat(n / 3),
    "_a ": (n) => "_a ".repeat(n / 3),
    "**a ": (n) => "**a ".repeat(n / 4),
    "__a ": (n) => "__a ".repeat(n / 4),
    "~~a ": (n) => "~~a ".repeat(n / 4),
    "*a* unclosed mix": (n) => "*a **b _c ~~d ".repeat(n / 14),
    "[": (n) => "[".repeat(n),
    "[a](": (n) => "[a](".repeat(n / 4),
    "[a](b": (n) => "[a](b ".repeat(n / 6),
    "![": (n) => "![".repeat(n / 2),
    "backticks": (n) => "`a ``".repeat(n / 5),
    "growing fences": (n) => { let s = ""; for (let k = 1; s.length < n; k++) s += "`".repeat(k % 50) + "a"; return s.slice(0, n); },
    "<http://": (n) => "<http://".repeat(n / 8),
    "\\*": (n) => "\\*a ".repeat(n / 4),
    "nested quotes": (n) => "> ".repeat(n / 2),
    "nested lists": (n) => "- ".repeat(n / 2),
    "many lines of *a": (n) => "*a\n".repeat(n / 3),
    "table pipes": (n) => "|a".repeat(n / 4) + "\n|-|\n" + "|*a ".repeat(n / 8),
  };
  const n = 60000;
  for (const [name, gen] of Object.entries(inputs)) {
    it(`${name}: 60 KB in linear work`, () => {
      markdownSteps();
      const nodes = parseMarkdown(gen(n / 8));
      const small = markdownSteps();
      parseMarkdown(gen(n));
      const big = markdownSteps();
      assert.ok(nodes.length > 0);
      // generous bounds: MAX_DEPTH levels of nesting may each read the text once
      assert.ok(big <= 25 * n, `${big} steps for ${n} bytes`);
      assert.ok(big <= 10 * Math.max(small, 1), `8x the input took ${(big / Math.max(small, 1)).toFixed(1)}x the work (${small} -> ${big} steps)`);
    });
  }

  it("the result is still right: *a repeated is plain text, a closed pair is emphasis", () => {
    const plain = parseMarkdown("*a ".repeat(1000));
    assert.equal(plain.length, 1);
    assert.deepEqual(plain[0].c.map((x) => x.t), ["#text"]);
    const em = parseMarkdown("x *b* y " + "*a ".repeat(1000));
    assert.deepEqual(em[0].c.map((x) => x.t), ["#text", "em", "#text"]);
    assert.equal(em[0].c[1].c[0].c, "b");
  });
});
