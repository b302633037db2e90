// Browser test of relay's web UI: a real daemon with data, headless Debian Chromium driven by
// playwright-core. Navigates thread → version diff → artifact, sees a new event arrive live, and
// saves screenshots under test/ui/screenshots/ (or $RELAY_UI_SCREENSHOTS) for CI to keep.
//
// Run: cd test/ui && npm ci && node --test ui.test.mjs
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, existsSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";

import { chromium } from "playwright-core";

import { RelayClient } from "../../sdk/typescript/dist/index.js";
import { Daemon, cleanupBinary, relayBinary, repoRoot } from "../../sdk/typescript/test/daemon.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const shots = process.env.RELAY_UI_SCREENSHOTS || join(here, "screenshots");
const chromiumPath = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"];

let d;
let c;
let ctx;
let page;
let profile;
let tid;
let refs = {};
const problems = []; // console errors and page errors: the UI must run clean

async function seed() {
  const other = await c.threadNew("nightly-benchmarks");
  await c.artifactPut(other.thread_id, "bench.json", JSON.stringify({ runs: 3, p99_ms: 1.7 }), "json");

  const t = await c.threadNew("ui-demo: refactor auth");
  tid = t.thread_id;
  const md = [
    "# Auth refactor plan",
    "",
    "We move **session checks** into `middleware/auth.go` and keep *one* code path.",
    "",
    "- [x] inventory the handlers",
    "- [ ] write the middleware",
    "  - with table tests",
    "",
    "| step | owner |",
    "|------|------:|",
    "| review | agent-b |",
    "",
    "```go",
    "func Auth(next http.Handler) http.Handler { return next }",
    "```",
    "",
    "> Raw HTML must stay text: <script>window.__pwned = 1</script> <img src=x onerror=\"window.__pwned = 2\">",
    "",
    "[safe link](https://example.com/docs) and [evil link](javascript:window.__pwned=3)",
    "",
    "Long notes follow.",
    ...Array.from({ length: 60 }, (_, i) => `- note ${i + 1}: the handler at line ${100 + i} reads the cookie twice`),
  ].join("\n");
  refs.md = (await c.artifactPut(tid, "plan.md", md, "markdown", { createdBy: "agent-a" })).ref;
  refs.json = (await c.artifactPut(tid, "handlers.json", JSON.stringify({ handlers: [{ path: "/login", auth: false }, { path: "/api/*", auth: true }], total: 2 }), "json", { createdBy: "agent-a" })).ref;
  refs.bin = (await c.artifactPut(tid, "trace.bin", new Uint8Array(4096).map((_, i) => (i * 7) % 256), "binary", { createdBy: "agent-b" })).ref;
  refs.txt = (await c.artifactPut(tid, "grep.txt", "middleware/auth.go:12: cookie := r.Cookie(\"s\")\nhandlers/login.go:40: cookie := r.Cookie(\"s\")\n", "text", { createdBy: "agent-b" })).ref;

  let v = 1;
  const patch = async (ops, author) => (v = (await c.statePatch(tid, ops, { expectedVersion: v, author })).version);
  await patch(
    [
      { op: "add", path: "/facts/-", value: { id: "f1", key: "language", value: "Go 1.26" } },
      { op: "add", path: "/constraints/-", value: { id: "c1", description: "no new dependencies", severity: "hard" } },
      { op: "add", path: "/open_questions/-", value: { id: "q1", question: "Keep the legacy cookie name?", status: "open" } },
    ],
    "agent-a",
  );
  await patch(
    [
      { op: "add", path: "/plan/-", value: { id: "p1", step: "write auth middleware", status: "pending" } },
      { op: "add", path: "/plan/-", value: { id: "p2", step: "table tests for every handler", status: "pending" } },
      { op: "add", path: "/artifacts/-", value: { ref: refs.md, type: "markdown", name: "plan.md" } },
    ],
    "agent-a",
  );
  await patch(
    [
      { op: "add", path: "/facts/-", value: { id: "f2", key: "handlers", value: 14 } },
      { op: "replace", path: "/open_questions/0/status", value: "resolved" },
      { op: "add", path: "/decisions/-", value: { id: "d1", description: "keep the legacy cookie name", reason_codes: ["compat"], evidence_refs: [refs.txt], confidence: 0.8 } },
    ],
    "agent-b",
  );
  await patch([{ op: "replace", path: "/plan/0/status", value: "done" }, { op: "add", path: "/artifacts/-", value: { ref: refs.json, type: "json", name: "handlers.json" } }], "agent-a");
  return v;
}

async function shot(name) {
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
}

before(async () => {
  assert.ok(existsSync(chromiumPath), `Chromium not found at ${chromiumPath}; install Debian's chromium package`);
  mkdirSync(shots, { recursive: true });
  d = await (await Daemon.create("ui-test-token")).start();
  c = new RelayClient(d.url, { token: d.token });
  await seed();
  profile = mkdtempSync(join(tmpdir(), "relay-ui-profile-"));
  ctx = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: FLAGS,
    viewport: { width: 1360, height: 900 },
    acceptDownloads: true,
    colorScheme: "light",
  });
  page = ctx.pages()[0] ?? (await ctx.newPage());
  page.setDefaultTimeout(15000);
  page.on("pageerror", (e) => problems.push(`pageerror: ${e.message}`));
  page.on("console", (m) => {
    // Expected: the 401 before the token is entered, and 404s probing optional layers
    // (/stats, /cap/list) on a daemon built without them. Anything else is a bug.
    if (m.type() !== "error") return;
    const url = m.location()?.url || "";
    if (/status of 401/.test(m.text())) return;
    if (/status of 404/.test(m.text()) && /\/stats$|\/cap\/list$/.test(url)) return;
    problems.push(`console: ${m.text()} (${url})`);
  });
});

after(async () => {
  await ctx?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  await d?.close();
  cleanupBinary();
});

describe("web UI in Chromium", () => {
  it("asks for the token once, then lists threads", async () => {
    await page.goto(`${d.url}/ui/`);
    const dialog = page.getByTestId("token-dialog");
    await dialog.waitFor({ state: "visible" });
    await shot("00-token-prompt");
    await page.getByTestId("token-input").fill(d.token);
    await page.getByTestId("token-submit").click();
    await dialog.waitFor({ state: "hidden" });
    const rows = page.getByTestId("thread-row");
    await rows.first().waitFor();
    assert.equal(await rows.count(), 2);
    const demo = rows.filter({ hasText: "ui-demo" });
    assert.match(await demo.innerText(), /v5/);
    assert.match(await demo.innerText(), /\b4\b/); // artifact count
    // Tokens avoided is filled in per thread; the chart follows.
    await page.waitForFunction(() => [...document.querySelectorAll("[data-testid=tokens-avoided]")].every((td) => td.textContent !== "…"));
    await page.locator("[data-testid=threads-chart] svg").waitFor();
    await shot("01-threads");

    // Reloading keeps the remembered token: no second prompt.
    await page.reload();
    await rows.first().waitFor();
    assert.equal(await dialog.isVisible(), false);
  });

  it("opens a thread with its header, full state and savings chart", async () => {
    await page.getByTestId("thread-row").filter({ hasText: "ui-demo" }).click();
    await page.getByTestId("thread-name").waitFor();
    assert.equal(await page.getByTestId("thread-name").innerText(), "ui-demo: refactor auth");
    assert.equal(await page.getByTestId("state-ref").innerText(), "v5");
    assert.ok(page.url().endsWith(`#/t/${tid}`), page.url());
    await page.getByTestId("hdr-facts").getByText("Go 1.26").waitFor();
    assert.match(await page.getByTestId("hdr-steps").innerText(), /table tests for every handler/);
    assert.doesNotMatch(await page.getByTestId("hdr-steps").innerText(), /write auth middleware/); // done, not pending
    assert.match(await page.getByTestId("hdr-constraints").innerText(), /no new dependencies/);
    await page.locator("[data-testid=savings] svg.chart").first().waitFor();
    assert.match(await page.getByTestId("savings").innerText(), /tokens avoided/);
    await shot("02-thread-overview");

    await page.getByTestId("tab-state").click();
    const stateJSON = page.getByTestId("state-json");
    await stateJSON.waitFor();
    const state = JSON.parse(await stateJSON.innerText());
    assert.equal(state.version, 5);
    assert.equal(state.decisions[0].description, "keep the legacy cookie name");
    await shot("03-full-state");
  });

  it("shows the version history and the diff between any two versions", async () => {
    await page.getByTestId("tab-versions").click();
    await page.getByTestId("versions-table").waitFor();
    assert.equal(await page.getByTestId("version-row").count(), 5);
    // Default: previous → latest.
    const diff = page.getByTestId("diff");
    await diff.getByText("v4").first().waitFor();
    assert.match(await diff.innerText(), /"status": "done"/);

    // Pick A = v2, B = v4.
    await page.getByTestId("va-2").check();
    await page.waitForURL(/versions\/2\/5$/);
    await page.getByTestId("vb-4").check();
    await page.waitForURL(/versions\/2\/4$/);
    await diff.locator("tr.add").first().waitFor();
    const added = await diff.locator("tr.add").allInnerTexts();
    const removed = await diff.locator("tr.del").allInnerTexts();
    assert.ok(added.some((l) => l.includes('"handlers"')), `added lines: ${added.join(" | ")}`);
    assert.ok(added.some((l) => l.includes("keep the legacy cookie name")));
    assert.ok(removed.some((l) => l.includes('"version": 2')), `removed: ${removed.join(" | ")}`);
    assert.ok(!added.some((l) => l.includes("no new dependencies")), "unchanged lines shown as added");
    await shot("04-version-diff");
  });

  it("previews artifacts safely and downloads them", async () => {
    await page.getByTestId("tab-artifacts").click();
    await page.getByTestId("artifact-list").waitFor();
    assert.equal(await page.getByTestId("artifact-link").count(), 4);

    await page.locator(`[data-testid=artifact-link][data-ref="${refs.md}"]`).click();
    const md = page.getByTestId("markdown");
    await md.waitFor();
    assert.equal(await md.locator("h1").innerText(), "Auth refactor plan");
    assert.equal(await md.locator("table td").last().innerText(), "agent-b");
    assert.equal(await md.locator("input[type=checkbox]").count(), 2);
    // Hostile markup stayed text and the javascript: link is not a link.
    assert.equal(await md.locator("script, img, iframe").count(), 0);
    assert.match(await md.innerText(), /<script>window.__pwned = 1<\/script>/);
    assert.equal(await md.locator('a[href^="javascript"]').count(), 0);
    assert.equal(await md.locator('a[href="https://example.com/docs"]').count(), 1);
    assert.equal(await page.evaluate(() => window.__pwned), undefined);
    await shot("05-artifact-markdown");

    const [download] = await Promise.all([page.waitForEvent("download"), page.getByTestId("download").click()]);
    assert.equal(download.suggestedFilename(), "plan.md");
    const saved = readFileSync(await download.path(), "utf8");
    assert.equal(saved, await c.artifactText(tid, refs.md));

    await page.locator(`[data-testid=artifact-link][data-ref="${refs.json}"]`).click();
    const js = page.getByTestId("json");
    await js.waitFor();
    const text = await js.innerText();
    assert.match(text, /\n {2}"handlers": \[\n/); // pretty-printed
    assert.deepEqual(JSON.parse(text).total, 2);
    await shot("06-artifact-json");

    await page.locator(`[data-testid=artifact-link][data-ref="${refs.bin}"]`).click();
    await page.getByTestId("artifact-preview").getByText("Binary content").waitFor();
    assert.match(await page.getByTestId("artifact-preview").innerText(), /4\.0 KiB/);
    await shot("07-artifact-binary");
  });

  it("shows a new event live over SSE", async () => {
    await page.getByTestId("tab-events").click();
    const timeline = page.getByTestId("timeline");
    await timeline.getByTestId("event").first().waitFor();
    const before = await timeline.getByTestId("event").count();
    assert.equal(before, (await c.events(tid)).length);
    assert.equal(await page.getByTestId("live").getAttribute("data-state"), "live");

    const r = await c.statePatch(tid, [{ op: "add", path: "/facts/-", value: { id: "f3", key: "live", value: "from the SDK" } }], { expectedVersion: 5, author: "ui-test" });
    const fresh = timeline.locator(`[data-testid=event][data-id="${r.event_id}"]`);
    await fresh.waitFor();
    assert.equal(await fresh.getAttribute("data-type"), "state.patched");
    assert.match(await fresh.innerText(), /v6/);
    assert.match(await fresh.innerText(), /ui-test/);
    assert.equal(await timeline.getByTestId("event").count(), before + 1);
    // Numbered within the thread (1, 2, 3…), not by the store-wide id.
    assert.equal(await fresh.locator(".eid").innerText(), `#${before + 1}`);
    assert.equal(await timeline.getByTestId("event").last().locator(".eid").innerText(), "#1");
    // Newest first.
    assert.equal(await timeline.getByTestId("event").first().getAttribute("data-id"), String(r.event_id));
    // The header figures follow.
    await page.getByTestId("state-ref").getByText("v6").waitFor();
    await shot("08-events-live");
  });

  it("lists capability calls (or says there is no capability layer)", async () => {
    await page.getByTestId("tab-caps").click();
    await page.getByTestId("cap-calls").or(page.getByText("No capability calls")).first().waitFor();
    let caps = [];
    try {
      caps = await c.capList();
    } catch {
      /* no capability layer in this daemon */
    }
    if (caps.some((x) => x.name === "retrieval.search")) {
      await page.getByTestId("cap-select").selectOption("retrieval.search");
      await page.getByTestId("cap-args").fill('{"query": "cookie"}');
      await page.getByTestId("cap-invoke").click();
      await page.getByTestId("cap-result").locator("a").first().waitFor();
      await page.getByTestId("cap-calls").getByTestId("event").first().waitFor();
    }
    await shot("09-capabilities");
  });

  it("sends security headers and refuses cross-site writes", async () => {
    const res = await fetch(`${d.url}/ui/`);
    assert.match(res.headers.get("content-security-policy"), /frame-ancestors 'none'/);
    assert.equal(res.headers.get("x-frame-options"), "DENY");
    const evil = await fetch(`${d.url}/threads`, {
      method: "POST",
      headers: { Authorization: `Bearer ${d.token}`, Origin: "http://evil.example", "Content-Type": "application/json" },
      body: "{}",
    });
    assert.equal(evil.status, 403);
    // fetch() may not override Host, so a raw request plays the DNS-rebinding page.
    const rebind = await new Promise((resolve, reject) => {
      const req = request(`${d.url}/threads`, { headers: { Authorization: `Bearer ${d.token}`, Host: `rebind.evil.example:${d.port}` } }, (res) => {
        res.resume();
        resolve(res.statusCode);
      });
      req.on("error", reject);
      req.end();
    });
    assert.equal(rebind, 403);
  });

  it("picks up new threads on the list without a reload", async () => {
    await page.goto(`${d.url}/ui/#/`);
    await page.getByTestId("thread-row").first().waitFor();
    const n = await page.getByTestId("thread-row").count();
    await c.threadNew("arrived-later");
    await page.getByTestId("thread-row").filter({ hasText: "arrived-later" }).waitFor({ timeout: 20000 });
    assert.equal(await page.getByTestId("thread-row").count(), n + 1);
  });

  it("looks right in dark mode too", async () => {
    await page.emulateMedia({ colorScheme: "dark" });
    await page.goto(`${d.url}/ui/#/t/${tid}/overview`);
    await page.getByTestId("savings").waitFor();
    await shot("10-overview-dark");
    await page.emulateMedia({ colorScheme: "light" });
    await page.setViewportSize({ width: 420, height: 860 });
    await page.goto(`${d.url}/ui/#/t/${tid}/versions`);
    await page.getByTestId("diff").waitFor();
    await shot("11-versions-narrow");
    await page.setViewportSize({ width: 1360, height: 900 });
  });

  it("keeps every tab reachable on a 420 px screen", async () => {
    await page.setViewportSize({ width: 420, height: 860 });
    try {
      await page.goto(`${d.url}/ui/#/t/${tid}/overview`);
      await page.getByTestId("savings").waitFor();
      // Nothing sticks out of the page sideways, and no tab is cut off: the strip wraps,
      // so every tab lies wholly on the screen without hidden scrolling.
      assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), "the page scrolls sideways at 420 px");
      for (const tab of await page.locator("nav.tabs a").all()) {
        const b = await tab.boundingBox();
        assert.ok(b.x >= 0 && b.x + b.width <= 420, `the ${await tab.innerText()} tab is cut off at 420 px (${b.x}..${b.x + b.width})`);
      }
      await page.getByTestId("tab-events").click();
      const first = page.getByTestId("timeline").getByTestId("event").first();
      await first.waitFor();
      // An event row stays a row: its summary is not squeezed into a column of letters.
      const row = await first.boundingBox();
      assert.ok(row.height < 200, `an event row is ${row.height} px tall at 420 px`);
      await shot("12-events-narrow");
    } finally {
      await page.setViewportSize({ width: 1360, height: 900 });
    }
  });

  it("shows a project's transaction with its diff and an ask in the thread timeline", async () => {
    // The real CLI against this daemon: relay apply in a project that has a thread, and
    // relay ask --thread with a stand-in codex (relay's test friend) on PATH.
    const pt = await c.threadNew("project-memory");
    const proj = mkdtempSync(join(tmpdir(), "relay-ui-proj-"));
    const bin = mkdtempSync(join(tmpdir(), "relay-ui-bin-"));
    try {
      execFileSync("go", ["build", "-o", join(bin, "codex"), "./internal/cli/testdata/fakefriend"], { cwd: repoRoot(), stdio: "inherit" });
      writeFileSync(join(proj, "relaycode.config.json"), JSON.stringify({ projectId: "demo", core: { enableNotifications: false } }));
      writeFileSync(join(proj, "notes.txt"), "old line\nkeep\n");
      writeFileSync(join(proj, "answer.md"), ["```text // notes.txt", "new line", "keep", "```", "", "```yaml", "projectId: demo", "uuid: 5b1e2c3d-1111-4222-8333-444455556666", "promptSummary: update the notes", "```", ""].join("\n"));
      const env = { ...d.env(), PATH: `${bin}:${process.env.PATH}`, FAKE_ANSWER: "codex says: the notes change looks right" };
      execFileSync(relayBinary(), ["apply", "answer.md", "-y", "--thread", pt.thread_id], { cwd: proj, env, stdio: "pipe" });
      execFileSync(relayBinary(), ["ask", "--to", "codex", "--thread", pt.thread_id, "--prompt", "Is the notes change right?"], { cwd: proj, env, stdio: "pipe" });
    } finally {
      rmSync(proj, { recursive: true, force: true });
      rmSync(bin, { recursive: true, force: true });
    }
    await page.goto(`${d.url}/ui/#/t/${pt.thread_id}/events`);
    const timeline = page.getByTestId("timeline");
    const applied = timeline.locator("[data-testid=event][data-type='txn.applied']");
    await applied.waitFor();
    assert.match(await applied.innerText(), /update the notes/);
    await applied.getByTestId("txn-diff").locator("summary").click();
    await applied.locator("pre.udiff").getByText("+new line").waitFor();
    assert.match(await applied.locator("pre.udiff").innerText(), /-old line/);
    const asked = timeline.locator("[data-testid=event][data-type='ask.answered']");
    await asked.waitFor();
    assert.match(await asked.innerText(), /codex/);
    assert.match(await asked.innerText(), /Is the notes change right\?/);
    await shot("13-timeline-txn-ask");
    // A small diff and a short answer cost more as header + previews than pasted: said plainly.
    await page.getByTestId("tab-overview").click();
    await page.getByTestId("savings-honest").waitFor();
    assert.match(await page.getByTestId("savings-honest").innerText(), /relay cost \d+ more tokens than pasting/);
    assert.match(await page.getByTestId("card-avoided").innerText(), /^-\d/);
  });

  it("never asks for a token when the daemon has none", async () => {
    const open = await (await Daemon.create("")).start();
    const p2 = await ctx.newPage();
    try {
      await new RelayClient(open.url, { token: "" }).threadNew("no-auth-thread");
      await p2.goto(`${open.url}/ui/`);
      await p2.getByTestId("thread-row").filter({ hasText: "no-auth-thread" }).waitFor();
      assert.equal(await p2.getByTestId("token-dialog").isVisible(), false);
    } finally {
      await p2.close();
      await open.close();
    }
  });

  it("ran without console or page errors", () => {
    assert.deepEqual(problems, []);
  });
});
