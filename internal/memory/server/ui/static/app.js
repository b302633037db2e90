// relay web UI: threads, state, versions + diff, artifacts, live events, capabilities, savings.
// Hash routes: #/  #/t/<id>[/state|/versions[/<a>/<b>]|/artifacts[/<ref>]|/events|/caps]

import { APIError, api, follow, onTokenNeeded, saveToken, storedToken, takeSigninCode, tradeSigninCode } from "./api.js";
import { barChart, lineChart } from "./chart.js";
import { counts, diffLines, hunks } from "./diff.js";
import { append, clear, copyButton, fmtBytes, fmtNum, fmtTime, h, jsonView, relTime, shortId, shortRef, timeEl } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

const app = document.getElementById("app");
const liveEl = document.getElementById("live");
let stopFollow = null; // the current thread's event stream
let renderSeq = 0; // guards against a slow view overwriting a newer one

// -- token prompt ----------------------------------------------------------------------

onTokenNeeded((reason) => {
  const dlg = document.getElementById("token-dialog");
  const form = dlg.querySelector("form");
  const input = dlg.querySelector("input[name=token]");
  const remember = dlg.querySelector("input[name=remember]");
  const msg = dlg.querySelector(".reason");
  msg.textContent = reason || "";
  input.value = "";
  return new Promise((resolve) => {
    const done = (val) => {
      form.removeEventListener("submit", onSubmit);
      dlg.removeEventListener("cancel", onCancel);
      if (dlg.open) dlg.close();
      resolve(val);
    };
    const onSubmit = (e) => {
      e.preventDefault();
      done({ token: input.value.trim(), remember: remember.checked });
    };
    const onCancel = () => done(null);
    form.addEventListener("submit", onSubmit);
    dlg.addEventListener("cancel", onCancel);
    dlg.querySelector("[data-action=cancel]").onclick = () => done(null);
    dlg.showModal();
    input.focus();
  });
});

document.getElementById("forget-token").addEventListener("click", () => {
  saveToken("", false);
  toast("Token forgotten. You will be asked again when the daemon needs it.");
  updateTokenButton();
});

function updateTokenButton() {
  document.getElementById("forget-token").hidden = !storedToken();
}

function toast(text, kind = "info") {
  const t = h("div", { class: `toast ${kind}`, role: "status" }, text);
  document.getElementById("toasts").appendChild(t);
  setTimeout(() => t.remove(), 4000);
}

function setLive(state, msg = "") {
  liveEl.dataset.state = state;
  liveEl.title = msg || { live: "Receiving events live", reconnecting: "Connection lost; reconnecting…", error: "Event stream stopped", off: "" }[state] || "";
  liveEl.querySelector(".txt").textContent = { live: "live", reconnecting: "reconnecting", error: "stopped", off: "" }[state] || "";
}

// -- routing -----------------------------------------------------------------------------

function parseRoute() {
  const parts = location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "t" && parts[1]) return { view: "thread", id: parts[1], tab: parts[2] || "overview", args: parts.slice(3) };
  return { view: "threads" };
}

let current = { view: "" };

async function route() {
  const r = parseRoute();
  const seq = ++renderSeq;
  const sameThread = current.view === "thread" && r.view === "thread" && current.id === r.id;
  if (!sameThread && stopFollow) {
    stopFollow();
    stopFollow = null;
    setLive("off");
  }
  current = r;
  try {
    if (r.view === "thread") await threadView(r, seq, sameThread);
    else await threadsView(seq);
  } catch (e) {
    if (seq !== renderSeq) return;
    showError(e);
  }
}

function showError(e) {
  const status = e instanceof APIError ? e.status : 0;
  clear(app).appendChild(
    h(
      "div",
      { class: "empty error", "data-testid": "error" },
      h("h2", {}, status === 404 ? "Not found" : status === 401 ? "Token needed" : "Something went wrong"),
      h("p", {}, e.message || String(e)),
      status === 401 ? h("p", {}, h("button", { class: "btn primary", type: "button", onclick: () => route() }, "Enter token")) : null,
      status === 0 ? h("p", {}, h("button", { class: "btn", type: "button", onclick: () => route() }, "Retry")) : null,
      h("p", {}, h("a", { href: "#/" }, "← Back to threads")),
    ),
  );
}

window.addEventListener("hashchange", route);

// -- token savings ---------------------------------------------------------------------

let statsRoute = true; // false once the daemon says it has no /stats route (no report layer)

/**
 * savingsFor returns {naive, actual, avoided, src, ...} for a thread: the daemon's /stats when it
 * has them, else the bytes/4 estimate over what the API shows (naive = Σ artifact bytes / 4,
 * actual = header bytes / 4 + Σ preview bytes / 4).
 */
async function savingsFor(id, have = {}) {
  if (statsRoute) {
    try {
      const st = await api.stats(id);
      return { naive: st.naive_tokens, actual: st.actual_tokens, avoided: st.tokens_avoided, cacheHits: st.cache_hits, sessionHits: st.session_cache_hits, src: "daemon" };
    } catch (e) {
      if (!(e instanceof APIError && e.status === 404)) throw e;
      if (/no route/i.test(e.message)) statsRoute = false;
    }
  }
  const [header, arts] = await Promise.all([have.header ?? api.header(id), have.arts ?? api.artifacts(id)]);
  const bytes = (str) => new TextEncoder().encode(str).length;
  let naive = 0;
  let actual = Math.ceil(bytes(JSON.stringify(header)) / 4);
  for (const a of arts) {
    naive += Math.ceil((a.size || 0) / 4);
    actual += Math.ceil(bytes(a.preview?.text || "") / 4);
  }
  return { naive, actual, avoided: naive - actual, cacheHits: header.m?.hits ?? 0, src: "formula" };
}

// -- threads list ----------------------------------------------------------------------

let listFilter = ""; // survives re-renders of the thread list
let listTimer = null;
const LIST_POLL_MS = 10000;

const listSignature = (threads) => threads.map((t) => `${t.thread_id}:${t.version}:${t.artifact_count}:${t.name}`).join("|");

// pollList re-renders the list when threads change; it stops when another view renders.
function pollList(seq, sig) {
  clearTimeout(listTimer);
  listTimer = setTimeout(async () => {
    if (seq !== renderSeq) return;
    if (document.visibilityState !== "visible" || document.querySelector("dialog[open]")) return pollList(seq, sig);
    try {
      const next = listSignature(await api.threads());
      if (seq !== renderSeq) return;
      if (next !== sig) return route();
    } catch {
      /* daemon away for a moment: try again later */
    }
    pollList(seq, sig);
  }, LIST_POLL_MS);
}

async function threadsView(seq) {
  document.title = "Threads · relay";
  const threads = await api.threads();
  if (seq !== renderSeq) return;
  pollList(seq, listSignature(threads));
  const filter = h("input", { type: "search", placeholder: "Filter by name or id", class: "filter", "aria-label": "Filter threads", value: listFilter });
  const tbody = h("tbody");
  const chartBox = h("div", { class: "chart-box", "data-testid": "threads-chart" });
  const avoided = new Map();

  const rows = threads.map((t) => {
    const cell = h("td", { class: "num", "data-testid": "tokens-avoided" }, "…");
    const tr = h(
      "tr",
      { class: "clickable", "data-testid": "thread-row", "data-id": t.thread_id, tabindex: "0" },
      h("td", {}, h("a", { href: `#/t/${encodeURIComponent(t.thread_id)}`, class: "strong" }, t.name || "(unnamed)")),
      h("td", { class: "mono muted", title: t.thread_id }, shortId(t.thread_id)),
      h("td", {}, timeEl(t.created_at)),
      h("td", { class: "num" }, h("span", { class: "badge" }, t.state_ref || `v${t.version}`)),
      h("td", { class: "num" }, fmtNum(t.artifact_count)),
      cell,
    );
    const go = () => (location.hash = `#/t/${encodeURIComponent(t.thread_id)}`);
    tr.addEventListener("click", (e) => {
      if (!e.target.closest("a")) go();
    });
    tr.addEventListener("keydown", (e) => e.key === "Enter" && go());
    return { t, tr, cell };
  });
  append(tbody, rows.map((r) => r.tr));

  const applyFilter = () => {
    listFilter = filter.value;
    const q = filter.value.toLowerCase();
    for (const r of rows) r.tr.hidden = q && !`${r.t.name} ${r.t.thread_id}`.toLowerCase().includes(q);
  };
  filter.addEventListener("input", applyFilter);
  applyFilter();

  clear(app).appendChild(
    h(
      "section",
      { class: "page" },
      h("div", { class: "page-head" }, h("h1", {}, "Threads"), h("span", { class: "muted" }, `${threads.length} thread${threads.length === 1 ? "" : "s"}`), h("div", { class: "spacer" }), filter),
      threads.length
        ? h(
            "div",
            { class: "grid-2" },
            h(
              "div",
              { class: "card flush" },
              h(
                "table",
                { class: "table", "data-testid": "threads-table" },
                h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Thread"), h("th", {}, "Created"), h("th", { class: "num" }, "Version"), h("th", { class: "num" }, "Artifacts"), h("th", { class: "num" }, "Tokens avoided"))),
                tbody,
              ),
            ),
            h("div", { class: "card" }, h("h3", {}, "Tokens avoided by thread"), chartBox),
          )
        : h("div", { class: "empty" }, h("h2", {}, "No threads yet"), h("p", {}, "Create one with ", h("code", {}, 'relay thread new --name "my-run"'), " or an SDK's ", h("code", {}, "thread_new()"), ".")),
    ),
  );

  // Tokens avoided per thread, filled in as the figures arrive.
  const drawChart = () => {
    const top = rows
      .filter((r) => avoided.has(r.t.thread_id))
      .map((r) => ({ label: r.t.name || shortId(r.t.thread_id), value: avoided.get(r.t.thread_id), cls: "avoided", title: r.t.thread_id }))
      .sort((a, b) => b.value - a.value)
      .slice(0, 10);
    clear(chartBox).appendChild(top.length ? barChart(top, { title: "Tokens avoided by thread" }) : h("p", { class: "muted" }, "No savings recorded yet."));
  };
  const queue = rows.slice(0, 100);
  const worker = async () => {
    while (queue.length && seq === renderSeq) {
      const r = queue.shift();
      let n;
      try {
        n = (await savingsFor(r.t.thread_id)).avoided;
      } catch {
        n = undefined;
      }
      r.cell.textContent = n === undefined ? "–" : fmtNum(n);
      if (n !== undefined) avoided.set(r.t.thread_id, n);
    }
  };
  for (const r of rows.slice(100)) r.cell.textContent = "–";
  await Promise.all([worker(), worker(), worker(), worker()]);
  if (seq === renderSeq && threads.length) drawChart();
}

// -- thread page -----------------------------------------------------------------------

const TABS = [
  ["overview", "Overview"],
  ["state", "State"],
  ["versions", "Versions"],
  ["artifacts", "Artifacts"],
  ["events", "Events"],
  ["caps", "Capabilities"],
];

let threadCtx = null; // {id, thread, events: [], eventIds: Set, onEvent: fn}

async function threadView(r, seq, sameThread) {
  if (!sameThread || !threadCtx || threadCtx.id !== r.id) {
    const thread = await api.thread(r.id);
    if (seq !== renderSeq) return;
    threadCtx = { id: r.id, thread, events: [], eventIds: new Set(), listeners: new Set() };
    buildThreadShell(threadCtx);
    startFollowing(threadCtx);
    const ctx0 = threadCtx;
    savingsFor(r.id)
      .then((sv) => {
        ctx0.savings = sv;
        if (threadCtx === ctx0) renderCards(ctx0);
      })
      .catch(() => {});
  }
  const ctx = threadCtx;
  document.title = `${ctx.thread.name || shortId(ctx.id)} · relay`;
  for (const a of ctx.shell.tabs.querySelectorAll("a")) a.classList.toggle("active", a.dataset.tab === r.tab);
  ctx.listeners.clear();
  const body = ctx.shell.body;
  // Show "Loading…" only when a view is slow, so live refreshes do not flicker.
  const slow = setTimeout(() => seq === renderSeq && clear(body).appendChild(h("div", { class: "loading" }, "Loading…")), sameThread ? 400 : 0);
  const view = { overview: overviewTab, state: stateTab, versions: versionsTab, artifacts: artifactsTab, events: eventsTab, caps: capsTab }[r.tab] || overviewTab;
  let el;
  try {
    el = await view(ctx, r, seq);
  } finally {
    clearTimeout(slow);
  }
  if (seq !== renderSeq || !el) return;
  const y = window.scrollY;
  clear(body).appendChild(el);
  if (sameThread) window.scrollTo(0, y);
}

function buildThreadShell(ctx) {
  const t = ctx.thread;
  const tabs = h(
    "nav",
    { class: "tabs", "aria-label": "Thread sections" },
    TABS.map(([key, label]) => h("a", { href: `#/t/${encodeURIComponent(ctx.id)}/${key}`, "data-tab": key, "data-testid": `tab-${key}` }, label)),
  );
  const cards = h("div", { class: "cards" });
  const body = h("div", { class: "tab-body" });
  const badge = h("span", { class: "badge big", "data-testid": "state-ref" }, t.state_ref);
  ctx.shell = { tabs, cards, body, badge };
  clear(app).appendChild(
    h(
      "section",
      { class: "page" },
      h("nav", { class: "crumbs" }, h("a", { href: "#/" }, "Threads"), " / ", h("span", {}, t.name || shortId(t.thread_id))),
      h(
        "div",
        { class: "page-head" },
        h("h1", { "data-testid": "thread-name" }, t.name || "(unnamed thread)"),
        badge,
        h("div", { class: "spacer" }),
        h("span", { class: "mono muted small" }, t.thread_id),
        copyButton(t.thread_id, "copy id"),
      ),
      h("p", { class: "muted small" }, "Created ", timeEl(t.created_at), " · updated ", timeEl(t.updated_at)),
      cards,
      tabs,
      body,
    ),
  );
  renderCards(ctx);
}

function renderCards(ctx) {
  const t = ctx.thread;
  const m = t.header?.m || {};
  const sv = ctx.savings;
  const card = (label, value, testid, hint) => h("div", { class: "stat", "data-testid": testid, title: hint || "" }, h("div", { class: "stat-value" }, value), h("div", { class: "stat-label" }, label));
  clear(ctx.shell.cards).append(
    card("State version", t.state_ref || `v${t.version}`, "card-version"),
    card("Artifacts", fmtNum(t.artifact_count), "card-artifacts"),
    card("Events", fmtNum(t.event_count), "card-events"),
    card("Tokens avoided", sv ? fmtNum(sv.avoided) : "…", "card-avoided", "naive tokens (content pasted) minus actual tokens (header + previews)"),
    card("Cache hits", fmtNum(sv?.cacheHits ?? m.hits ?? 0), "card-cache"),
  );
  ctx.shell.badge.textContent = t.state_ref || `v${t.version}`;
}

async function refreshThread(ctx) {
  try {
    const t = await api.thread(ctx.id);
    if (threadCtx !== ctx) return;
    ctx.thread = t;
    ctx.savings = await savingsFor(ctx.id).catch(() => ctx.savings);
    renderCards(ctx);
  } catch {
    /* keep the last known figures */
  }
}

const MAX_EVENTS = 2000; // newest events kept for the timeline; older ones stay in the API

function startFollowing(ctx) {
  let refreshTimer = null;
  stopFollow = follow(
    ctx.id,
    0,
    (ev) => {
      if (ctx.eventIds.has(ev.id)) return;
      ctx.eventIds.add(ev.id);
      ctx.events.push(ev);
      if (ctx.events.length > 2 * MAX_EVENTS) ctx.events.splice(0, ctx.events.length - MAX_EVENTS); // amortized trim
      for (const fn of ctx.listeners) fn(ev);
      // Coalesce bursts of events into one refresh of the figures and of views that show them.
      if (ctx.caughtUp) {
        clearTimeout(refreshTimer);
        refreshTimer = setTimeout(async () => {
          await refreshThread(ctx);
          const r = current;
          const auto = r.view === "thread" && r.id === ctx.id && (r.tab === "overview" || ((r.tab === "versions" || r.tab === "artifacts") && !r.args.length));
          if (auto && threadCtx === ctx && !document.querySelector("dialog[open]")) route();
        }, 300);
      }
    },
    (state, msg) => {
      setLive(state, msg);
      if (state === "live") setTimeout(() => (ctx.caughtUp = true), 300);
    },
  );
}

// -- overview ----------------------------------------------------------------------------

async function overviewTab(ctx, r, seq) {
  const [header, arts] = await Promise.all([api.header(ctx.id), api.artifacts(ctx.id)]);
  const savings = await savingsFor(ctx.id, { header, arts });
  if (seq !== renderSeq) return null;
  ctx.savings = savings;
  renderCards(ctx);
  const list = (title, items, fmt, testid) =>
    h("div", { class: "card", "data-testid": testid }, h("h3", {}, title, h("span", { class: "count" }, String(items?.length || 0))), items?.length ? h("ul", { class: "items" }, items.map((it) => h("li", {}, fmt(it)))) : h("p", { class: "muted" }, "None."));
  const valueText = (v) => (typeof v === "string" ? v : JSON.stringify(v));
  const refLink = (ref, label) => h("a", { href: `#/t/${encodeURIComponent(ctx.id)}/artifacts/${encodeURIComponent(ref)}`, class: "mono", title: ref }, label || shortRef(ref));

  return h(
    "div",
    { class: "overview" },
    header.cut ? h("div", { class: "notice" }, "The header hit its 2 KB cap; dropped: ", Object.entries(header.cut).map(([k, v]) => `${v} ${k}`).join(", "), ". The full state has everything.") : null,
    h(
      "div",
      { class: "grid-3" },
      list("Facts", header.facts, (f) => [h("span", { class: "key" }, f.key || f.id), " ", h("span", {}, valueText(f.value ?? ""))], "hdr-facts"),
      list("Constraints", header.constraints, (c) => [c.severity ? h("span", { class: `pill ${c.severity}` }, c.severity) : null, " ", c.description || c.id], "hdr-constraints"),
      list("Open questions", header.questions, (q) => q.question || q.id, "hdr-questions"),
      list("Next steps", header.next, (p) => p.step || p.id, "hdr-steps"),
      list("Artifact refs", header.refs, (a) => {
        // The header names an artifact as "<short ref> <name>" (fewest tokens for agents).
        const [ref, ...name] = typeof a === "string" ? a.split(" ") : [a.ref, a.name || ""];
        return [refLink(ref, ref), " ", name.join(" ")];
      }, "hdr-artifacts"),
      list("Last actions", header.actions, (a) => [timeEl(a.at), " ", a.description || "", a.result_ref ? [" → ", refLink(a.result_ref)] : null], "hdr-actions"),
    ),
    savingsCard(header, arts, savings),
    h("details", { class: "card" }, h("summary", {}, "State header as agents receive it (", fmtBytes(new TextEncoder().encode(JSON.stringify(header)).length), ")"), jsonView(header)),
  );
}

function savingsCard(header, arts, fig) {
  // The cumulative view always uses the bytes/4 estimate: it is the only per-artifact series.
  const bytes = (str) => new TextEncoder().encode(str).length;
  let naive = 0;
  let actual = Math.ceil(bytes(JSON.stringify(header)) / 4);
  const cumNaive = [];
  const cumActual = [];
  for (const a of arts) {
    naive += Math.ceil((a.size || 0) / 4);
    actual += Math.ceil(bytes(a.preview?.text || "") / 4);
    cumNaive.push(naive);
    cumActual.push(actual);
  }
  const pct = fig.naive > 0 ? Math.round((fig.avoided / fig.naive) * 100) : 0;
  const label = (a) => (a.name || shortRef(a.ref)).slice(0, 24);
  return h(
    "div",
    { class: "card", "data-testid": "savings" },
    h("h3", {}, "Token savings", h("span", { class: "muted small" }, fig.src === "daemon" ? "from relay stats" : "seed formula: bytes ÷ 4")),
    h(
      "div",
      { class: "grid-2 even" },
      h(
        "div",
        {},
        h("p", { class: "big-figure" }, fmtNum(fig.avoided), h("span", { class: "muted" }, ` tokens avoided (${pct}% of ${fmtNum(fig.naive)})`)),
        fig.avoided < 0
          ? h("p", { class: "notice", "data-testid": "savings-honest" }, `relay cost ${fmtNum(-fig.avoided)} more tokens than pasting here: this thread's artifacts are small, so their previews are the whole content and the header comes on top.`)
          : null,
        barChart(
          [
            { label: "Naive (content pasted)", value: fig.naive, cls: "naive" },
            { label: "Actual (header + refs)", value: fig.actual, cls: "actual" },
            { label: "Avoided", value: fig.avoided, cls: "avoided" },
          ],
          { title: "Token savings" },
        ),
        fig.src === "daemon" ? h("p", { class: "muted small" }, `Cache hits ${fmtNum(fig.cacheHits)} · session cache hits ${fmtNum(fig.sessionHits)}`) : null,
      ),
      arts.length > 1
        ? h(
            "div",
            {},
            h("h4", {}, `Cumulative tokens over ${arts.length} artifacts`),
            lineChart(
              [
                { name: "naive tokens", cls: "naive", points: cumNaive },
                { name: "actual tokens", cls: "actual", points: cumActual },
              ],
              { title: "Cumulative tokens", xLabels: [label(arts[0]), label(arts[arts.length - 1])] },
            ),
            h("div", { class: "legend" }, h("span", { class: "sw naive" }), "naive ", h("span", { class: "sw actual" }), "actual"),
          )
        : h("p", { class: "muted" }, "The cumulative chart appears once the thread has two artifacts."),
    ),
  );
}

// -- full state ----------------------------------------------------------------------------

async function stateTab(ctx, r, seq) {
  const want = r.args[0] ? Number(r.args[0]) : undefined;
  const state = await api.state(ctx.id, want);
  if (seq !== renderSeq) return null;
  const latest = ctx.thread.version;
  const sel = h("select", { "aria-label": "Version", "data-testid": "state-version" });
  for (let v = latest; v >= 1 && v > latest - 500; v--) sel.appendChild(h("option", { value: v, selected: v === state.version }, `v${v}${v === latest ? " (latest)" : ""}`));
  sel.addEventListener("change", () => (location.hash = `#/t/${encodeURIComponent(ctx.id)}/state/${sel.value}`));
  const text = JSON.stringify(state, null, 2);
  return h(
    "div",
    { class: "card" },
    h("div", { class: "card-head" }, h("h3", {}, "Full state at ", h("span", { class: "badge" }, `v${state.version}`)), h("div", { class: "spacer" }), sel, copyButton(text, "copy JSON")),
    h("p", { class: "muted small" }, `${fmtBytes(new TextEncoder().encode(text).length)} · updated ${fmtTime(state.updated_at)}`),
    jsonView(text, { "data-testid": "state-json" }),
  );
}

// -- versions and diff ---------------------------------------------------------------------

async function versionsTab(ctx, r, seq) {
  const hist = await api.versions(ctx.id);
  if (seq !== renderSeq) return null;
  const versions = hist.versions || [];
  const cur = hist.current_version || versions.length;
  let a = Number(r.args[0]);
  let b = Number(r.args[1]);
  if (!(b >= 1 && b <= cur)) b = cur;
  if (!(a >= 1 && a <= cur)) a = Math.max(1, b - 1);

  const go = (na, nb) => (location.hash = `#/t/${encodeURIComponent(ctx.id)}/versions/${na}/${nb}`);
  const rows = versions
    .slice()
    .reverse()
    .map((v) =>
      h(
        "tr",
        { class: v.version === a || v.version === b ? "selected" : "", "data-testid": "version-row", "data-version": v.version },
        h("td", {}, h("input", { type: "radio", name: "va", checked: v.version === a, "aria-label": `compare from v${v.version}`, "data-testid": `va-${v.version}`, onchange: () => go(v.version, b) })),
        h("td", {}, h("input", { type: "radio", name: "vb", checked: v.version === b, "aria-label": `compare to v${v.version}`, "data-testid": `vb-${v.version}`, onchange: () => go(a, v.version) })),
        h("td", {}, h("a", { href: `#/t/${encodeURIComponent(ctx.id)}/state/${v.version}`, class: "badge" }, v.state_ref || `v${v.version}`)),
        h("td", {}, timeEl(v.created_at)),
        h("td", {}, v.author || h("span", { class: "muted" }, "–")),
        h("td", { class: "patch-summary" }, summarizePatch(v.patch)),
      ),
    );

  const [sa, sb] = await Promise.all([api.state(ctx.id, a), api.state(ctx.id, b)]);
  if (seq !== renderSeq) return null;
  const edits = diffLines(JSON.stringify(sa, null, 2) + "\n", JSON.stringify(sb, null, 2) + "\n");
  const { added, removed } = counts(edits);
  const swap = h("button", { class: "btn small", type: "button", onclick: () => go(b, a) }, "swap");

  return h(
    "div",
    { class: "versions" },
    h(
      "div",
      { class: "card flush" },
      h(
        "table",
        { class: "table", "data-testid": "versions-table" },
        h("thead", {}, h("tr", {}, h("th", { title: "from" }, "A"), h("th", { title: "to" }, "B"), h("th", {}, "Version"), h("th", {}, "Created"), h("th", {}, "Author"), h("th", {}, "Patch"))),
        h("tbody", {}, rows),
      ),
    ),
    h(
      "div",
      { class: "card", "data-testid": "diff" },
      h(
        "div",
        { class: "card-head" },
        h("h3", {}, "Diff ", h("span", { class: "badge" }, `v${a}`), " → ", h("span", { class: "badge" }, `v${b}`)),
        h("span", { class: "diffstat" }, h("span", { class: "add" }, `+${added}`), " ", h("span", { class: "del" }, `−${removed}`)),
        h("div", { class: "spacer" }),
        swap,
      ),
      diffView(edits),
    ),
  );
}

function summarizePatch(patch) {
  if (!Array.isArray(patch) || !patch.length) return h("span", { class: "muted" }, "thread created");
  const shown = patch.slice(0, 3).map((op) => h("div", { class: "op" }, h("span", { class: `pill op-${op.op}` }, op.op), " ", h("code", {}, op.path || ""), op.from ? [" ← ", h("code", {}, op.from)] : null));
  if (patch.length > 3) shown.push(h("div", { class: "muted small" }, `+${patch.length - 3} more`));
  return shown;
}

const MAX_DIFF_ROWS = 4000; // more rows than anyone reads, and the DOM stays fast

function diffView(edits) {
  const hs = hunks(edits, 3);
  if (!hs.length) return h("p", { class: "muted", "data-testid": "diff-empty" }, "No differences.");
  const table = h("table", { class: "diff" });
  let rows = 0;
  let hidden = 0;
  for (const hk of hs) {
    if (rows >= MAX_DIFF_ROWS) {
      hidden += hk.lines.length;
      continue;
    }
    rows += hk.lines.length + 1;
    table.appendChild(h("tr", { class: "hunk" }, h("td", { colspan: 3 }, `@@ -${hk.aStart},${hk.aLen} +${hk.bStart},${hk.bLen} @@`)));
    for (const l of hk.lines) {
      table.appendChild(
        h(
          "tr",
          { class: l.op === "+" ? "add" : l.op === "-" ? "del" : "ctx" },
          h("td", { class: "ln" }, l.a || ""),
          h("td", { class: "ln" }, l.b || ""),
          h("td", { class: "code" }, h("span", { class: "sign" }, l.op === " " ? " " : l.op === "-" ? "−" : "+"), l.text),
        ),
      );
    }
  }
  return h(
    "div",
    {},
    edits.approximate ? h("p", { class: "notice" }, "These versions differ too much to align line by line; the changed region is shown as removed, then added.") : null,
    h("div", { class: "diff-wrap" }, table),
    hidden ? h("p", { class: "muted small" }, `${fmtNum(hidden)} more diff lines not shown; compare closer versions, or fetch both with relay state get --version N.`) : null,
  );
}

// -- artifacts -----------------------------------------------------------------------------

async function artifactsTab(ctx, r, seq) {
  const arts = await api.artifacts(ctx.id);
  if (seq !== renderSeq) return null;
  const sel = r.args[0];
  const list = h(
    "div",
    { class: "card flush artifact-list", "data-testid": "artifact-list" },
    arts.length
      ? h(
          "ul",
          { class: "alist" },
          arts
            .slice()
            .reverse()
            .map((a) =>
              h(
                "li",
                { class: a.ref === sel ? "active" : "" },
                h(
                  "a",
                  { href: `#/t/${encodeURIComponent(ctx.id)}/artifacts/${encodeURIComponent(a.ref)}`, "data-testid": "artifact-link", "data-ref": a.ref },
                  h("span", { class: "aname" }, a.name || a.ref),
                  h("span", { class: "ameta" }, h("span", { class: `pill t-${a.type}` }, a.type), " ", fmtBytes(a.size), " · ", relTime(a.created_at)),
                ),
              ),
            ),
        )
      : h("p", { class: "muted pad" }, "No artifacts yet."),
  );
  let detail;
  if (sel) detail = await artifactDetail(ctx, sel, seq);
  else detail = h("div", { class: "card empty small" }, arts.length ? "Select an artifact to preview it." : h("span", {}, "Store one with ", h("code", {}, "relay artifact put FILE --thread ID")));
  if (seq !== renderSeq) return null;
  return h("div", { class: "split" }, list, detail);
}

const PREVIEW_LIMIT = 2 * 1024 * 1024; // larger artifacts show the daemon's preview only

async function artifactDetail(ctx, ref, seq) {
  const a = await api.artifact(ctx.id, ref);
  if (seq !== renderSeq) return null;
  const textual = a.type !== "binary" && !/^\[binary/.test(a.preview?.text || "");
  let content = null;
  let note = "";
  if (textual && a.size <= PREVIEW_LIMIT) {
    const res = await api.artifactRaw(ctx.id, ref);
    const bytes = new Uint8Array(await res.arrayBuffer());
    try {
      content = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    } catch {
      content = null;
      note = "Not valid UTF-8; shown as binary.";
    }
  } else if (textual) {
    note = `Large artifact (${fmtBytes(a.size)}): showing the daemon's ${fmtBytes(a.preview?.text?.length || 0)} preview. Download for the full content.`;
  }
  if (seq !== renderSeq) return null;

  const body = h("div", { class: "preview", "data-testid": "artifact-preview" });
  const shown = content ?? (textual ? a.preview?.text || "" : null);
  let mode = a.type === "markdown" ? "rendered" : "source";
  const draw = () => {
    clear(body);
    if (shown === null) {
      body.appendChild(h("div", { class: "binary" }, h("div", { class: "big-figure" }, fmtBytes(a.size)), h("p", {}, "Binary content · ", h("code", {}, a.mime || "application/octet-stream")), h("p", { class: "muted small" }, "No preview for binary data. Use Download.")));
    } else if (a.type === "markdown" && mode === "rendered") {
      body.appendChild(h("div", { class: "markdown", "data-testid": "markdown" }, renderMarkdown(shown)));
    } else if (a.type === "json") {
      let pretty = shown;
      try {
        pretty = JSON.stringify(JSON.parse(shown), null, 2);
      } catch {
        /* not complete JSON (e.g. a truncated preview): show as is */
      }
      body.appendChild(jsonView(pretty, { "data-testid": "json" }));
    } else {
      body.appendChild(h("pre", { class: "source" }, shown));
    }
  };
  draw();
  const toggle =
    a.type === "markdown" && shown !== null
      ? h(
          "div",
          { class: "seg" },
          ["rendered", "source"].map((m) =>
            h(
              "button",
              {
                type: "button",
                class: `btn small ${mode === m ? "on" : ""}`,
                onclick: (e) => {
                  mode = m;
                  for (const b of e.target.parentNode.children) b.classList.toggle("on", b === e.target);
                  draw();
                },
              },
              m,
            ),
          ),
        )
      : null;
  const download = h("button", { class: "btn primary small", type: "button", "data-testid": "download" }, "Download");
  download.addEventListener("click", () => downloadArtifact(ctx.id, a));
  const p = a.provenance || {};
  return h(
    "div",
    { class: "card artifact-detail" },
    h("div", { class: "card-head" }, h("h3", { "data-testid": "artifact-name" }, a.name || a.ref), h("span", { class: `pill t-${a.type}` }, a.type), h("div", { class: "spacer" }), toggle, download),
    h(
      "dl",
      { class: "meta" },
      h("dt", {}, "ref"),
      h("dd", {}, h("code", {}, a.ref), " ", copyButton(a.ref)),
      h("dt", {}, "size"),
      h("dd", {}, `${fmtBytes(a.size)} (${fmtNum(a.size)} bytes)`, a.preview?.line_count ? ` · ${fmtNum(a.preview.line_count)} lines` : ""),
      h("dt", {}, "mime"),
      h("dd", {}, a.mime || "–"),
      h("dt", {}, "sha256"),
      h("dd", { class: "mono small break" }, a.hash || "–"),
      h("dt", {}, "created"),
      h("dd", {}, fmtTime(a.created_at), p.created_by ? ` by ${p.created_by}` : "", p.capability ? ` via ${p.capability}` : ""),
      p.source_refs?.length ? [h("dt", {}, "sources"), h("dd", {}, p.source_refs.map((s) => [h("a", { href: `#/t/${encodeURIComponent(ctx.id)}/artifacts/${encodeURIComponent(s)}`, class: "mono", title: s }, shortRef(s)), " "]))] : null,
    ),
    note ? h("p", { class: "notice" }, note) : null,
    body,
  );
}

async function downloadArtifact(threadId, a) {
  try {
    const res = await api.artifactRaw(threadId, a.ref);
    // application/octet-stream: the browser saves the file and never renders it in this origin.
    const blob = new Blob([await res.arrayBuffer()], { type: "application/octet-stream" });
    const url = URL.createObjectURL(blob);
    const link = h("a", { href: url, download: a.name || a.ref });
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (e) {
    toast(`Download failed: ${e.message}`, "error");
  }
}

// -- events --------------------------------------------------------------------------------

function eventSummary(ev, ctxId) {
  const d = ev.data || {};
  const ref = (r) => h("a", { href: `#/t/${encodeURIComponent(ctxId)}/artifacts/${encodeURIComponent(r)}`, class: "mono", title: r }, shortRef(r));
  switch (ev.type) {
    case "thread.created":
      return ["thread created", d.name ? [" as ", h("strong", {}, d.name)] : ""];
    case "state.patched":
      return ["state → ", h("span", { class: "badge" }, `v${d.version}`), ` (${d.ops ?? "?"} op${d.ops === 1 ? "" : "s"})`, d.author ? ` by ${d.author}` : ""];
    case "artifact.stored":
      return ["stored ", h("strong", {}, d.name || "artifact"), ` (${d.type || "?"}, ${fmtBytes(d.size)}) `, d.ref ? ref(d.ref) : ""];
    case "cap.invoked":
    case "cap.cache_hit":
      return [
        h("strong", {}, d.capability || "capability"),
        d.cached || ev.type === "cap.cache_hit" ? h("span", { class: "pill cached" }, "cached") : "",
        d.artifact_ref ? [" → ", ref(d.artifact_ref)] : "",
        typeof d.duration_ms === "number" ? h("span", { class: "muted small" }, ` ${d.duration_ms} ms`) : "",
      ];
    case "a2a.received":
      return ["A2A ", h("strong", {}, d.type || "message"), d.from ? ` from ${d.from}` : "", d.to_capability ? [" to ", h("strong", {}, d.to_capability)] : "", typeof d.payload_bytes === "number" ? ` (${fmtBytes(d.payload_bytes)})` : ""];
    case "txn.applied":
    case "txn.reverted": {
      const files = Array.isArray(d.files) ? d.files : [];
      return [
        h("strong", {}, ev.type === "txn.reverted" ? "reverted" : "applied"),
        " ",
        d.summary || d.git_commit_msg || shortId(d.uuid || ""),
        " ",
        h("span", { class: "diffstat" }, `${files.length} file${files.length === 1 ? "" : "s"} `, h("span", { class: "add" }, `+${d.added ?? 0}`), " ", h("span", { class: "del" }, `−${d.removed ?? 0}`)),
        d.diff_ref ? [" ", txnDiff(ctxId, d.diff_ref)] : "",
      ];
    }
    case "txn.rolled_back":
      return [h("strong", {}, "rolled back"), " ", shortId(d.uuid || ""), d.step ? ` at ${d.step}` : "", d.error ? h("span", { class: "muted" }, `: ${d.error}`) : ""];
    case "txn.git_committed":
      return [h("strong", {}, "committed to git"), " ", d.message || shortId(d.uuid || "")];
    case "ask.answered":
      return [h("strong", {}, "asked "), h("strong", {}, d.backend || "a friend"), d.prompt ? h("span", { class: "muted" }, ` “${d.prompt}”`) : "", d.answer_ref ? [" → answer ", ref(d.answer_ref)] : ""];
    case "ask.failed":
      return [h("strong", {}, "asked "), h("strong", {}, d.backend || "a friend"), ": failed", d.failure ? ` (${d.failure})` : "", d.error ? h("span", { class: "muted" }, `: ${d.error}`) : ""];
    case "report.generated":
      return ["report generated", d.format ? ` (${d.format}${typeof d.size === "number" ? ", " + fmtBytes(d.size) : ""})` : "", d.artifact_ref ? [" → ", ref(d.artifact_ref)] : ""];
    default: {
      const s = JSON.stringify(d);
      return h("code", { class: "muted" }, s.length > 160 ? s.slice(0, 160) + "…" : s);
    }
  }
}

/** txnDiff is a transaction's diff, fetched from its artifact when opened. */
function txnDiff(ctxId, diffRef) {
  const body = h("div", { class: "diff-wrap" }, h("p", { class: "muted small" }, "Loading…"));
  const det = h("details", { class: "txn-diff", "data-testid": "txn-diff" }, h("summary", {}, "diff ", h("span", { class: "mono muted" }, shortRef(diffRef))), body);
  let loaded = false;
  det.addEventListener("toggle", async () => {
    if (!det.open || loaded) return;
    loaded = true;
    try {
      const res = await api.artifactRaw(ctxId, diffRef);
      const text = await res.text();
      const pre = h("pre", { class: "udiff" });
      for (const line of text.split("\n")) {
        const cls = line.startsWith("+++") || line.startsWith("---") ? "file" : line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
        pre.appendChild(h("span", { class: `l ${cls}` }, line + "\n"));
      }
      clear(body).append(pre);
    } catch (e) {
      clear(body).append(h("p", { class: "error" }, `Cannot load the diff: ${e.message}`));
    }
  });
  return det;
}

function eventRow(ev, ctxId, fresh) {
  return h(
    "li",
    { class: `event ${fresh ? "fresh" : ""}`, "data-testid": "event", "data-type": ev.type, "data-id": ev.id, "data-seq": ev.seq },
    // Numbered within the thread (seq); ids are store-wide, so #33 could follow #14.
    h("span", { class: "eid mono muted", title: `event id ${ev.id}` }, `#${ev.seq ?? ev.id}`),
    h("span", { class: `etype t-${ev.type.replace(/\W/g, "-")}` }, ev.type),
    h("span", { class: "esum" }, eventSummary(ev, ctxId)),
    h("span", { class: "etime muted" }, timeEl(ev.at)),
    h("details", { class: "edata" }, h("summary", { title: "event JSON" }, "{}"), jsonView(ev)),
  );
}

async function eventsTab(ctx, r, seq) {
  // Events arrive through the live stream (which replays history first); wait briefly for it.
  for (let i = 0; i < 20 && !ctx.caughtUp && seq === renderSeq; i++) await new Promise((res) => setTimeout(res, 50));
  const types = h("select", { "aria-label": "Filter by type" }, h("option", { value: "" }, "all types"));
  const known = new Set();
  const addType = (t) => {
    if (known.has(t)) return;
    known.add(t);
    types.appendChild(h("option", { value: t }, t));
  };
  const ul = h("ul", { class: "timeline", "data-testid": "timeline" });
  const visible = (ev) => !types.value || ev.type === types.value;
  for (const ev of ctx.events.slice(-MAX_EVENTS).reverse()) {
    addType(ev.type);
    const row = eventRow(ev, ctx.id, false);
    row.hidden = !visible(ev);
    ul.appendChild(row);
  }
  types.addEventListener("change", () => {
    for (const li of ul.children) li.hidden = !!types.value && li.dataset.type !== types.value;
  });
  const empty = h("p", { class: "muted", hidden: ctx.events.length > 0 }, "No events yet. They appear here live.");
  const older = (ctx.thread.event_count || 0) - MAX_EVENTS;
  const olderNote = ctx.events.length >= MAX_EVENTS && older > 0 ? h("p", { class: "muted small" }, `Showing the newest ${fmtNum(MAX_EVENTS)} events; ${fmtNum(older)} older ones are in relay tail and GET /threads/{id}/events.`) : null;
  ctx.listeners.add((ev) => {
    addType(ev.type);
    const row = eventRow(ev, ctx.id, true);
    row.hidden = !visible(ev);
    ul.insertBefore(row, ul.firstChild);
    while (ul.children.length > MAX_EVENTS) ul.lastChild.remove();
    empty.hidden = true;
  });
  return h("div", { class: "card" }, h("div", { class: "card-head" }, h("h3", {}, "Events"), h("span", { class: "muted small" }, "newest first · updates live"), h("div", { class: "spacer" }), types), empty, ul, olderNote);
}

// -- capabilities ------------------------------------------------------------------------

async function capsTab(ctx, r, seq) {
  let caps = [];
  let capsErr = "";
  try {
    caps = await api.caps();
  } catch (e) {
    capsErr = e.status === 404 ? "This daemon has no capabilities layer." : e.message;
  }
  for (let i = 0; i < 20 && !ctx.caughtUp && seq === renderSeq; i++) await new Promise((res) => setTimeout(res, 50));
  if (seq !== renderSeq) return null;

  const calls = h("ul", { class: "timeline", "data-testid": "cap-calls" });
  const isCap = (ev) => ev.type.startsWith("cap.") || ev.type === "a2a.received";
  const row = (ev, fresh) => eventRow(ev, ctx.id, fresh);
  for (const ev of ctx.events.filter(isCap).reverse()) calls.appendChild(row(ev, false));
  const none = h("p", { class: "muted", hidden: calls.children.length > 0 }, "No capability calls in this thread yet.");
  ctx.listeners.add((ev) => {
    if (!isCap(ev)) return;
    calls.insertBefore(row(ev, true), calls.firstChild);
    none.hidden = true;
  });

  // Invoke form: a same-origin POST carrying the bearer token (the daemon refuses cross-site ones).
  const sel = h("select", { name: "cap", "aria-label": "Capability", "data-testid": "cap-select" }, caps.map((c) => h("option", { value: c.name }, c.name)));
  const args = h("textarea", { name: "args", rows: 4, spellcheck: "false", class: "mono", "aria-label": "Arguments (JSON)", "data-testid": "cap-args" }, '{"query": ""}');
  const desc = h("p", { class: "muted small" });
  const schema = h("details", {}, h("summary", {}, "argument schema"));
  const out = h("div", { "data-testid": "cap-result" });
  let argsTouched = false;
  args.addEventListener("input", () => (argsTouched = true));
  const showCap = () => {
    const c = caps.find((x) => x.name === sel.value);
    if (c && !argsTouched) args.value = JSON.stringify(exampleArgs(c.args_schema), null, 1).replace(/\n\s*/g, " ");
    desc.textContent = c ? `${c.description || ""}${c.cacheable ? ` · cached for ${c.cache_ttl_sec}s` : ""}` : "";
    clear(schema).append(h("summary", {}, "argument schema"), c ? jsonView(c.args_schema ?? {}) : "");
  };
  sel.addEventListener("change", showCap);
  showCap();
  const form = h(
    "form",
    { class: "invoke" },
    h("label", {}, "Capability ", sel),
    desc,
    h("label", {}, "Arguments (JSON)", args),
    schema,
    h("div", {}, h("button", { class: "btn primary", type: "submit", "data-testid": "cap-invoke" }, "Invoke")),
    out,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    let parsed;
    try {
      parsed = JSON.parse(args.value || "{}");
    } catch (err) {
      clear(out).appendChild(h("p", { class: "notice error" }, `Arguments are not valid JSON: ${err.message}`));
      return;
    }
    clear(out).appendChild(h("p", { class: "muted" }, "Invoking…"));
    try {
      const res = await api.invoke(ctx.id, sel.value, parsed);
      clear(out).append(
        h("p", {}, res.cached ? h("span", { class: "pill cached" }, "cached") : h("span", { class: "pill" }, "ran"), " full result: ", res.artifact_ref ? h("a", { href: `#/t/${encodeURIComponent(ctx.id)}/artifacts/${encodeURIComponent(res.artifact_ref)}`, class: "mono" }, res.artifact_ref) : "–"),
        jsonView(res.preview ?? {}),
      );
    } catch (err) {
      clear(out).appendChild(h("p", { class: "notice error" }, err.message));
    }
  });

  return h(
    "div",
    { class: "grid-2" },
    h("div", { class: "card" }, h("h3", {}, "Capability calls"), none, calls),
    h("div", { class: "card" }, h("h3", {}, "Invoke"), capsErr ? h("p", { class: "muted" }, capsErr) : caps.length ? form : h("p", { class: "muted" }, "No capabilities registered.")),
  );
}

/** exampleArgs makes a starting value for a JSON Schema: its required properties with defaults. */
function exampleArgs(schema, depth = 0) {
  if (!schema || typeof schema !== "object" || depth > 4) return {};
  if ("default" in schema) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "object": {
      const out = {};
      const props = schema.properties || {};
      const req = Array.isArray(schema.required) && schema.required.length ? schema.required : Object.keys(props).slice(0, 1);
      for (const k of req) out[k] = exampleArgs(props[k], depth + 1);
      return out;
    }
    case "array":
      return [];
    case "string":
      return "";
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 0;
    case "boolean":
      return false;
    default:
      return schema.properties ? exampleArgs({ ...schema, type: "object" }, depth) : {};
  }
}

// -- start ---------------------------------------------------------------------------------

// Relative times ("12s ago") stay true while the page is open.
setInterval(() => {
  for (const t of document.querySelectorAll("time[datetime]")) t.textContent = relTime(t.getAttribute("datetime"));
}, 15000);

// A link from `relay open` carries a one-time code: trade it for the token before the first call.
async function signIn() {
  const code = takeSigninCode();
  if (!code) return;
  try {
    await tradeSigninCode(code);
    toast("Signed in from relay open.");
  } catch (e) {
    toast(`Sign-in link refused: ${e.message}`, "error");
  }
}

await signIn();
updateTokenButton();
api
  .version()
  .then((v) => (document.getElementById("version").textContent = /^\d/.test(v.version) ? `v${v.version}` : String(v.version)))
  .catch(() => {})
  .finally(updateTokenButton);
route();
